"""The ``.hfr`` frame log (``FORMAT.md`` beside this file): writing, reading, checking.

* :class:`Recorder` (frames in, a crash-safe file out) and :class:`SnapshotRecorder`
  (the last seconds in memory, written on a trigger);
* :func:`open_recording` -> :class:`Recording`, the one reader: summary, filtered
  iteration, seeking, stamps, damage reports; :func:`read_stream` for a pipe or socket;
* :mod:`recordings.hfr.video`: camera sensors stored as encoded video;
* the pieces the application's commands use (chunks for the fleet, segments, details,
  ledgers, clock summaries, ``reindex``).

Everything else is private (``_modules``). Names load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from recordings.hfr._builder import ChunkBuilder
    from recordings.hfr._chunk_reader import decode_frames
    from recordings.hfr._details import (
        OTHER,
        REPACED,
        SEGMENT,
        DetailsChecker,
        frame_marks,
        payload_brief,
        payload_size,
    )
    from recordings.hfr._format import MAGIC
    from recordings.hfr._layout import ChunkMeta
    from recordings.hfr._ledgers import SensorLedger
    from recordings.hfr._limits import ReadLimits
    from recordings.hfr._reader import Recording, open_recording
    from recordings.hfr._reindex import reindex
    from recordings.hfr._segments import recording_segments, recording_split_point
    from recordings.hfr._sensor_summary import (
        EARLY_GLITCH_NS,
        SEGMENT_JUMP_NS,
        TAIL_FRAMES,
        hull_candidates,
        skew_from_hull,
    )
    from recordings.hfr._snapshot import SnapshotRecorder
    from recordings.hfr._stamps import FrameFetcher, SensorStamps, read_stamps
    from recordings.hfr._stream import RecordingStream, read_stream
    from recordings.hfr._summary import EPOCH_THRESHOLD_NS, RecordingSummary, SensorSummary
    from recordings.hfr._writer import Recorder, RecorderStatistics

__all__ = [
    "EARLY_GLITCH_NS",
    "EPOCH_THRESHOLD_NS",
    "MAGIC",
    "OTHER",
    "REPACED",
    "SEGMENT",
    "SEGMENT_JUMP_NS",
    "TAIL_FRAMES",
    "ChunkBuilder",
    "ChunkMeta",
    "DetailsChecker",
    "FrameFetcher",
    "ReadLimits",
    "Recorder",
    "RecorderStatistics",
    "Recording",
    "RecordingStream",
    "RecordingSummary",
    "SensorLedger",
    "SensorStamps",
    "SensorSummary",
    "SnapshotRecorder",
    "decode_frames",
    "frame_marks",
    "hull_candidates",
    "open_recording",
    "payload_brief",
    "payload_size",
    "read_stamps",
    "read_stream",
    "recording_segments",
    "recording_split_point",
    "reindex",
    "skew_from_hull",
]

_HOMES = {
    "ChunkBuilder": "recordings.hfr._builder",
    "ChunkMeta": "recordings.hfr._layout",
    "DetailsChecker": "recordings.hfr._details",
    "EARLY_GLITCH_NS": "recordings.hfr._sensor_summary",
    "EPOCH_THRESHOLD_NS": "recordings.hfr._summary",
    "FrameFetcher": "recordings.hfr._stamps",
    "MAGIC": "recordings.hfr._format",
    "OTHER": "recordings.hfr._details",
    "REPACED": "recordings.hfr._details",
    "ReadLimits": "recordings.hfr._limits",
    "Recorder": "recordings.hfr._writer",
    "RecorderStatistics": "recordings.hfr._writer",
    "Recording": "recordings.hfr._reader",
    "RecordingStream": "recordings.hfr._stream",
    "RecordingSummary": "recordings.hfr._summary",
    "SEGMENT": "recordings.hfr._details",
    "SEGMENT_JUMP_NS": "recordings.hfr._sensor_summary",
    "SensorLedger": "recordings.hfr._ledgers",
    "SensorStamps": "recordings.hfr._stamps",
    "SensorSummary": "recordings.hfr._summary",
    "SnapshotRecorder": "recordings.hfr._snapshot",
    "TAIL_FRAMES": "recordings.hfr._sensor_summary",
    "decode_frames": "recordings.hfr._chunk_reader",
    "frame_marks": "recordings.hfr._details",
    "hull_candidates": "recordings.hfr._sensor_summary",
    "open_recording": "recordings.hfr._reader",
    "payload_brief": "recordings.hfr._details",
    "payload_size": "recordings.hfr._details",
    "read_stamps": "recordings.hfr._stamps",
    "read_stream": "recordings.hfr._stream",
    "recording_segments": "recordings.hfr._segments",
    "recording_split_point": "recordings.hfr._segments",
    "reindex": "recordings.hfr._reindex",
    "skew_from_hull": "recordings.hfr._sensor_summary",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
