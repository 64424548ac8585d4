"""Frame logs (.hfr): recorder, reader, replay and the pytest plugin."""

from fusion._exports import rewrite_module
from recordings.errors import (
    CorruptChunk,
    LimitExceeded,
    RecorderClosed,
    RecordingError,
    TruncatedRecording,
    UnsupportedVersion,
)
from recordings.reader import Recording, RecordingSummary, SensorSummary, open_recording
from recordings.records import ChunkMeta
from recordings.replay import Replay
from recordings.writer import Recorder, RecorderStatistics

__all__ = [
    "ChunkMeta",
    "CorruptChunk",
    "LimitExceeded",
    "Recorder",
    "RecorderClosed",
    "RecorderStatistics",
    "Recording",
    "RecordingError",
    "RecordingSummary",
    "Replay",
    "SensorSummary",
    "TruncatedRecording",
    "UnsupportedVersion",
    "open_recording",
]

rewrite_module(globals(), __name__)
