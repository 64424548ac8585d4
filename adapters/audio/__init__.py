"""Audio: files, streams and capture devices as frames of PCM samples (PyAV).

:class:`AudioSource` makes frames of a fixed duration (20 ms by default) of
float32 ``(channels, samples)`` with sample-exact times; :class:`Framer` is
its sans-I/O core (decoded chunks in, fixed-size frames and PTS
discontinuities out). PyAV loads with this package (``import adapters`` alone does not
load it: ``adapters.AudioSource`` is imported on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.audio._framer import Cut, Discontinuity, Framer
    from adapters.audio._source import AudioSource, sample_time


__all__ = ["AudioSource", "Cut", "Discontinuity", "Framer", "sample_time"]

_HOMES = {
    "AudioSource": "adapters.audio._source",
    "Cut": "adapters.audio._framer",
    "Discontinuity": "adapters.audio._framer",
    "Framer": "adapters.audio._framer",
    "sample_time": "adapters.audio._source",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
