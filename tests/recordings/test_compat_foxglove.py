"""recordings/outputs/live/_compat_foxglove.py against the installed foxglove-sdk: the release
is one it was checked against, and the real SDK, made to drop messages for a client that
does not read, says so in the record the relay listens for."""

from __future__ import annotations

import json
import logging
import socket
import time

from recordings.outputs.live import _compat_foxglove as compat
from recordings.outputs.live import _websocket as ws
from tests.compat import assert_checked_release


def test_foxglove_sdk_is_a_release_the_compat_module_was_checked_against() -> None:
    assert_checked_release(compat)


def test_the_record_is_parsed_as_the_sdk_words_it() -> None:
    assert compat.dropped_for("outbox for client 127.0.0.1:5000 full") == "127.0.0.1:5000"
    assert compat.dropped_for("outbox for client [::1]:7 full") == "[::1]:7"
    assert compat.dropped_for("client 127.0.0.1:5000 disconnected") is None


class _Heard(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.addresses: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        address = compat.dropped_for(record.getMessage())
        if address is not None:
            self.addresses.append(address)


def _read_until(sock: socket.socket, reader: ws.FrameReader, op: str) -> dict[str, object]:
    """The first JSON message with ``op`` (the server's serverInfo, advertise...)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for message in reader.feed(sock.recv(1 << 16)):
            if message.opcode == ws.TEXT:
                body = json.loads(bytes(message.payload))
                if body.get("op") == op:
                    return dict(body)
    raise AssertionError(f"no {op!r} message from the SDK within 10 s")


def test_the_sdk_logs_its_drops_for_a_client_that_does_not_read() -> None:
    """A subscriber that stops reading (a small receive buffer): the SDK's outbox for it
    fills, the SDK drops, and :data:`DROP_LOGGER` carries ``outbox for client ADDR full``
    with that subscriber's address, as :func:`dropped_for` reads it."""
    import foxglove

    logger = logging.getLogger(compat.DROP_LOGGER)
    heard = _Heard()
    level = logger.level
    logger.setLevel(logging.INFO)  # pyo3-log asks Python's level before it formats
    logger.addHandler(heard)
    context = foxglove.Context()
    server = foxglove.start_server(
        name="compat", host="127.0.0.1", port=0, context=context, message_backlog_size=4
    )
    channel = foxglove.Channel("/big", message_encoding="json", context=context)
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(10)
        sock.connect(("127.0.0.1", int(server.port)))
        request, _ = ws.upgrade_request("127.0.0.1", int(server.port))
        sock.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(1)
        assert answer.startswith(b"HTTP/1.1 101"), answer[:80]
        assert b"foxglove.sdk.v1" in answer, answer  # the subprotocol the SDK answers
        reader = ws.FrameReader(limit=1 << 24, masked=False)
        advertised = _read_until(sock, reader, "advertise")
        (cid,) = [c["id"] for c in advertised["channels"]]  # type: ignore[union-attr]
        subscribe = {"op": "subscribe", "subscriptions": [{"id": 1, "channelId": cid}]}
        sock.sendall(ws.masked(ws.TEXT, json.dumps(subscribe).encode()))
        address = "{}:{}".format(*sock.getsockname()[:2])
        blob = {"data": "x" * (256 << 10)}
        deadline = time.monotonic() + 20
        while address not in heard.addresses and time.monotonic() < deadline:
            for _ in range(64):
                channel.log(blob)
            time.sleep(0.01)
        assert address in heard.addresses, (
            f"foxglove-sdk never logged 'outbox for client {address} full' on "
            f"{compat.DROP_LOGGER!r}: re-check {compat.__name__}"
        )
    finally:
        sock.close()
        server.stop()
        logger.removeHandler(heard)
        logger.setLevel(level)


def test_the_unknown_channel_status_is_parsed_as_the_sdk_words_it() -> None:
    assert compat.unknown_channel("Unknown channel ID: 94") == 94
    assert compat.unknown_channel("Unknown channel ID: 94 (retry)") is None
    assert compat.unknown_channel("Client 1.2.3.4:5 attempted to subscribe") is None


def test_the_sdk_answers_a_subscribe_to_a_channel_it_does_not_know_with_that_status() -> None:
    """The status the relay resubscribes on (:func:`unknown_channel`): what the real SDK
    says to a subscribe for a channel it does not know, read back by the parser."""
    import foxglove

    context = foxglove.Context()
    server = foxglove.start_server(name="compat", host="127.0.0.1", port=0, context=context)
    sock = socket.create_connection(("127.0.0.1", int(server.port)), timeout=10)
    try:
        request, _ = ws.upgrade_request("127.0.0.1", int(server.port))
        sock.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(1)
        reader = ws.FrameReader(limit=1 << 24, masked=False)
        _read_until(sock, reader, "serverInfo")
        subscribe = {"op": "subscribe", "subscriptions": [{"id": 7, "channelId": 987_654}]}
        sock.sendall(ws.masked(ws.TEXT, json.dumps(subscribe).encode()))
        status = _read_until(sock, reader, "status")
        assert compat.unknown_channel(str(status["message"])) == 987_654, (
            f"foxglove-sdk answered {status!r}: re-check {compat.__name__}"
        )
    finally:
        sock.close()
        server.stop()
