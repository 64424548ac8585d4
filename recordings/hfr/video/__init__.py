"""Video in recordings: encoded packets in ``.hfr`` files, and decoding them back.

* :mod:`~recordings.hfr.video._packets`: packet records, track parameters, key-frame markers;
* :mod:`~recordings.hfr.video._encoder`: arrays -> H.264/HEVC/FFV1 packets (PyAV);
* :mod:`~recordings.hfr.video._recording`: :class:`VideoRecorder`, a recorder that encodes
  (or copies) video sensors and writes everything else as it is;
* :mod:`~recordings.hfr.video._playback`: :class:`VideoReader` and :class:`VideoReplay`,
  frames decoded back with their recorded seq, stamps and meta.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from recordings.hfr.video._encoder import parse_codec
    from recordings.hfr.video._packets import KEYFRAME_SUFFIX, META_KEY, video_sensors
    from recordings.hfr.video._playback import (
        VideoReader,
        VideoReplay,
        describe_tracks,
        has_encoded_video,
    )
    from recordings.hfr.video._recording import VideoRecorder

__all__ = [
    "KEYFRAME_SUFFIX",
    "META_KEY",
    "VideoReader",
    "VideoRecorder",
    "VideoReplay",
    "describe_tracks",
    "has_encoded_video",
    "parse_codec",
    "video_sensors",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "KEYFRAME_SUFFIX": "recordings.hfr.video._packets",
        "META_KEY": "recordings.hfr.video._packets",
        "VideoReader": "recordings.hfr.video._playback",
        "VideoRecorder": "recordings.hfr.video._recording",
        "VideoReplay": "recordings.hfr.video._playback",
        "describe_tracks": "recordings.hfr.video._playback",
        "has_encoded_video": "recordings.hfr.video._playback",
        "parse_codec": "recordings.hfr.video._encoder",
        "video_sensors": "recordings.hfr.video._packets",
    },
)
