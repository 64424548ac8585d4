"""Video sources: files and live streams decoded with PyAV into timestamped numpy frames.

Modules, one concept each:

* :mod:`~adapters.video._source`: :class:`VideoSource`, the async shell;
* :mod:`~adapters.video._decoder`: the decoder thread (demux, decode, reconnect);
* :mod:`~adapters.video._prefetch`: the bounded thread -> event-loop queue;
* :mod:`~adapters.video._timestamps`: PTS -> int ns, exactly, with fallbacks;
* :mod:`~adapters.video._ledger`: which packets never came out of the decoder;
* :mod:`~adapters.video._convert`: pixel format, resize, rotation, buffer reuse;
* :mod:`~adapters.video._orientation`: display matrix / EXIF -> the turn that undoes it;
* :mod:`~adapters.video._bitstream`: whether a packet shows a frame (VP8/VP9 hidden frames);
* :mod:`~adapters.video._tail`: the last packets, kept to re-decode a failed drain;
* :mod:`~adapters.video._mp4box`: MP4 edit lists read from the box headers;
* :mod:`~adapters.video._hwaccel`: hardware decode probing and fallback;
* :mod:`~adapters.video._probe`: opening inputs, error mapping, :class:`VideoInfo`.

Video stored in recordings (encoding, packet records, decoding back) is
storage, so it lives in :mod:`recordings.hfr.video`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.video._convert import BufferPool, PixelConverter, PixelFormat
    from adapters.video._events import FrameLost
    from adapters.video._hwaccel import HWAccelReport
    from adapters.video._ledger import PacketLedger
    from adapters.video._orientation import Orientation, exif_orientation, from_matrix
    from adapters.video._prefetch import Prefetch
    from adapters.video._probe import VideoInfo, is_live, probe_video
    from adapters.video._segments import (
        decode_range,
        frame_times,
        keyframe_times,
        video_segments,
        video_split_point,
    )
    from adapters.video._source import VideoSource, VideoStatistics
    from adapters.video._timestamps import Timeline

__all__ = [
    "BufferPool",
    "FrameLost",
    "HWAccelReport",
    "Orientation",
    "PacketLedger",
    "PixelConverter",
    "PixelFormat",
    "Prefetch",
    "Timeline",
    "VideoInfo",
    "VideoSource",
    "VideoStatistics",
    "decode_range",
    "exif_orientation",
    "frame_times",
    "from_matrix",
    "is_live",
    "keyframe_times",
    "probe_video",
    "video_segments",
    "video_split_point",
]

# PyAV loads with the first name used, not with the package.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Prefetch": "adapters.video._prefetch",
        "decode_range": "adapters.video._segments",
        "exif_orientation": "adapters.video._orientation",
        "frame_times": "adapters.video._segments",
        "from_matrix": "adapters.video._orientation",
        "keyframe_times": "adapters.video._segments",
        "video_segments": "adapters.video._segments",
        "video_split_point": "adapters.video._segments",
        "BufferPool": "adapters.video._convert",
        "FrameLost": "adapters.video._events",
        "HWAccelReport": "adapters.video._hwaccel",
        "Orientation": "adapters.video._orientation",
        "PacketLedger": "adapters.video._ledger",
        "PixelConverter": "adapters.video._convert",
        "PixelFormat": "adapters.video._convert",
        "Timeline": "adapters.video._timestamps",
        "VideoInfo": "adapters.video._probe",
        "VideoSource": "adapters.video._source",
        "VideoStatistics": "adapters.video._source",
        "is_live": "adapters.video._probe",
        "probe_video": "adapters.video._probe",
    },
)
