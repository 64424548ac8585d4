"""All storage: frame logs (.hfr), video in recordings, export, and any recording as a Source.

* :class:`Recorder`, :func:`open_recording`, :func:`read_stream`, :class:`Replay`:
  the ``.hfr`` format (``recordings/FORMAT.md``);
* :class:`VideoRecorder`, :class:`VideoReplay`: video sensors stored as encoded packets;
* :func:`open_source`: a recording or a ROS bag as a :class:`~fusion.Source`;
* :func:`sync_recording`: a recording's ExactTime/Nearest groups computed from its stamps;
* :class:`SnapshotRecorder`: the last seconds in memory, written on a trigger (black box);
* :mod:`recordings.export`: ROS 2 / Foxglove MCAP, MP4, PCD, Rerun;
* :mod:`recordings.pytest_plugin`: the ``hfr`` fixtures.

Names load on first use (PEP 562), so importing the package, as pytest does
for the ``hyperframes`` plugin in every test run, costs next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from recordings.errors import (
        CorruptChunk,
        LimitExceeded,
        RecorderClosed,
        RecordingError,
        TruncatedRecording,
        UnsupportedVersion,
    )
    from recordings.layout import ChunkMeta
    from recordings.limits import ReadLimits
    from recordings.offline_sync import OfflineGroups, sync_recording
    from recordings.open import is_bag, open_source
    from recordings.reader import Recording, open_recording
    from recordings.replay import Replay
    from recordings.snapshot import SnapshotRecorder
    from recordings.stream import RecordingStream, read_stream
    from recordings.summary import RecordingSummary, SensorSummary
    from recordings.video import VideoReader, VideoRecorder, VideoReplay
    from recordings.writer import Recorder, RecorderStatistics

__all__ = [
    "ChunkMeta",
    "CorruptChunk",
    "LimitExceeded",
    "OfflineGroups",
    "ReadLimits",
    "Recorder",
    "RecorderClosed",
    "RecorderStatistics",
    "Recording",
    "RecordingError",
    "RecordingStream",
    "RecordingSummary",
    "Replay",
    "SensorSummary",
    "SnapshotRecorder",
    "TruncatedRecording",
    "UnsupportedVersion",
    "VideoReader",
    "VideoRecorder",
    "VideoReplay",
    "is_bag",
    "open_recording",
    "open_source",
    "read_stream",
    "sync_recording",
]

_HOMES = {
    "ChunkMeta": "recordings.layout",
    "CorruptChunk": "recordings.errors",
    "LimitExceeded": "recordings.errors",
    "OfflineGroups": "recordings.offline_sync",
    "ReadLimits": "recordings.limits",
    "Recorder": "recordings.writer",
    "RecorderClosed": "recordings.errors",
    "RecorderStatistics": "recordings.writer",
    "Recording": "recordings.reader",
    "RecordingError": "recordings.errors",
    "RecordingStream": "recordings.stream",
    "RecordingSummary": "recordings.summary",
    "Replay": "recordings.replay",
    "SensorSummary": "recordings.summary",
    "SnapshotRecorder": "recordings.snapshot",
    "TruncatedRecording": "recordings.errors",
    "UnsupportedVersion": "recordings.errors",
    "VideoReader": "recordings.video.playback",
    "VideoRecorder": "recordings.video.recording",
    "VideoReplay": "recordings.video.playback",
    "is_bag": "recordings.open",
    "open_recording": "recordings.reader",
    "open_source": "recordings.open",
    "read_stream": "recordings.stream",
    "sync_recording": "recordings.offline_sync",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
