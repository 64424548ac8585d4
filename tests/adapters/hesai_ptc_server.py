"""A Hesai sensor's PTC side on loopback TCP, for tests: answers each request with
the bytes it is told to (framed here with struct, as nebula's mock sensor frames them,
not with the codec under test), or misbehaves as told."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class PtcServer:
    """What to answer: ``payload`` with return ``code``; ``raw`` replaces the whole reply;
    ``silent`` reads the request and never answers. ``requests`` collects (command,
    return-code byte, payload) of each request received."""

    payload: bytes = b""
    code: int = 0
    raw: bytes | None = None
    silent: bool = False
    requests: list[tuple[int, int, bytes]] = field(default_factory=list)
    port: int = 0

    def _serve(self, listener: socket.socket, stop: threading.Event) -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            with client:
                client.settimeout(5)
                header = _exactly(client, 8)
                if len(header) < 8:
                    continue
                magic, command, code, length = struct.unpack(">2sBBI", header)
                assert magic == b"Gt", header
                self.requests.append((command, code, _exactly(client, length)))
                if self.silent:
                    stop.wait(10)
                    continue
                reply = self.raw
                if reply is None:
                    reply = struct.pack(">2sBBI", b"Gt", command, self.code, len(self.payload))
                    reply += self.payload
                client.sendall(reply)


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


@contextmanager
def ptc_server(server: PtcServer) -> Iterator[PtcServer]:
    """``server`` listening on a free loopback port (``server.port``) while the block runs."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    server.port = listener.getsockname()[1]
    stop = threading.Event()
    thread = threading.Thread(target=server._serve, args=(listener, stop), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=15)
        listener.close()
