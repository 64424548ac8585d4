"""Audio: files, streams and capture devices as frames of PCM samples (PyAV).

:class:`AudioSource` makes frames of a fixed duration (20 ms by default) of
float32 ``(channels, samples)`` with sample-exact times; :class:`Framer` is
its sans-I/O core (decoded chunks in, fixed-size frames and PTS
discontinuities out). PyAV loads with this package (``import adapters`` alone does not
load it: ``adapters.AudioSource`` is imported on first use).
"""

from adapters.audio._framer import Cut, Discontinuity, Framer
from adapters.audio._source import AudioSource, sample_time
from fusion._exports import rewrite_module

__all__ = ["AudioSource", "Cut", "Discontinuity", "Framer", "sample_time"]

rewrite_module(globals(), __name__)
