"""Every reach into PyAV's internals, in one place (principle 12).

What is used, and why: the module-level name ``time`` of ``av.container.core`` (PyAV's
Cython container module, not a documented API). FFmpeg's interrupt callback, which
PyAV installs on every container, asks ``time.monotonic()`` through that name whether
an ``open_timeout``/``read_timeout`` has passed; that is the only way to make a blocking
``av.open`` or demux read return at once from another thread
(:mod:`adapters.video._interrupt` puts a per-thread stand-in clock there).

If a release stops reading the clock that way, stopping falls back to the timeouts (seconds
instead of one poll): nothing breaks, a cancel is slower. Checked against PyAV :data:`CHECKED`
(``tests/adapters/test_compat_av.py`` swaps the clock in and watches FFmpeg's interrupt
read it; it fails, naming this module, on a release outside that range).
"""

from __future__ import annotations

import time
from typing import Any

DISTRIBUTION = "av"
CHECKED = ">=18.1.0,<=18.1.0"
"""The releases this module was read against and its tests passed with. PyAV 13.1 and 16.1
have the name but their interrupt callback does not read it (measured: the stand-in is never
called), so there a cancel waits for the timeouts."""
DEGRADES_BEFORE = True
"""Older releases the pin admits work without the internal (slower cancels, nothing lost)."""


def container_clock() -> Any:
    """What ``av.container.core`` reads the time through now (``None`` if it has no such
    name)."""
    import av.container.core as core

    return getattr(core, "time", None)


def replace_container_clock(stand_in: Any) -> bool:
    """Make ``av.container.core`` read the time through ``stand_in`` (an object with the
    ``time`` module's ``monotonic``); ``False``, and nothing changed, if that name is not
    the ``time`` module (a PyAV that reads the clock otherwise, or a stand-in already)."""
    import av.container.core as core

    if getattr(core, "time", None) is not time:
        return False
    core.time = stand_in  # type: ignore[attr-defined]
    return True
