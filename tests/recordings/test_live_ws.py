"""The live relay's RFC 6455 pieces: frames survive any split of the byte stream, the
upgrade answer is the one the RFC's example gives, bad requests are refused with a reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recordings.outputs.live import _websocket as ws

_payloads = st.lists(
    st.tuples(st.sampled_from([ws.TEXT, ws.BINARY, ws.PING]), st.binary(max_size=70_000)),
    max_size=6,
)


def _feed_split(reader: ws.FrameReader, stream: bytes, cuts: list[int]) -> list[ws.Message]:
    out: list[ws.Message] = []
    at = 0
    for cut in [*sorted({c % (len(stream) + 1) for c in cuts}), len(stream)]:
        out += reader.feed(stream[at:cut])
        at = cut
    return out


@given(_payloads, st.lists(st.integers(min_value=0), max_size=8), st.booleans())
def test_frames_read_back_whatever_the_split(
    messages: list[tuple[int, bytes]], cuts: list[int], masked: bool
) -> None:
    make = ws.masked if masked else ws.frame
    stream = b"".join(make(op, body[:125] if op == ws.PING else body) for op, body in messages)
    got = _feed_split(ws.FrameReader(limit=1 << 20, masked=masked), stream, cuts)
    want = [(op, body[:125] if op == ws.PING else body) for op, body in messages]
    assert [(m.opcode, bytes(m.payload)) for m in got] == want


def test_a_fragmented_message_is_joined_and_a_frame_over_the_limit_refused() -> None:
    first = bytes((ws.TEXT, 2)) + b"ab"  # FIN clear
    last = bytes((0x80 | ws.CONTINUATION, 1)) + b"c"
    (message,) = ws.FrameReader(limit=10, masked=False).feed(first + last)
    assert (message.opcode, bytes(message.payload)) == (ws.TEXT, b"abc")
    with pytest.raises(ws.ProtocolError, match="a 11-byte frame is over the 10-byte limit"):
        ws.FrameReader(limit=10, masked=False).feed(ws.frame(ws.BINARY, b"x" * 11))
    with pytest.raises(ws.ProtocolError, match="client frames must be masked"):
        ws.FrameReader(limit=10, masked=True).feed(ws.frame(ws.TEXT, b"x"))


def test_the_upgrade_answer_is_the_rfc_example() -> None:
    request = (
        b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Protocol: foxglove.sdk.v1, foxglove.websocket.v1\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"
    )
    key, protocol = ws.parse_upgrade(request)
    assert protocol == "foxglove.sdk.v1"  # the client's first choice we speak
    # RFC 6455 section 1.3: this key's accept value
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in ws.accept(key, protocol)


@pytest.mark.parametrize(
    ("request_", "status", "reason"),
    [
        (b"GET / HTT\r\n\r\n", 400, "expected a WebSocket upgrade"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 426, "connect with ws://"),
        (b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", 400, "Sec-WebSocket-Key is missing"),
        (
            b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="
            b"\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
            400,
            "no supported subprotocol offered",
        ),
    ],
)
def test_a_bad_upgrade_is_refused_with_a_reason(request_: bytes, status: int, reason: str) -> None:
    with pytest.raises(ws.BadRequest, match=reason) as caught:
        ws.parse_upgrade(request_)
    assert caught.value.status == status
    answer = ws.refusal(status, caught.value.reason)
    assert answer.startswith(f"HTTP/1.1 {status} ".encode())
    assert answer.endswith((caught.value.reason + "\n").encode())
