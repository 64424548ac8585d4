"""PX4 flight logs (ULog) through pyulog.

:class:`UlogSource` makes one time-series sensor per logged topic;
:func:`read_ulog` is its reader (topics as structured arrays, dropouts, the
GPS anchor) for a summary or a test. pyulog loads only when a log is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.ulog._log import Dropout, Topic, UlogContent, looks_like_ulog, read_ulog
    from adapters.ulog._source import UlogSource, ulog_sensor


__all__ = [
    "Dropout",
    "Topic",
    "UlogContent",
    "UlogSource",
    "looks_like_ulog",
    "read_ulog",
    "ulog_sensor",
]

_HOMES = {
    "Dropout": "adapters.ulog._log",
    "Topic": "adapters.ulog._log",
    "UlogContent": "adapters.ulog._log",
    "UlogSource": "adapters.ulog._source",
    "looks_like_ulog": "adapters.ulog._log",
    "read_ulog": "adapters.ulog._log",
    "ulog_sensor": "adapters.ulog._source",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
