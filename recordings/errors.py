"""The errors a frame log raises: storage failures belong to the storage floor.

:class:`RecordingError` (with ``path`` and byte ``offset``) and its kinds of
damage are :class:`~fusion.errors.HyperframesError` s; :class:`RecorderClosed`
is a :class:`~fusion.errors.UsageError`. The whole tree, every floor's branch,
is drawn once, in :mod:`fusion.errors`.
"""

from __future__ import annotations

from fusion.errors import HyperframesError, UsageError

__all__ = [
    "CorruptChunk",
    "LimitExceeded",
    "RecorderClosed",
    "RecordingError",
    "TruncatedRecording",
    "UnsupportedVersion",
]


class RecordingError(HyperframesError):
    """A frame log is damaged, truncated or of an unknown version."""

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None):
        self.path = path
        self.offset = offset
        super().__init__(message)

    def __str__(self) -> str:
        message = super().__str__()
        parts = []
        if self.path is not None:
            parts.append(f"{self.path!s}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        return f"{', '.join(parts)}: {message}" if parts else message


class CorruptChunk(RecordingError):
    """A chunk's CRC, sizes or records do not check out; the chunk is skipped."""


class TruncatedRecording(RecordingError):
    """The file ends inside a record: the writer was killed or the copy is short."""


class UnsupportedVersion(RecordingError):
    """The file was written by a newer, incompatible format version."""


class LimitExceeded(RecordingError):
    """A size declared in the file exceeds a safety limit; nothing was allocated."""


class RecorderClosed(UsageError):
    """A write reached a recorder that is closed or has failed."""
