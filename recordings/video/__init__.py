"""Video in recordings: encoded packets in ``.hfr`` files, and decoding them back.

* :mod:`~recordings.video.packets`: packet records, track parameters, key-frame markers;
* :mod:`~recordings.video.encoder`: arrays -> H.264/HEVC/FFV1 packets (PyAV);
* :mod:`~recordings.video.recording`: :class:`VideoRecorder`, a recorder that encodes
  (or copies) video sensors and writes everything else as it is;
* :mod:`~recordings.video.playback`: :class:`VideoReader` and :class:`VideoReplay`,
  frames decoded back with their recorded seq, stamps and meta.
"""

from fusion._exports import lazy_exports

__all__ = ["VideoReader", "VideoRecorder", "VideoReplay", "describe_tracks", "has_encoded_video"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "VideoReader": "recordings.video.playback",
        "VideoRecorder": "recordings.video.recording",
        "VideoReplay": "recordings.video.playback",
        "describe_tracks": "recordings.video.playback",
        "has_encoded_video": "recordings.video.playback",
    },
)
