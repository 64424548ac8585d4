"""The errors a frame log can raise, re-exported from :mod:`fusion.errors`.

::

    RecordingError (path, offset)
    ├── CorruptChunk         a CRC, size or record does not check out; the chunk is skipped
    ├── TruncatedRecording   the file ends inside a record (a crashed writer)
    ├── UnsupportedVersion   a newer major format version
    └── LimitExceeded        a declared size is over a limit; nothing was allocated
    RecorderClosed (UsageError)  a write after close() or after the writer failed
"""

from fusion.errors import (
    CorruptChunk,
    LimitExceeded,
    RecorderClosed,
    RecordingError,
    TruncatedRecording,
    UnsupportedVersion,
)

__all__ = [
    "CorruptChunk",
    "LimitExceeded",
    "RecorderClosed",
    "RecordingError",
    "TruncatedRecording",
    "UnsupportedVersion",
]
