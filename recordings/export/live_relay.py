"""Per-client flow control for the live view: a relay that counts what a slow client loses.

Why. ``foxglove-sdk`` 0.30 queues each message per client and, when a client
stops reading, drops that client's oldest messages (``send_lossy`` in
``rust/foxglove/src/websocket/connected_client/send_lossy.rs``): the number
dropped is returned and thrown away, and the only trace is one INFO record
``outbox for client ADDR full``, throttled to one every 30 s for the whole
process (a stalled client losing thousands of messages logs once). No
callback, statistic or status message carries the count, so it cannot be
counted from the SDK.

How. The SDK's server listens on a private loopback port; :class:`Relay`
listens on the address the user asked for and, per client, connects to the
SDK and relays both ways. Client to server, bytes are copied as they are (the
handshake, masked frames). Server to client, a reader takes the SDK's
WebSocket frames (RFC 6455 framing, unmasked) as fast as the SDK writes them
into an outbox; a writer sends the outbox to the client. When the client falls
behind and the outbox holds ``backlog`` message-data frames (the Foxglove
protocol's binary opcode 0x01) or ``backlog_bytes``, the oldest message-data
frame is dropped and **counted** for that client (:class:`ClientTraffic`).
Control frames (advertise, status, close...) are never dropped.

The SDK's own queue for the relay drains at the speed of a loopback read, so it
does not overflow while the relay runs. Should it ever (the relay's reader
starved of CPU), the SDK's throttled record names the relay's own upstream
address: the relay watches for it and marks that client's count a lower bound
(:attr:`ClientTraffic.exact` false) rather than claiming it exact.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import threading
from collections import deque
from dataclasses import dataclass
from typing import IO

SDK_DROP_LOGGER = "foxglove.websocket.connected_client.send_lossy"
"""The logger the SDK's ``outbox for client ADDR full`` record reaches through pyo3-log."""
_SDK_DROP = re.compile(r"outbox for client (\S+) full")
_MESSAGE_DATA = 0x01  # Foxglove protocol: first byte of a binary message-data frame
_BINARY_FINAL = 0x82  # FIN + opcode 2, no RSV bits
_CONTROL_LIMIT = 4096  # control frames queued for one client before it is disconnected
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ClientTraffic:
    """What one client of the live view got and lost."""

    address: str
    """The client's ``host:port``."""
    received: int
    """Messages (message-data frames) the SDK sent towards it: ``sent + dropped + queued``."""
    sent: int
    """Messages (message-data frames) written to its socket."""
    dropped: int
    """Messages dropped because it did not read them fast enough (oldest first)."""
    queued: int
    """Messages waiting in its outbox (or being written) now; once disconnected, those it
    never got."""
    connected: bool
    """Still connected."""
    exact: bool = True
    """False if the SDK's own queue towards the relay also overflowed (uncounted by the SDK):
    then ``dropped`` is a lower bound."""
    via: str = ""
    """The relay's own ``host:port`` towards the SDK: the address the SDK's log lines name."""

    @property
    def at_least(self) -> int:
        """``dropped``, plus the one message the SDK's overflow record proves when not exact."""
        return self.dropped if self.exact else self.dropped + 1

    def describe(self) -> str:
        """``ADDR: N dropped`` (``ADDR: at least N dropped`` when not exact)."""
        bound = "" if self.exact else " at least"
        return f"{self.address}:{bound} {self.at_least} dropped"


class _Link:
    """One client: three threads (client->SDK bytes, SDK frames -> outbox, outbox -> client)."""

    def __init__(self, client: socket.socket, upstream: socket.socket, relay: Relay) -> None:
        self.client = client
        self.upstream = upstream
        peer = client.getpeername()
        self.address = f"{peer[0]}:{peer[1]}"
        local = upstream.getsockname()
        self.upstream_address = f"{local[0]}:{local[1]}"
        self._relay = relay
        self._cond = threading.Condition()
        self._outbox: deque[tuple[bytes, bool]] = deque()  # (frame, is message data)
        self._data = self._bytes = self._control = 0
        self.received = self.sent = self.dropped = 0
        self.exact = True
        self.connected = True
        self._eof = False
        self._done = False  # the writer ended
        self._threads = [
            threading.Thread(target=self._up, name="foxglove-relay-up", daemon=True),
            threading.Thread(target=self._read, name="foxglove-relay-read", daemon=True),
            threading.Thread(target=self._write, name="foxglove-relay-write", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def traffic(self) -> ClientTraffic:
        with self._cond:
            queued = self.received - self.sent - self.dropped
            return ClientTraffic(
                self.address,
                self.received,
                self.sent,
                self.dropped,
                queued,
                self.connected,
                self.exact,
                self.upstream_address,
            )

    def shutdown(self) -> None:
        """Disconnect both sides (unblocks every thread)."""
        with self._cond:
            self.connected = False
            self._eof = True
            self._cond.notify_all()
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def finish(self, timeout: float) -> None:
        """Let the writer send what is queued (the SDK's close frame) for up to ``timeout`` s,
        then disconnect."""
        with self._cond:
            self._cond.wait_for(lambda: self._done, timeout)
        self.shutdown()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)
        self.client.close()
        self.upstream.close()

    # -- client -> SDK: bytes as they come --------------------------------------------------

    def _up(self) -> None:
        try:
            while chunk := self.client.recv(_CHUNK):
                self.upstream.sendall(chunk)
        except OSError:
            pass
        self.shutdown()

    # -- SDK -> outbox: whole frames, as fast as the SDK writes them ------------------------------

    def _read(self) -> None:
        stream = io.BufferedReader(socket.SocketIO(self.upstream, "rb"), _CHUNK)
        try:
            handshake = b""
            while not handshake.endswith(b"\r\n\r\n"):  # the HTTP upgrade answer
                line = stream.readline()
                if not line:
                    raise EOFError
                handshake += line
            self._push(handshake, data=False)
            while True:
                frame, data = _read_frame(stream)
                if not self._push(frame, data):
                    self.shutdown()  # as the SDK does when its control queue is full
                    break
        except (OSError, EOFError):
            pass
        finally:
            stream.close()
        with self._cond:
            self._eof = True  # the writer sends what is queued, then ends
            self._cond.notify_all()

    def _push(self, frame: bytes, data: bool) -> bool:
        """Queue ``frame``, dropping the oldest message data to make room; False when the
        client holds too many control frames to go on."""
        with self._cond:
            if not self.connected:
                return True  # the link is closing: nobody to send it to
            if data:
                while self._data and (
                    self._data >= self._relay.backlog
                    or self._bytes + len(frame) > self._relay.backlog_bytes
                ):
                    self._drop_oldest()
                self._data += 1
                self.received += 1
            else:
                self._control += 1
                if self._control > _CONTROL_LIMIT:
                    return False
            self._bytes += len(frame)
            self._outbox.append((frame, data))
            self._cond.notify()
            return True

    def _drop_oldest(self) -> None:
        for i, (frame, data) in enumerate(self._outbox):
            if data:
                del self._outbox[i]
                self._data -= 1
                self._bytes -= len(frame)
                self.dropped += 1
                return

    # -- outbox -> client ------------------------------------------------------------------

    def _write(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._outbox and not self._eof:
                        self._cond.wait()
                    if not self._outbox:
                        break
                    frame, data = self._outbox.popleft()
                    self._bytes -= len(frame)
                    if data:
                        self._data -= 1
                    else:
                        self._control -= 1
                self.client.sendall(frame)
                if data:
                    with self._cond:
                        self.sent += 1
        except OSError:
            pass
        with self._cond:
            self._done = True
            self._cond.notify_all()
        self.shutdown()


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data


def _read_frame(stream: IO[bytes]) -> tuple[bytes, bool]:
    """One WebSocket frame as it came, and whether it is a Foxglove message-data frame."""
    head = _read_exact(stream, 2)
    size = head[1] & 0x7F
    if size == 126:
        ext = _read_exact(stream, 2)
        size = int.from_bytes(ext, "big")
    elif size == 127:
        ext = _read_exact(stream, 8)
        size = int.from_bytes(ext, "big")
    else:
        ext = b""
    masked = bool(head[1] & 0x80)
    mask = _read_exact(stream, 4) if masked else b""
    payload = _read_exact(stream, size)
    data = head[0] == _BINARY_FINAL and not masked and size > 0 and payload[0] == _MESSAGE_DATA
    return b"".join((head, ext, mask, payload)), data


class Relay:
    """Listens on ``host:port`` and relays each client to the SDK's server at ``upstream``."""

    def __init__(
        self, host: str, port: int, upstream: tuple[str, int], *, backlog: int, backlog_bytes: int
    ) -> None:
        self.backlog = backlog
        self.backlog_bytes = backlog_bytes
        self.upstream = upstream
        """The SDK's server (set before :meth:`start`)."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._closed = False
        self._watch = _SdkDropWatch(self)
        self._thread = threading.Thread(target=self._accept, name="foxglove-relay", daemon=True)

    def start(self) -> None:
        self._watch.install()
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                upstream = socket.create_connection(self.upstream)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                client.close()
                continue
            link = _Link(client, upstream, self)
            with self._lock:
                if self._closed:
                    link.shutdown()
                    link.join(1)
                    return
                self._links.append(link)
            link.start()

    def traffic(self) -> tuple[ClientTraffic, ...]:
        """Every client since the start, connected or not, in connection order."""
        with self._lock:
            links = list(self._links)
        return tuple(link.traffic() for link in links)

    def sdk_dropped(self, address: str) -> None:
        """The SDK said its queue towards ``address`` overflowed: if that is a relay link, its
        count is a lower bound from now on."""
        with self._lock:
            links = list(self._links)
        for link in links:
            if link.upstream_address == address:
                with link._cond:
                    link.exact = False

    def close(self, linger: float = 0.2) -> None:
        """Stop accepting and disconnect every client, after up to ``linger`` s to send
        what is queued (call it after the SDK's server stopped: its close frames)."""
        with self._lock:
            self._closed = True
            links = list(self._links)
        self._listener.close()
        for link in links:
            link.finish(linger)
        for link in links:
            link.join(2)
        if self._thread.is_alive():
            self._thread.join(2)
        self._watch.uninstall()


class _SdkDropWatch(logging.Handler):
    """Hears the SDK's ``outbox for client ADDR full`` record (INFO, pyo3-log) for a relay."""

    def __init__(self, relay: Relay) -> None:
        super().__init__(logging.INFO)
        self._relay = relay
        self._logger = logging.getLogger(SDK_DROP_LOGGER)

    def install(self) -> None:
        if self._logger.getEffectiveLevel() > logging.INFO:
            self._logger.setLevel(logging.INFO)  # pyo3-log asks Python before it formats
        self._logger.addHandler(self)

    def uninstall(self) -> None:
        self._logger.removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        match = _SDK_DROP.search(record.getMessage())
        if match is not None:
            self._relay.sdk_dropped(match[1])
