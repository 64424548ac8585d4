"""PX4 flight logs (ULog) through pyulog.

:class:`UlogSource` makes one time-series sensor per logged topic;
:func:`read_ulog` is its reader (topics as structured arrays, dropouts, the
GPS anchor) for a summary or a test. pyulog loads only when a log is read.
"""

from adapters.ulog._log import Dropout, Topic, UlogContent, looks_like_ulog, read_ulog
from adapters.ulog._source import UlogSource, ulog_sensor
from fusion._exports import rewrite_module

__all__ = [
    "Dropout",
    "Topic",
    "UlogContent",
    "UlogSource",
    "looks_like_ulog",
    "read_ulog",
    "ulog_sensor",
]

rewrite_module(globals(), __name__)
