"""All storage: frame logs (.hfr), video in recordings, export, and any recording as a Source.

* :class:`Recorder`, :func:`open_recording`, :func:`read_stream`, :class:`Replay`:
  the ``.hfr`` format (``recordings/hfr/FORMAT.md``);
* :class:`VideoRecorder`, :class:`VideoReplay`: video sensors stored as encoded packets;
* :func:`open_source`: a recording or a ROS bag as a :class:`~fusion.Source`;
* :func:`sync_recording`: a recording's ExactTime/Nearest groups computed from its stamps;
* :class:`SnapshotRecorder`: the last seconds in memory, written on a trigger (black box);
* :mod:`recordings.outputs._export`: ROS 2 / Foxglove MCAP, MP4, PCD, Rerun;
* :mod:`recordings.pytest_plugin`: the ``hfr`` fixtures.

Names load on first use (PEP 562), so importing the package, as pytest does
for the ``hyperframes`` plugin in every test run, costs next to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from recordings._offline_sync import OfflineGroups, sync_recording
    from recordings._open import is_bag, open_source
    from recordings._replay import Replay
    from recordings.errors import (
        CorruptChunk,
        LimitExceeded,
        RecorderClosed,
        RecordingError,
        TruncatedRecording,
        UnsupportedVersion,
    )
    from recordings.hfr import (
        ChunkMeta,
        ReadLimits,
        Recorder,
        RecorderStatistics,
        Recording,
        RecordingStream,
        RecordingSummary,
        SensorSummary,
        SnapshotRecorder,
        open_recording,
        read_stream,
    )
    from recordings.hfr.video import VideoReader, VideoRecorder, VideoReplay

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
    "ChunkMeta": "recordings.hfr._layout",
    "CorruptChunk": "recordings.errors",
    "LimitExceeded": "recordings.errors",
    "OfflineGroups": "recordings._offline_sync",
    "ReadLimits": "recordings.hfr._limits",
    "Recorder": "recordings.hfr._writer",
    "RecorderClosed": "recordings.errors",
    "RecorderStatistics": "recordings.hfr._writer",
    "Recording": "recordings.hfr._reader",
    "RecordingError": "recordings.errors",
    "RecordingStream": "recordings.hfr._stream",
    "RecordingSummary": "recordings.hfr._summary",
    "Replay": "recordings._replay",
    "SensorSummary": "recordings.hfr._summary",
    "SnapshotRecorder": "recordings.hfr._snapshot",
    "TruncatedRecording": "recordings.errors",
    "UnsupportedVersion": "recordings.errors",
    "VideoReader": "recordings.hfr.video._playback",
    "VideoRecorder": "recordings.hfr.video._recording",
    "VideoReplay": "recordings.hfr.video._playback",
    "is_bag": "recordings._open",
    "open_recording": "recordings.hfr._reader",
    "open_source": "recordings._open",
    "read_stream": "recordings.hfr._stream",
    "sync_recording": "recordings._offline_sync",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
