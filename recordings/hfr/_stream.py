"""Reading a ``.hfr`` recording from a non-seekable stream (a pipe, a socket).

Theory of operation. :func:`open_recording` seeks (footer index, ``pread``);
a pipe cannot. :func:`read_stream` reads records front to back instead,
exactly as the scan path does: a record's lengths are trusted only once its
meta CRC checks out, a chunk's payload is read only after its declared sizes
passed the limits, then CRC-checked, decompressed within bounds and decoded: every
decision is the chunk reader's (:mod:`recordings.hfr._chunk_reader`), as for the
seeking reader; this module is the shell that reads the pipe.
Memory stays at about one chunk.

Damage: a chunk whose payload fails its CRC or does not decode is reported
in :attr:`RecordingStream.damage` and skipped (its verified lengths say where
the next record starts). A damaged prelude or meta cannot be skipped on a
stream (the lengths are untrusted and nothing can be re-read), so reading
stops there, as it does at a truncated tail; both are reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from fusion import Frame, SensorSpec
from fusion.errors import UsageError
from recordings.errors import RecordingError, TruncatedRecording
from recordings.hfr._chunk_reader import (
    DecodedChunk,
    NeedMore,
    RecordHead,
    decode_chunk,
    parse_record_head,
    unpack_payload,
    unread_refusal,
)
from recordings.hfr._format import (
    CHUNK_KINDS,
    PREAMBLE,
    PRELUDE,
    RecordKind,
    unpack_preamble,
)
from recordings.hfr._limits import DEFAULT_LIMITS, ReadLimits
from recordings.hfr._parser import header_contents, parse_chunk_meta, parse_specs

_SKIP_PIECE = 1 << 20


class RecordingStream:
    """A recording read front to back from ``stream``; see :func:`read_stream`."""

    def __init__(
        self,
        stream: BinaryIO,
        *,
        name: str = "<stream>",
        limits: ReadLimits = DEFAULT_LIMITS,
    ) -> None:
        self.name = name
        self.limits = limits
        """What one record or chunk of the stream may cost."""
        self.damage: list[RecordingError] = []
        """Every problem met so far."""
        self.specs: dict[str, SensorSpec] = {}
        self.metadata: dict[str, Any] = {}
        self._stream = stream
        self._pos = 0
        self._started = False
        head = self._read(PREAMBLE.size)
        self.version = unpack_preamble(head, path=name, source="stream")

    def frames(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Iterator[Frame]:
        """Frames in recorded order, of ``sensors`` (all if None), with ``start <= t < end``.

        A stream is read once: a second call raises :class:`~fusion.errors.UsageError`.
        """
        if self._started:
            raise UsageError(f"stream '{self.name}' was already read; open it again")
        self._started = True
        wanted = None if sensors is None else frozenset(sensors)
        while True:
            offset = self._pos
            rec = self._next_record()
            if rec is None:
                return
            if rec.kind in CHUNK_KINDS:
                decoded = self._chunk(rec)
                if decoded is not None:
                    yield from decoded.frames(wanted, start, end)
            elif rec.kind == RecordKind.INDEX:
                return  # only the trailer follows
            else:
                if rec.kind == RecordKind.HEADER:
                    specs, metadata = header_contents(rec.meta)
                    self._take_specs(specs)
                    if metadata is not None and not self.metadata:
                        self.metadata = metadata
                if not self._skip(rec.payload_len):  # unknown kinds are skipped by their length
                    self._report(self._truncated(offset, "a record"))
                    return

    def _next_record(self) -> RecordHead | None:
        """The next record's verified head; None at the end or at damage (reported)."""
        offset = self._pos
        data = self._read(PRELUDE.size)
        if not data:
            return None  # no trailer: the writer was killed between records
        while True:
            head = parse_record_head(data, offset=offset, where=self.name, limits=self.limits)
            if not isinstance(head, NeedMore):
                break
            data += self._read(head.size - len(data))
            if len(data) < head.size:
                what = "a record prelude" if head.size == PRELUDE.size else "a record"
                self._report(self._truncated(offset, what))
                return None
        if isinstance(head, RecordingError):
            self._report(self._stop(head))
            return None
        return head

    def _chunk(self, rec: RecordHead) -> DecodedChunk | None:
        """The chunk decoded, or None (reported; its payload consumed when possible)."""
        offset, payload_len, crc = rec.offset, rec.payload_len, rec.payload_crc
        chunk = parse_chunk_meta(rec, where=self.name)
        if isinstance(chunk, RecordingError):
            self._report(chunk)
            self._skip_or_report(payload_len, offset)
            return None
        self._take_specs(parse_specs(chunk.new_specs))
        refusal = unread_refusal(chunk, payload_len, limits=self.limits, where=self.name)
        if refusal is not None:
            self._report(refusal)
            self._skip_or_report(payload_len, offset)
            return None
        payload = self._read(payload_len)
        if len(payload) < payload_len:
            self._report(self._truncated(offset, chunk.describe()))
            return None
        try:
            raw = unpack_payload(payload, crc, chunk, limits=self.limits, where=self.name)
            return decode_chunk(raw, chunk, where=self.name, limits=self.limits)
        except RecordingError as err:
            self._report(err)
            return None

    def _read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        parts = []
        left = n
        while left:
            got = self._stream.read(left)
            if not got:
                break
            parts.append(got)
            left -= len(got)
        data = b"".join(parts)
        self._pos += len(data)
        return data

    def _skip(self, n: int) -> bool:
        while n:
            got = len(self._read(min(n, _SKIP_PIECE)))
            if not got:
                return False
            n -= got
        return True

    def _skip_or_report(self, n: int, offset: int) -> None:
        if not self._skip(n):
            self._report(self._truncated(offset, "a record"))

    def _truncated(self, offset: int, what: str) -> TruncatedRecording:
        return TruncatedRecording(f"the stream ends inside {what}", path=self.name, offset=offset)

    def _stop(self, err: RecordingError) -> RecordingError:
        reason = err.args[0] if err.args else str(err)
        return type(err)(
            f"{reason}; a stream cannot resynchronise, so reading stops here",
            path=self.name,
            offset=err.offset,
        )

    def _report(self, err: RecordingError) -> None:
        self.damage.append(err)

    def _take_specs(self, specs: list[SensorSpec]) -> None:
        for spec in specs:
            self.specs.setdefault(spec.name, spec)


def read_stream(
    stream: BinaryIO,
    *,
    name: str = "<stream>",
    limits: ReadLimits | None = None,
    max_chunk_bytes: int | None = None,
    max_meta_bytes: int | None = None,
    max_decoded_bytes: int | None = None,
    max_chunk_frames: int | None = None,
) -> RecordingStream:
    """Read a recording from a non-seekable binary stream, front to back, once.

    ``read_stream(sys.stdin.buffer).frames()`` yields what
    ``open_recording(path).frames()`` would (the footer index is not needed);
    damage goes to :attr:`RecordingStream.damage`. Raises
    :class:`~recordings.errors.RecordingError` if the stream is not a recording
    and :class:`~recordings.errors.UnsupportedVersion` for a newer major version.
    ``limits`` bound what it reads (:class:`~recordings.hfr._limits.ReadLimits`);
    each ``max_*`` given changes that one limit.
    """
    chosen = (limits or DEFAULT_LIMITS).replace(
        max_chunk_bytes=max_chunk_bytes,
        max_meta_bytes=max_meta_bytes,
        max_decoded_bytes=max_decoded_bytes,
        max_chunk_frames=max_chunk_frames,
    )
    return RecordingStream(stream, name=name, limits=chosen)
