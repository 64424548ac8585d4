"""RFC 6455 pieces the live relay needs, with no I/O: the upgrade handshake, frame headers,
and an incremental frame reader with a size limit.

The relay is a WebSocket server towards Foxglove clients (it answers their upgrade and reads
their masked frames) and a WebSocket client towards foxglove-sdk's private server (it sends
an upgrade and masked frames). Everything here takes bytes and returns bytes or events.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from dataclasses import dataclass

SUBPROTOCOLS = ("foxglove.websocket.v1", "foxglove.sdk.v1")
"""The Foxglove protocol names a client may ask for (the app offers both; the SDK 0.30
answers only the second)."""
MAX_REQUEST = 16 << 10
"""Bytes an upgrade request may have before it is refused."""
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0


class BadRequest(Exception):
    """An upgrade request the relay refuses: ``status`` and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ProtocolError(Exception):
    """A peer broke RFC 6455 (or sent a frame over the limit): the connection ends."""


def parse_upgrade(request: bytes) -> tuple[str, str]:
    """The ``Sec-WebSocket-Key`` and the Foxglove subprotocol of an upgrade ``request``
    (everything up to and including the blank line); :class:`BadRequest` if it is not one."""
    try:
        text = request.decode("latin-1")
    except UnicodeDecodeError as err:  # pragma: no cover - latin-1 decodes every byte
        raise BadRequest(400, "the request is not text") from err
    line, _, rest = text.partition("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, f"expected a WebSocket upgrade (GET ... HTTP/1.1), got {line[:80]!r}")
    headers: dict[str, str] = {}
    for header in rest.split("\r\n"):
        name, sep, value = header.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    if "websocket" not in headers.get("upgrade", "").lower():
        raise BadRequest(426, "this is a Foxglove WebSocket server: connect with ws://")
    key = headers.get("sec-websocket-key", "")
    try:
        if len(base64.b64decode(key, validate=True)) != 16:
            raise ValueError(key)
    except ValueError:
        raise BadRequest(400, "Sec-WebSocket-Key is missing or not 16 bytes in base64") from None
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
    protocol = next((p for p in offered if p in SUBPROTOCOLS), None)
    if protocol is None:
        raise BadRequest(
            400, f"no supported subprotocol offered (expected one of {', '.join(SUBPROTOCOLS)})"
        )
    return key, protocol


def accept(key: str, protocol: str) -> bytes:
    """The ``101 Switching Protocols`` answer to an upgrade with ``key``."""
    digest = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
    return (
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Accept: {digest}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n"
    ).encode()


def refusal(status: int, reason: str) -> bytes:
    """An HTTP answer that refuses a connection, ``reason`` as its plain-text body."""
    titles = {400: "Bad Request", 426: "Upgrade Required", 503: "Service Unavailable"}
    body = (reason + "\n").encode()
    return (
        f"HTTP/1.1 {status} {titles.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def upgrade_request(host: str, port: int) -> tuple[bytes, str]:
    """A client's upgrade request (both Foxglove subprotocols offered) and its key."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Protocol: {', '.join(reversed(SUBPROTOCOLS))}\r\n\r\n"
    ).encode()
    return request, key


def header(opcode: int, size: int) -> bytes:
    """The header of a final, unmasked frame (server to client) of ``size`` payload bytes."""
    if size < 126:
        return bytes((0x80 | opcode, size))
    if size < 1 << 16:
        return struct.pack("!BBH", 0x80 | opcode, 126, size)
    return struct.pack("!BBQ", 0x80 | opcode, 127, size)


def frame(opcode: int, payload: bytes) -> bytes:
    """A whole unmasked frame."""
    return header(opcode, len(payload)) + payload


def masked(opcode: int, payload: bytes) -> bytes:
    """A whole masked frame (client to server)."""
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    mask = os.urandom(4)
    return head + mask + _unmask(payload, mask)


def _unmask(data: bytes | bytearray | memoryview, mask: bytes) -> bytes:
    n = len(data)
    if n == 0:
        return b""
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "little")
    return (int.from_bytes(data, "little") ^ key).to_bytes(n, "little")


@dataclass(frozen=True, slots=True)
class Message:
    """One whole WebSocket message: its opcode and payload (a read-only view)."""

    opcode: int
    payload: memoryview


class FrameReader:
    """Feeds bytes in, takes whole messages out; frames over ``limit`` bytes raise
    :class:`ProtocolError`. ``masked`` says what the peer must send (clients mask)."""

    def __init__(self, *, limit: int, masked: bool) -> None:
        self.limit = limit
        self.masked = masked
        self._buf = bytearray()
        self._target: bytearray | None = None  # a big payload, filled in place
        self._filled = 0
        self._head: tuple[int, bool, bytes] = (0, True, b"")
        self._parts: list[bytes] = []
        self._part_op = 0

    def feed(self, data: bytes) -> list[Message]:
        out: list[Message] = []
        view = memoryview(data)
        while view.nbytes:
            if self._target is not None:
                take = min(len(self._target) - self._filled, view.nbytes)
                self._target[self._filled : self._filled + take] = view[:take]
                self._filled += take
                view = view[take:]
                if self._filled == len(self._target):
                    payload, self._target = self._target, None
                    self._done(payload, out)
                continue
            self._buf += view
            view = memoryview(b"")
            while self._target is None and self._parse_one(out):
                pass
        return out

    def _parse_one(self, out: list[Message]) -> bool:
        buf = self._buf
        if len(buf) < 2:
            return False
        b0, b1 = buf[0], buf[1]
        if b0 & 0x70:
            raise ProtocolError("reserved bits set (no extension was agreed)")
        is_masked = bool(b1 & 0x80)
        if is_masked != self.masked:
            raise ProtocolError("client frames must be masked" if self.masked else "masked frame")
        size = b1 & 0x7F
        at = 2
        if size == 126:
            if len(buf) < 4:
                return False
            size = int.from_bytes(buf[2:4], "big")
            at = 4
        elif size == 127:
            if len(buf) < 10:
                return False
            size = int.from_bytes(buf[2:10], "big")
            at = 10
        if size > self.limit:
            raise ProtocolError(f"a {size}-byte frame is over the {self.limit}-byte limit")
        mask = b""
        if is_masked:
            if len(buf) < at + 4:
                return False
            mask = bytes(buf[at : at + 4])
            at += 4
        self._head = (b0 & 0x0F, bool(b0 & 0x80), mask)
        if len(buf) >= at + size:
            payload = bytearray(buf[at : at + size])
            del buf[: at + size]
            self._done(payload, out)
            return True
        # a payload still coming: fill it in place (no buffer growth, no second copy)
        self._target = bytearray(size)
        have = len(buf) - at
        self._target[:have] = buf[at:]
        self._filled = have
        del buf[:]
        return False

    def _done(self, payload: bytearray, out: list[Message]) -> None:
        opcode, final, mask = self._head
        data: bytes | bytearray = _unmask(payload, mask) if mask else payload
        if opcode >= 0x8:  # control frames are never fragmented
            out.append(Message(opcode, memoryview(bytes(data))))
            return
        if opcode != CONTINUATION:
            self._part_op, self._parts = opcode, []
        elif not self._part_op:
            raise ProtocolError("a continuation frame with nothing to continue")
        if final and not self._parts:
            out.append(Message(self._part_op, memoryview(data).toreadonly()))
            self._part_op = 0
            return
        self._parts.append(bytes(data))
        if sum(len(p) for p in self._parts) > self.limit:
            raise ProtocolError(f"a message over the {self.limit}-byte limit")
        if final:
            out.append(Message(self._part_op, memoryview(b"".join(self._parts))))
            self._parts, self._part_op = [], 0
