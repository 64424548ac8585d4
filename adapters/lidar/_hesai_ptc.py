"""Hesai's PTC (Pandar TCP Commands), sans I/O: requests out, replies in, bytes only.

The framing is PTC 1.0 as tier4/nebula speaks it (``hesai_hw_interface.cpp``:
``send_receive``) and Hesai's SDK encodes it (``PTCHeader_1_0``): an 8-byte
header, then the payload.

========  ====================================================================
byte      request / reply
========  ====================================================================
0-1       ``47 74`` (``G t``)
2         the command (``0x05``: the angle-correction file)
3         request ``00``; reply: the return code (``00``: done)
4-7       the payload's length, big-endian (u32)
========  ====================================================================

A reply's length is checked against a limit before anything is allocated for it;
every malformed reply is a :class:`PtcError` saying what was expected.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from adapters._side_files import CALIBRATION_LIMIT
from adapters.errors import DecodeError

PTC_PORT = 9347
"""The sensor's PTC TCP port (nebula's ``g_pandar_tcp_command_port``)."""
MAGIC = b"\x47\x74"
HEADER = 8
GET_CALIBRATION = 0x05
"""Command: the angle-correction file (CSV; the AT128's ``.dat``), nebula's
``g_ptc_command_get_lidar_calibration``."""
MAX_PAYLOAD = CALIBRATION_LIMIT
"""The longest reply payload read by default (4 MiB; an angle file is under 64 kB)."""

COMMANDS: dict[int, str] = {
    0x05: "get angle correction",
    0x07: "get inventory",
    0x08: "get config",
    0x09: "get status",
}
RETURN_CODES: dict[int, str] = {
    0x00: "no error",
    0x01: "invalid input parameter",
    0x02: "failed to connect to the server",
    0x03: "invalid data",
    0x04: "out of memory",
    0x05: "unsupported command",
    0x06: "FPGA communication failed",
    0x07: "other error",
}
"""Return codes (byte 3 of a reply), as nebula names them (``g_ptc_error_code_*``)."""


class PtcError(DecodeError):
    """A PTC reply that is malformed, or that refuses the command (its return code)."""


def command_name(command: int) -> str:
    name = COMMANDS.get(command)
    return f"0x{command:02X}" + (f" ({name})" if name else "")


def encode_request(command: int, payload: bytes = b"") -> bytes:
    """A PTC request: the header (return-code byte ``00``) and ``payload``."""
    if not 0 <= command <= 0xFF:
        raise ValueError(f"a PTC command is one byte, got {command}")
    return MAGIC + struct.pack(">BBI", command, 0, len(payload)) + payload


@dataclass(frozen=True)
class PtcReply:
    """One reply: the command it answers, its return code, its payload."""

    command: int
    code: int
    payload: bytes

    @property
    def ok(self) -> bool:
        return self.code == 0

    def refusal(self) -> str:
        """What a non-zero return code says (empty when ``ok``)."""
        if self.ok:
            return ""
        name = RETURN_CODES.get(self.code, "a code PTC 1.0 does not define")
        what = command_name(self.command)
        return f"the sensor refused {what}: return code 0x{self.code:02X} ({name})"


def parse_header(header: bytes, *, what: str = "PTC reply") -> tuple[int, int, int]:
    """(command, return code, payload length) of an 8-byte header; :class:`PtcError`
    if it does not start ``47 74``."""
    if len(header) != HEADER:
        raise PtcError(f"{what}: header of {len(header)} bytes, expected {HEADER}")
    if header[:2] != MAGIC:
        raise PtcError(f"{what}: starts {header[:2].hex(' ')}, not 47 74 (a Hesai PTC header)")
    command, code, length = struct.unpack(">BBI", header[2:])
    return command, code, length


class ReplyReader:
    """Assembles the reply to ``command`` from the bytes of a stream, as they come.

    :meth:`feed` returns the :class:`PtcReply` once its last byte is in (None
    before) and raises :class:`PtcError` as soon as the bytes cannot be that reply:
    a header not ``47 74``, a reply to another command, a payload longer than
    ``limit`` (checked from the header, before the payload is gathered), or bytes
    after the reply's end. A refusing return code is a reply, not an error here."""

    def __init__(self, command: int, *, limit: int = MAX_PAYLOAD) -> None:
        self.command, self.limit = command, limit
        self._buffer = bytearray()
        self._length: int | None = None
        self._code = 0
        self.received = 0
        """Bytes fed so far."""

    @property
    def needed(self) -> int:
        """Bytes still to come before the reply is whole (at least the header's)."""
        if self._length is None:
            return HEADER - len(self._buffer)
        return self._length - len(self._buffer)

    def feed(self, data: bytes) -> PtcReply | None:
        self.received += len(data)
        if self._length is None:
            take = HEADER - len(self._buffer)
            self._buffer += data[:take]
            data = data[take:]
            if len(self._buffer) < HEADER:
                return None
            self._header(bytes(self._buffer))
            self._buffer = bytearray()
        assert self._length is not None
        room = self._length - len(self._buffer)
        if len(data) > room:
            raise PtcError(
                f"PTC reply to {command_name(self.command)}: {len(data) - room} bytes after "
                f"its {self._length}-byte payload"
            )
        self._buffer += data
        if len(self._buffer) < self._length:
            return None
        return PtcReply(self.command, self._code, bytes(self._buffer))

    def _header(self, header: bytes) -> None:
        command, code, length = parse_header(header)
        if command != self.command:
            raise PtcError(
                f"PTC reply to {command_name(command)}, but {command_name(self.command)} was asked"
            )
        if length > self.limit:
            raise PtcError(
                f"PTC reply to {command_name(command)}: a payload of {length:,} bytes, over "
                f"the {self.limit:,}-byte limit"
            )
        self._length, self._code = length, code

    def ended(self) -> str:
        """Why a stream that ends now has not given the whole reply."""
        if self._length is None:
            return f"the connection closed after {len(self._buffer)} of the {HEADER} header bytes"
        return (
            f"the connection closed after {len(self._buffer):,} of the {self._length:,} "
            f"payload bytes"
        )


def parse_reply(data: bytes, command: int, *, limit: int = MAX_PAYLOAD) -> PtcReply:
    """The whole reply to ``command`` in ``data``, exactly (see :class:`ReplyReader`)."""
    reader = ReplyReader(command, limit=limit)
    reply = reader.feed(data)
    if reply is None:
        raise PtcError(f"PTC reply to {command_name(command)}: {reader.ended()}")
    return reply


def parse_request(data: bytes, *, limit: int = MAX_PAYLOAD) -> tuple[int, bytes]:
    """(command, payload) of one whole request (a sensor's side; for test servers)."""
    command, code, length = parse_header(data[:HEADER], what="PTC request")
    if code != 0:
        raise PtcError(f"PTC request: byte 3 is 0x{code:02X}, expected 00")
    if length > limit or len(data) != HEADER + length:
        raise PtcError(f"PTC request: {len(data) - HEADER} payload bytes, the header says {length}")
    return command, bytes(data[HEADER:])


def encode_reply(command: int, payload: bytes = b"", code: int = 0) -> bytes:
    """A reply (a sensor's side; for test servers)."""
    return MAGIC + struct.pack(">BBI", command, code, len(payload)) + payload
