"""Reading a ``.hfr`` recording from a non-seekable stream (a pipe, a socket).

Theory of operation. :func:`open_recording` seeks (footer index, ``pread``);
a pipe cannot. :func:`read_stream` reads records front to back instead,
exactly as the scan path does: a record's lengths are trusted only once its
meta CRC checks out, a chunk's payload is read only after its declared sizes
passed the limits, then CRC-checked, decompressed within bounds and decoded.
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

import msgpack

from fusion.errors import (
    CorruptChunk,
    LimitExceeded,
    RecordingError,
    TruncatedRecording,
)
from fusion.frames import Frame, SensorSpec
from recordings.format import (
    CHUNK_KINDS,
    DEFAULT_MAX_CHUNK_BYTES,
    DEFAULT_MAX_META_BYTES,
    PREAMBLE,
    PRELUDE,
    SYNC,
    RecordKind,
    crc32,
    unpack_preamble,
)
from recordings.records import (
    ChunkMeta,
    DecodedChunk,
    decode_chunk,
    decompress_chunk,
    spec_from_wire,
)

_SKIP_PIECE = 1 << 20


class RecordingStream:
    """A recording read front to back from ``stream``; see :func:`read_stream`."""

    def __init__(
        self,
        stream: BinaryIO,
        *,
        name: str = "<stream>",
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        max_meta_bytes: int = DEFAULT_MAX_META_BYTES,
    ) -> None:
        self.name = name
        self.max_chunk_bytes = max_chunk_bytes
        self.max_meta_bytes = max_meta_bytes
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

        A stream is read once: a second call raises ``RuntimeError``.
        """
        if self._started:
            raise RuntimeError(f"stream '{self.name}' was already read; open it again")
        self._started = True
        wanted = None if sensors is None else frozenset(sensors)
        while True:
            offset = self._pos
            rec = self._next_record()
            if rec is None:
                return
            kind, meta, payload_len, payload_crc = rec
            if kind in CHUNK_KINDS:
                decoded = self._chunk(kind, meta, payload_len, payload_crc, offset)
                if decoded is not None:
                    yield from decoded.frames(wanted, start, end)
            elif kind == RecordKind.INDEX:
                return  # only the trailer follows
            else:
                if kind == RecordKind.HEADER and isinstance(meta, dict):
                    self._take_specs(meta.get("sensors"))
                    if isinstance(meta.get("metadata"), dict) and not self.metadata:
                        self.metadata = meta["metadata"]
                if not self._skip(payload_len):  # unknown kinds are skipped by their length
                    self._report(self._truncated(offset, "a record"))
                    return

    def _next_record(self) -> tuple[int, Any, int, int] | None:
        """``(kind, meta, payload_len, payload_crc)``; None at the end or at damage (reported)."""
        offset = self._pos
        prelude = self._read(PRELUDE.size)
        if not prelude:
            return None  # no trailer: the writer was killed between records
        if len(prelude) < PRELUDE.size:
            self._report(self._truncated(offset, "a record prelude"))
            return None
        sync, kind, meta_len, payload_len, meta_crc, payload_crc = PRELUDE.unpack(prelude)
        if sync != SYNC:
            self._report(self._stop(offset, "no record starts here (bad sync bytes)"))
            return None
        if meta_len > self.max_meta_bytes:
            self._report(self._stop(offset, f"record meta length {meta_len} is over the limit"))
            return None
        meta_bytes = self._read(meta_len)
        if len(meta_bytes) < meta_len:
            self._report(self._truncated(offset, "a record"))
            return None
        if crc32(prelude[:16], meta_bytes) != meta_crc:
            self._report(self._stop(offset, "record header fails its CRC"))
            return None
        try:
            meta = msgpack.unpackb(meta_bytes, raw=False, strict_map_key=False)
        except Exception as err:  # msgpack raises many types on garbage
            self._report(self._stop(offset, f"record meta does not decode ({err})"))
            return None
        return kind, meta, payload_len, payload_crc

    def _chunk(
        self, kind: int, meta: Any, payload_len: int, crc: int, offset: int
    ) -> DecodedChunk | None:
        """The chunk decoded, or None (reported; its payload consumed when possible)."""
        try:
            chunk = ChunkMeta.from_msgpack(meta, offset=offset, stored_size=payload_len, kind=kind)
        except Exception as err:
            self._report(
                CorruptChunk(f"a chunk meta does not parse ({err})", path=self.name, offset=offset)
            )
            self._skip_or_report(payload_len, offset)
            return None
        self._take_specs(list(chunk.new_specs))
        if payload_len > self.max_chunk_bytes or chunk.raw_size > self.max_chunk_bytes:
            self._report(
                LimitExceeded(
                    f"{chunk.describe()} declares {max(payload_len, chunk.raw_size)} bytes, over "
                    f"the limit of {self.max_chunk_bytes}; skipping it unread",
                    path=self.name,
                    offset=offset,
                )
            )
            self._skip_or_report(payload_len, offset)
            return None
        payload = self._read(payload_len)
        if len(payload) < payload_len:
            self._report(self._truncated(offset, chunk.describe()))
            return None
        if crc32(payload) != crc:
            self._report(
                CorruptChunk(
                    f"{chunk.describe()} fails its CRC: its stored bytes changed",
                    path=self.name,
                    offset=offset,
                )
            )
            return None
        try:
            raw = decompress_chunk(
                payload, chunk, max_chunk_bytes=self.max_chunk_bytes, where=self.name
            )
            return decode_chunk(raw, chunk, where=self.name)
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

    def _stop(self, offset: int, reason: str) -> CorruptChunk:
        return CorruptChunk(
            f"{reason}; a stream cannot resynchronise, so reading stops here",
            path=self.name,
            offset=offset,
        )

    def _report(self, err: RecordingError) -> None:
        self.damage.append(err)

    def _take_specs(self, specs: Any) -> None:
        if not isinstance(specs, list):
            return
        for d in specs:
            try:
                spec = spec_from_wire(d)
            except Exception:
                continue
            self.specs.setdefault(spec.name, spec)


def read_stream(
    stream: BinaryIO,
    *,
    name: str = "<stream>",
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    max_meta_bytes: int = DEFAULT_MAX_META_BYTES,
) -> RecordingStream:
    """Read a recording from a non-seekable binary stream, front to back, once.

    ``read_stream(sys.stdin.buffer).frames()`` yields what
    ``open_recording(path).frames()`` would (the footer index is not needed);
    damage goes to :attr:`RecordingStream.damage`. Raises
    :class:`~fusion.errors.RecordingError` if the stream is not a recording
    and :class:`~fusion.errors.UnsupportedVersion` for a newer major version.
    """
    return RecordingStream(
        stream, name=name, max_chunk_bytes=max_chunk_bytes, max_meta_bytes=max_meta_bytes
    )
