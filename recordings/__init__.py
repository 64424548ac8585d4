"""Frame logs (.hfr): recorder, reader, replay and the pytest plugin.

Names load on first use (PEP 562), so importing the package, as pytest does
for the ``hyperframes`` plugin in every test run, costs next to nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from recordings.stream import RecordingStream, read_stream
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
    "RecordingStream",
    "RecordingSummary",
    "Replay",
    "SensorSummary",
    "TruncatedRecording",
    "UnsupportedVersion",
    "open_recording",
    "read_stream",
]

_HOME = {
    "ChunkMeta": "recordings.records",
    "CorruptChunk": "recordings.errors",
    "LimitExceeded": "recordings.errors",
    "Recorder": "recordings.writer",
    "RecorderClosed": "recordings.errors",
    "RecorderStatistics": "recordings.writer",
    "Recording": "recordings.reader",
    "RecordingError": "recordings.errors",
    "RecordingStream": "recordings.stream",
    "RecordingSummary": "recordings.reader",
    "Replay": "recordings.replay",
    "SensorSummary": "recordings.reader",
    "TruncatedRecording": "recordings.errors",
    "UnsupportedVersion": "recordings.errors",
    "open_recording": "recordings.reader",
    "read_stream": "recordings.stream",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'recordings' has no attribute {name!r}")
    obj = getattr(importlib.import_module(home), name)
    if getattr(obj, "__module__", "").startswith("recordings."):
        obj.__module__ = "recordings"  # reprs read recordings.Recorder
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
