"""A GNSS receiver's byte stream split into UBX messages, NMEA sentences and garbage; no I/O.

Theory of operation. A u-blox receiver sends UBX binary messages and NMEA
sentences on one port, back to back with no separator: a UBX message is
``0xB5 0x62``, class, id, a little-endian 16-bit payload length, the payload
and a two-byte Fletcher checksum over class..payload; an NMEA sentence is
``$`` (or ``!``), its address (3-8 upper-case letters or digits, ``GPGGA``,
``PUBX``) and ``,`` or ``*``, then printable ASCII up to CR/LF (a ``$`` in
binary data that is not followed by such an address is garbage). :class:`StreamSplitter`
scans for either start. A UBX message whose checksum fails is not a message:
the scan goes on one byte after its sync, so a false sync inside garbage or a
sentence costs nothing. A sentence ends at CR/LF; a byte that is not printable
ASCII, or a new ``$``, ends it early (cut: the decoder counts it). Bytes that
start neither are *garbage*, one :class:`Garbage` item per run, holding how
many bytes: a binary blob before a ``$`` costs only those bytes.

Everything is bounded: a sentence longer than ``max_line`` bytes is cut
there; a UBX length over ``max_ubx`` (16 KiB by default: u-blox's longest
navigation messages, NAV-SAT and RXM-RAWX of 255 satellites, are under 8.2 KiB)
is no message (its sync is garbage), so at most that is held waiting for the
rest of one. At the end of the stream a UBX message still incomplete comes out
as :class:`Truncated` when no other start follows its sync; otherwise its sync
was garbage and the scan goes on after it.
"""

from __future__ import annotations

from dataclasses import dataclass

UBX_SYNC = b"\xb5\x62"
UBX_HEADER = 6  # sync (2), class, id, length (2)


@dataclass(frozen=True, slots=True)
class Ubx:
    """One whole UBX message (sync to checksum), its checksum checked."""

    raw: bytes


@dataclass(frozen=True, slots=True)
class Sentence:
    """One NMEA sentence (``$`` to before CR/LF); ``cut`` when it ended early."""

    text: bytes
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Garbage:
    """A run of bytes that start neither a UBX message nor a sentence."""

    size: int
    bad_checksum: int = 0  # UBX syncs in it whose checksum failed


@dataclass(frozen=True, slots=True)
class Truncated:
    """The stream ended inside a UBX message (``size`` bytes of it held)."""

    size: int
    identity: str


Item = Ubx | Sentence | Garbage | Truncated


def checksum(body: bytes | bytearray | memoryview) -> bytes:
    """UBX's 8-bit Fletcher checksum (CK_A, CK_B) over class, id, length and payload."""
    a = b = 0
    for byte in bytes(body):
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return bytes((a, b))


def _sentence_header(buf: bytearray, i: int, n: int) -> bool | None:
    """Whether ``buf[i:]`` starts like a sentence (``$`` or ``!``, 3-8 upper-case letters or
    digits, then ``,`` or ``*``); ``None`` when the bytes held cannot tell yet."""
    j = i + 1
    while j < n and j - i - 1 <= 8 and (0x41 <= buf[j] <= 0x5A or 0x30 <= buf[j] <= 0x39):
        j += 1
    if j >= n:
        return None
    return 3 <= j - i - 1 <= 8 and buf[j] in (0x2C, 0x2A)


def _printable(byte: int) -> bool:
    return 0x20 <= byte < 0x7F


class StreamSplitter:
    """Bytes in (:meth:`feed`), :data:`Item` out, in stream order. ``nmea`` and ``ubx``
    choose what is recognised (the other's bytes are garbage)."""

    def __init__(
        self, *, nmea: bool = True, ubx: bool = True, max_line: int = 512, max_ubx: int = 16384
    ) -> None:
        self.nmea = nmea
        self.ubx = ubx
        self.max_line = max_line
        self.max_ubx = max_ubx
        self._buffer = bytearray()
        self._garbage = 0
        self._bad = 0
        self.bad_checksums = 0
        """UBX syncs whose message failed its checksum (the bytes went to garbage)."""

    def feed(self, data: bytes) -> list[Item]:
        """The items ``data`` completes (a message or sentence cut by the chunk's end waits)."""
        self._buffer += data
        out: list[Item] = []
        self._scan(out)
        return out

    def _scan(self, out: list[Item]) -> None:
        buf = self._buffer
        i = 0
        n = len(buf)
        while i < n:
            byte = buf[i]
            if self.ubx and byte == 0xB5:
                if i + 1 >= n:
                    break  # the sync's second byte has not come yet
                if buf[i + 1] == 0x62:
                    if i + UBX_HEADER > n:
                        break
                    length = buf[i + 4] | (buf[i + 5] << 8)
                    end = i + UBX_HEADER + length + 2
                    if length > self.max_ubx:
                        end = -1  # no message of ours: its sync is garbage
                    elif end > n:
                        break  # wait for the rest (at most max_ubx + 8 bytes)
                    if end > 0 and checksum(buf[i + 2 : end - 2]) == bytes(buf[end - 2 : end]):
                        self._flush_garbage(out)
                        out.append(Ubx(bytes(buf[i:end])))
                        i = end
                        continue
                    self.bad_checksums += 1
                    self._bad += 1
            if self.nmea and byte in (0x24, 0x21):  # '$', '!'
                header = _sentence_header(buf, i, n)
                if header is None:
                    break  # not enough bytes to tell yet
                if not header:
                    self._garbage += 1  # a '$' in binary data: no sentence starts here
                    i += 1
                    continue
                j = i + 1
                limit = min(n, i + self.max_line)
                while j < limit and _printable(buf[j]) and buf[j] not in (0x24, 0x21):
                    j += 1
                if j >= n:
                    break  # the sentence goes on in the next chunk
                self._flush_garbage(out)
                ended = buf[j] in (0x0D, 0x0A)
                out.append(Sentence(bytes(buf[i:j]), cut=not ended))
                i = j
                while ended and i < n and buf[i] in (0x0D, 0x0A):
                    i += 1
                continue
            if byte in (0x0D, 0x0A) and not self._garbage:
                i += 1  # line ends between items are no garbage
                continue
            self._garbage += 1
            i += 1
        del buf[:i]

    def flush(self) -> list[Item]:
        """At the end of the stream: what is held, as the last items."""
        out: list[Item] = []
        while self._buffer:
            buf = self._buffer
            if self.ubx and buf.startswith(UBX_SYNC):
                later = [k for k in (buf.find(UBX_SYNC, 1), buf.find(b"$", 1)) if k > 0]
                if not later and len(buf) >= 4:
                    self._flush_garbage(out)
                    out.append(Truncated(len(buf), f"0x{buf[2]:02X} 0x{buf[3]:02X}"))
                    self._buffer = bytearray()
                    break
                cut = min(later) if later else len(buf)
                self._garbage += cut  # a false sync: its bytes are garbage
                del buf[:cut]
                self._scan(out)
                continue
            if self.nmea and buf[:1] in (bytearray(b"$"), bytearray(b"!")):
                if not _sentence_header(buf + b"\n", 0, len(buf) + 1):
                    self._garbage += 1  # a '$' the stream ended before an address followed
                    del buf[:1]
                    self._scan(out)
                    continue
                self._flush_garbage(out)
                out.append(Sentence(bytes(buf).rstrip(b"\r\n"), cut=False))
                self._buffer = bytearray()
                break
            self._garbage += len(buf.strip(b"\r\n"))
            self._buffer = bytearray()
        self._flush_garbage(out)
        return out

    def _flush_garbage(self, out: list[Item]) -> None:
        if self._garbage:
            out.append(Garbage(self._garbage, self._bad))
        self._garbage = 0
        self._bad = 0
