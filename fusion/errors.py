"""The exception tree of hyperframes, every floor's branch on one root.

Every error the library raises on purpose derives from :class:`HyperframesError`,
except misuse of an object (writing to a closed recorder, running a pipeline
twice), which derives from :class:`UsageError`, a ``RuntimeError``: a bug in
the caller, not bad data. A bad argument to a constructor is a
:class:`ConfigError`, also a ``ValueError``.
Each floor defines the branch it raises (DESIGN principle 9); the core holds
the roots and its own errors. The whole tree; a module named on a line
defines that class and the unnamed ones on its branch below it::

    HyperframesError                                fusion.errors
    ├── ConfigError            a bad setting or argument (also a ValueError)
    ├── SourceError            (sensor, seq)
    │   ├── DecodeError                             adapters.errors
    │   │   └── FrameLost      (pts, reason)        adapters.video
    │   ├── SensorTimeout                           adapters.errors
    │   └── SourceOpenError                         adapters.errors
    ├── FrameFormatError       wrong shape / dtype / type of a payload
    ├── WorkerError            (sensor, seq)
    │   └── DeadlineExpired    waited past its deadline; not run
    ├── RecordingError         (path, offset)       recordings.errors
    │   ├── CorruptChunk       the chunk is skipped
    │   ├── TruncatedRecording a crashed writer
    │   ├── UnsupportedVersion a newer major format version
    │   └── LimitExceeded      a size over a limit; nothing allocated
    └── SegmentError           a segment's task     hyperframes.segments
    UsageError (RuntimeError)  a caller bug         fusion.errors
    └── RecorderClosed                              recordings.errors

Messages are built from the fields, so a caller that catches an error can both
print it and act on its attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class HyperframesError(Exception):
    """Root of every error hyperframes raises about data, devices or models."""


class ConfigError(HyperframesError, ValueError):
    """A setting or argument is missing, of the wrong type or out of range.

    The one type for bad arguments: every constructor that checks its
    arguments (``ApproximateTime(queue_size=0)``, ``BatchWorker(replicas=0)``)
    and every TOML value raises it. It is also a ``ValueError``, so an
    ``except ValueError`` keeps working.
    """


class _FrameError(HyperframesError):
    """An error about one frame: its message is prefixed with the sensor and seq."""

    def __init__(self, message: str, *, sensor: str | None = None, seq: int | None = None):
        self.sensor = sensor
        self.seq = seq
        super().__init__(message)

    def __str__(self) -> str:
        message = super().__str__()
        where = _where(self.sensor, self.seq)
        return f"{where}: {message}" if where else message


class SourceError(_FrameError):
    """A source could not deliver a frame; ``sensor`` and ``seq`` say which."""


class FrameFormatError(HyperframesError):
    """A payload does not have the shape, dtype or type a consumer expects."""

    def __init__(
        self,
        *,
        sensor: str | None,
        seq: int | None,
        expected: str,
        found: str,
    ):
        self.sensor = sensor
        self.seq = seq
        self.expected = expected
        self.found = found
        super().__init__(expected, found)

    def __str__(self) -> str:
        where = _where(self.sensor, self.seq) or "frame"
        return f"{where}: expected {self.expected}, found {self.found}"


class WorkerError(_FrameError):
    """A model failed on an item or a batch; ``sensor`` and ``seq`` name the item."""


class DeadlineExpired(WorkerError):
    """An item's deadline passed while it waited for a batch; it was not run."""


class UsageError(RuntimeError):
    """An object was used in a way its contract forbids (a caller bug)."""


def _where(sensor: str | None, seq: int | None) -> str:
    if sensor is None:
        return ""
    return f"sensor {sensor!r}" + (f" seq {seq}" if seq is not None else "")


@contextmanager
def frame_context(sensor: str, seq: int | None = None) -> Iterator[None]:
    """Attach ``sensor`` and ``seq`` to a hyperframes error raised inside the block.

    Errors that already name a sensor keep theirs; foreign exceptions get a note,
    so the traceback still says which frame was being handled.
    """
    try:
        yield
    except (SourceError, WorkerError, FrameFormatError) as err:
        if err.sensor is None:
            err.sensor, err.seq = sensor, seq
        raise
    except Exception as err:
        err.add_note(f"while handling {_where(sensor, seq)}")
        raise
