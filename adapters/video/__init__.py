"""Video sources: files and live streams decoded with PyAV into timestamped numpy frames.

Modules, one concept each:

* :mod:`~adapters.video.source`: :class:`VideoSource`, the async shell;
* :mod:`~adapters.video.decoder`: the decoder thread (demux, decode, reconnect);
* :mod:`~adapters.video.prefetch`: the bounded thread -> event-loop queue;
* :mod:`~adapters.video.timestamps`: PTS -> int ns, exactly, with fallbacks;
* :mod:`~adapters.video.ledger`: which packets never came out of the decoder;
* :mod:`~adapters.video.convert`: pixel format, resize, rotation, buffer reuse;
* :mod:`~adapters.video.orientation`: display matrix / EXIF -> the turn that undoes it;
* :mod:`~adapters.video.bitstream`: whether a packet shows a frame (VP8/VP9 hidden frames);
* :mod:`~adapters.video.tail`: the last packets, kept to re-decode a failed drain;
* :mod:`~adapters.video.mp4box`: MP4 edit lists read from the box headers;
* :mod:`~adapters.video.hwaccel`: hardware decode probing and fallback;
* :mod:`~adapters.video.probe`: opening inputs, error mapping, :class:`VideoInfo`.

Video stored in recordings (encoding, packet records, decoding back) is
storage, so it lives in :mod:`recordings.hfr.video`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.video.convert import BufferPool, PixelConverter, PixelFormat
    from adapters.video.events import FrameLost
    from adapters.video.hwaccel import HWAccelReport
    from adapters.video.ledger import PacketLedger
    from adapters.video.orientation import Orientation
    from adapters.video.probe import VideoInfo, is_live, probe_video
    from adapters.video.source import VideoSource, VideoStatistics
    from adapters.video.timestamps import Timeline

__all__ = [
    "BufferPool",
    "FrameLost",
    "HWAccelReport",
    "Orientation",
    "PacketLedger",
    "PixelConverter",
    "PixelFormat",
    "Timeline",
    "VideoInfo",
    "VideoSource",
    "VideoStatistics",
    "is_live",
    "probe_video",
]

# PyAV loads with the first name used, not with the package.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BufferPool": "adapters.video.convert",
        "FrameLost": "adapters.video.events",
        "HWAccelReport": "adapters.video.hwaccel",
        "Orientation": "adapters.video.orientation",
        "PacketLedger": "adapters.video.ledger",
        "PixelConverter": "adapters.video.convert",
        "PixelFormat": "adapters.video.convert",
        "Timeline": "adapters.video.timestamps",
        "VideoInfo": "adapters.video.probe",
        "VideoSource": "adapters.video.source",
        "VideoStatistics": "adapters.video.source",
        "is_live": "adapters.video.probe",
        "probe_video": "adapters.video.probe",
    },
)
