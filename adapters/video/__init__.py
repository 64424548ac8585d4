"""Video sources: files and live streams decoded with PyAV into timestamped numpy frames.

Modules, one concept each:

* :mod:`~adapters.video.source`: :class:`VideoSource`, the async shell;
* :mod:`~adapters.video.decoder`: the decoder thread (demux, decode, reconnect);
* :mod:`~adapters.video.prefetch`: the bounded thread -> event-loop queue;
* :mod:`~adapters.video.timestamps`: PTS -> int ns, exactly, with fallbacks;
* :mod:`~adapters.video.ledger`: which packets never came out of the decoder;
* :mod:`~adapters.video.convert`: pixel format, resize, buffer reuse;
* :mod:`~adapters.video.hwaccel`: hardware decode probing and fallback;
* :mod:`~adapters.video.probe`: opening inputs, error mapping, :class:`VideoInfo`;
* :mod:`~adapters.video.recording` / :mod:`~adapters.video.playback`: video encoded
  into recordings (:class:`VideoRecorder`) and decoded back (:class:`VideoReplay`).
"""

from adapters.video.convert import BufferPool, PixelConverter, PixelFormat
from adapters.video.events import FrameLost
from adapters.video.hwaccel import HWAccelReport
from adapters.video.ledger import PacketLedger
from adapters.video.playback import VideoReader, VideoReplay
from adapters.video.probe import VideoInfo, is_live, probe_video
from adapters.video.recording import VideoRecorder
from adapters.video.source import VideoSource, VideoStatistics
from adapters.video.timestamps import Timeline

__all__ = [
    "BufferPool",
    "FrameLost",
    "HWAccelReport",
    "PacketLedger",
    "PixelConverter",
    "PixelFormat",
    "Timeline",
    "VideoInfo",
    "VideoReader",
    "VideoRecorder",
    "VideoReplay",
    "VideoSource",
    "VideoStatistics",
    "is_live",
    "probe_video",
]
