"""Stopping a blocking FFmpeg call from another thread within one poll (about 0.1 s).

Why this exists. PyAV gives no way to interrupt ``av.open`` or a demux read
except its timeouts: an interrupt callback that FFmpeg polls (every 100 ms or
so inside network reads) and that answers "stop" once ``time.monotonic()``
passes the call's start plus its timeout. A source being cancelled while it
connects or waits for data would therefore wait up to ``open_timeout`` or
``read_timeout`` (seconds) before its thread noticed.

The callback reads the clock through the ``time`` name of
``av.container.core`` (a PyAV internal, reached only through
:mod:`adapters.video._compat_av`). :func:`install` puts a stand-in there that forwards
to :mod:`time`, except in a thread that entered :func:`stoppable` with an
event that is now set: there it returns ever larger values, so every pending
timeout has passed at the next poll and FFmpeg returns ``AVERROR_EXIT``. Other
threads and other containers are unaffected. If a PyAV release stops reading
the clock that way, stopping falls back to the timeouts
(``tests/adapters/test_video_cancel.py`` measures it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_local = threading.local()
_installed = False
_install_lock = threading.Lock()

_STEP_S = 1e6
"""Each read of the stand-in clock by a stopped thread moves it this far ahead
(longer than any timeout), so a timeout started after the stop passes too."""


class _StoppableTime:
    """``time`` as ``av.container.core`` sees it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def monotonic(self) -> float:
        event: threading.Event | None = getattr(_local, "stop", None)
        if event is None or not event.is_set():
            return time.monotonic()
        fake: float = getattr(_local, "fake", 0.0) or time.monotonic()
        fake += _STEP_S
        _local.fake = fake
        return fake


def install() -> bool:
    """Put the stand-in clock in place (idempotent); False if PyAV has no such hook."""
    global _installed
    with _install_lock:
        if _installed:
            return True
        from adapters.video._compat_av import replace_container_clock

        _installed = replace_container_clock(_StoppableTime())
        return _installed


@contextmanager
def stoppable(event: threading.Event) -> Iterator[None]:
    """FFmpeg calls made by this thread inside the block end soon after ``event`` is set."""
    install()
    previous = getattr(_local, "stop", None)
    _local.stop = event
    _local.fake = 0.0
    try:
        yield
    finally:
        _local.stop = previous
        _local.fake = 0.0
