"""The live view's front door: one thread that fans foxglove-sdk's messages out to every
Foxglove client, within a memory budget, a client limit and timeouts.

Why. foxglove-sdk 0.30 serves each client itself: it keeps an idle or half-open connection
for ever (its ``stop()`` then waits on it), counts nothing it drops for a slow client
(``send_lossy`` throws the count away), has no overall memory bound, no client limit, and
cannot send a late subscriber the messages it missed. So the SDK listens on a private
loopback port with one client, this relay, and the relay is the server the world sees.

How. :class:`Relay` runs one ``selectors`` loop on one thread, every socket non-blocking:

* upstream, one WebSocket connection to the SDK (``foxglove.websocket.v1``), subscribed to
  a channel while at least one client is: each message is read once and its payload shared
  by every client's outbox (a stalled client holds references, not copies);
* downstream, each client goes ``handshake`` (its upgrade request within
  ``handshake_timeout`` s, else closed) -> ``open`` (serverInfo and every channel
  advertised, then its subscriptions served). A client that sends nothing, not even the
  pong to our ping, for ``idle_timeout`` s is closed. Clients beyond ``max_clients`` are
  answered ``503`` with the reason and closed;
* each client's outbox holds at most ``backlog`` messages and its share of ``budget``
  (the budget over the clients connected, at most ``backlog_bytes``), so all outboxes
  together stay within the budget: over its share a client drops its oldest message,
  counted for that client (:class:`ClientTraffic`). Messages are written by the loop, up
  to 64 per ``sendmsg``; a client whose socket is full waits for it to be writable.
  Control messages (advertise, status) are never dropped; a client with 4,096 of them
  queued is closed;
* Foxglove's playback control (a replay's pause, play, speed, seek): a client's request
  (binary opcode 3) goes to the SDK, whose listener answers with the playback state
  (binary opcode 5), which every client gets, as the ``time`` messages;
* late subscribers: the last message of every channel (every message of a latched channel,
  ``/tf_static`` and ``transient_local`` topics, up to 256), if under ``budget / 16``,
  is kept (all together under ``budget / 4``) and sent to each new subscriber first;
* a reset, an ``accept`` failure (``EMFILE`` included: a spare descriptor is given up to
  accept and close the connection, so the listener does not spin) costs that connection
  only; it is counted and logged once per kind. A client's descriptor is closed when it
  leaves.

Nothing here waits on a client: the pipeline side never blocks, and :meth:`Relay.close`
ends within about a second whatever the clients do.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import re
import selectors
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from recordings.outputs.live import _websocket as ws
from recordings.outputs.live._compat_foxglove import DROP_LOGGER as SDK_DROP_LOGGER
from recordings.outputs.live._compat_foxglove import dropped_for

_MESSAGE_DATA, _TIME = 0x01, 0x02  # Foxglove protocol binary opcodes (server to client)
_PLAYBACK_STATE = 0x05  # foxglove-sdk's PlaybackState (server to client)
_PLAYBACK_REQUEST = 0x03  # foxglove-sdk's PlaybackControlRequest (client to server)
_BROADCAST = (_TIME, _PLAYBACK_STATE)  # binary messages every client gets
_CONTROL_LIMIT = 4096  # control messages queued for one client before it is closed
_CLIENT_MESSAGE_LIMIT = 1 << 20  # a client's subscribe lists, not data
_UPSTREAM_LIMIT = 1 << 31
_LATCH_DEPTH = 256
_KEEP_FINISHED = 256  # clients that left, kept for the statistics (then only counted)
_REFUSING_LIMIT = 64
_RECV = 1 << 20
_IOV = 64  # messages written by one sendmsg
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClientTraffic:
    """What one client of the live view got and lost."""

    address: str
    """The client's ``host:port``."""
    received: int
    """Messages routed to it: ``sent + dropped + queued``."""
    sent: int
    """Messages written to its socket."""
    dropped: int
    """Messages dropped because it did not read them fast enough (oldest first)."""
    queued: int
    """Messages waiting in its outbox now; once it left, those it never got."""
    connected: bool
    """Still connected."""
    exact: bool = True
    """False if the SDK's own queue towards the relay overflowed meanwhile (the SDK does not
    count those): then ``dropped`` is a lower bound."""
    left: str = ""
    """Why it left (``closed by the client``, ``idle 30 s``, ``reset``...), or ''."""

    @property
    def at_least(self) -> int:
        """``dropped``, plus the one message an SDK overflow record proves when not exact."""
        return self.dropped if self.exact else self.dropped + 1

    def describe(self) -> str:
        """``ADDR: N dropped`` (``ADDR: at least N dropped`` when not exact)."""
        bound = "" if self.exact else " at least"
        return f"{self.address}:{bound} {self.at_least} dropped"


@dataclass(frozen=True, slots=True)
class RelayStatistics:
    """The relay as a whole."""

    accepted: int = 0
    """Connections accepted (refused ones not included)."""
    open: int = 0
    """Clients connected now (past their handshake)."""
    refused: Counter[str] = field(default_factory=Counter)
    """Connections refused, by reason (``client limit``, ``bad request``,
    ``no file descriptors``, ``accept failed``)."""
    closed: Counter[str] = field(default_factory=Counter)
    """Clients that left, by reason."""
    queued_bytes: int = 0
    """Bytes in every outbox now (within ``budget``)."""
    peak_queued_bytes: int = 0
    """The most bytes every outbox held together at once."""
    budget: int = 0
    """The budget of all outboxes together."""
    cached_bytes: int = 0
    """Bytes kept for late subscribers (the last message of each channel, latched ones)."""
    via: str = ""
    """The relay's own ``host:port`` towards the SDK: the address the SDK's log lines name."""


class _Client:
    """One connection's state (the loop thread only; counters read under the relay's lock)."""

    def __init__(self, sock: socket.socket, address: str, now: float) -> None:
        self.sock = sock
        self.address = address
        self.state = "handshake"
        self.request = bytearray()
        self.reader = ws.FrameReader(limit=_CLIENT_MESSAGE_LIMIT, masked=True)
        self.outbox: deque[list[Any]] = deque()  # [prefix, payload, is_data, size, offset]
        self.bytes = self.data = self.control = 0
        self.received = self.sent = self.dropped = 0
        self.exact = True
        self.subs: dict[int, int] = {}  # subscription id -> channel id
        self.deadline = now
        self.heard = now
        self.pinged = False
        self.writing = False

    def traffic(self, connected: bool, left: str = "") -> ClientTraffic:
        queued = self.received - self.sent - self.dropped
        return ClientTraffic(
            self.address,
            self.received,
            self.sent,
            self.dropped,
            queued,
            connected,
            self.exact,
            left,
        )


# long: the live relay's one state machine (clients, channels, subscriptions, playback, limits)
#   behind the Foxglove server
class Relay:
    """Serves ``host:port`` to Foxglove clients from the SDK's server at ``upstream``
    (module docstring). ``latched`` holds the topics whose every message is kept."""

    def __init__(
        self,
        host: str,
        port: int,
        upstream: tuple[str, int] | None = None,
        *,
        backlog: int,
        backlog_bytes: int,
        budget: int = 256 << 20,
        max_clients: int = 32,
        handshake_timeout: float = 5.0,
        idle_timeout: float = 30.0,
        latched: Iterable[str] = (),
    ) -> None:
        self.backlog = backlog
        self.backlog_bytes = backlog_bytes
        self.budget = budget
        self.max_clients = max_clients
        self.handshake_timeout = handshake_timeout
        self.idle_timeout = idle_timeout
        self.latched: set[str] = set(latched)
        self.upstream = upstream
        """The SDK's server (set before :meth:`start`)."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._clients: dict[int, _Client] = {}  # fd -> client
        self._finished: deque[ClientTraffic] = deque(maxlen=_KEEP_FINISHED)
        self._stats: dict[str, Any] = {"accepted": 0, "peak": 0}
        self._refused: Counter[str] = Counter()
        self._closed_why: Counter[str] = Counter()
        self._said: set[str] = set()
        self._refusing: dict[int, tuple[socket.socket, float]] = {}
        self._queued = 0
        self._channels: dict[int, dict[str, Any]] = {}
        self._advertise = b""  # every channel in one advertise message (for a new client)
        self._server_info = b""
        self._subscribers: dict[int, dict[int, int]] = {}  # channel -> {client fd: sub id}
        self._cache: dict[
            int, deque[tuple[bytes, memoryview]]
        ] = {}  # channel -> (log time, payload)
        self._cached = 0
        self._exact = True
        self._up: socket.socket | None = None
        self._up_reader = ws.FrameReader(limit=_UPSTREAM_LIMIT, masked=False)
        self._up_out = bytearray()
        self._heard_up = 0  # messages read from the SDK (settled() watches it)
        self._spare: int | None = None
        self._next_timers = 0.0
        self._listen_again = 0.0  # when to accept again after running out of descriptors
        self._dirty: set[_Client] = set()  # clients with messages to write
        self._share = min(backlog_bytes, budget)
        self._closing = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel = selectors.DefaultSelector()
        self._thread = threading.Thread(target=self._loop, name="foxglove-relay", daemon=True)
        self._watch = _SdkDropWatch(self)

    # -- lifetime ----------------------------------------------------------------------

    def start(self) -> None:
        """Connect to the SDK (its serverInfo read) and start serving; ``OSError`` if not."""
        assert self.upstream is not None
        up = socket.create_connection(self.upstream, timeout=5)
        try:
            up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request, _ = ws.upgrade_request(*self.upstream)
            up.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = up.recv(4096)
                if not chunk or len(answer) > ws.MAX_REQUEST:
                    raise OSError(f"the Foxglove SDK's server answered {answer[:80]!r}")
                answer += chunk
            head, _, rest = answer.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                raise OSError(f"the Foxglove SDK's server refused the relay: {head[:80]!r}")
            for message in self._up_reader.feed(rest):
                self._upstream_message(message, time.monotonic())
            while not self._server_info:
                chunk = up.recv(_RECV)
                if not chunk:
                    raise OSError("the Foxglove SDK's server closed before its serverInfo")
                for message in self._up_reader.feed(chunk):
                    self._upstream_message(message, time.monotonic())
        except BaseException:
            up.close()
            raise
        up.setblocking(False)
        self._up = up
        self._up_address = "{}:{}".format(*up.getsockname()[:2])
        self._spare = _open_spare()
        self._sel.register(up, selectors.EVENT_READ, "up")
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._watch.install()
        self._thread.start()

    def close(self) -> None:
        """Stop: every client gets a close frame if its socket takes it at once, then every
        descriptor is closed. Returns within about a second."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join(2)
        else:
            self._teardown()
        self._watch.uninstall()

    def _teardown(self) -> None:
        for client in list(self._clients.values()):
            with contextlib.suppress(OSError):
                client.sock.send(ws.frame(ws.CLOSE, struct.pack("!H", 1001)))
            self._drop_client(client, "server stopped")
        for sock, _ in self._refusing.values():
            sock.close()
        self._refusing.clear()
        if self._up is not None:
            with contextlib.suppress(OSError):  # the SDK logs an error without it
                self._up.send(bytes(self._up_out) + ws.masked(ws.CLOSE, struct.pack("!H", 1001)))
            self._up.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        if self._spare is not None:
            with contextlib.suppress(OSError):
                _close_fd(self._spare)
            self._spare = None
        self._sel.close()

    # -- observing (any thread) ----------------------------------------------------------

    def traffic(self) -> tuple[ClientTraffic, ...]:
        """Clients that left (the last 256) then those connected, in connection order."""
        with self._lock:
            now = [c.traffic(True) for c in self._clients.values() if c.state == "open"]
            return (*self._finished, *now)

    def statistics(self) -> RelayStatistics:
        with self._lock:
            return RelayStatistics(
                accepted=self._stats["accepted"],
                open=sum(1 for c in self._clients.values() if c.state == "open"),
                refused=Counter(self._refused),
                closed=Counter(self._closed_why),
                queued_bytes=self._queued,
                peak_queued_bytes=self._stats["peak"],
                budget=self.budget,
                cached_bytes=self._cached,
                via=getattr(self, "_up_address", ""),
            )

    def settled(self) -> tuple[int, int]:
        """``(messages read from the SDK so far, bytes queued for clients now)``: a caller
        that sees both unchanged, the second 0, knows what the SDK sent has gone out."""
        with self._lock:
            return self._heard_up, self._queued

    def subscribers(self) -> int:
        """Clients subscribed to at least one channel now."""
        with self._lock:
            return sum(1 for c in self._clients.values() if c.subs)

    def sdk_dropped(self, address: str) -> None:
        """The SDK said its queue towards ``address`` overflowed: if that is the relay, every
        client's count is a lower bound from now on."""
        if address == getattr(self, "_up_address", None):
            with self._lock:
                self._exact = False
                for client in self._clients.values():
                    client.exact = False

    # -- the loop -----------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while not self._closing.is_set():
                for key, mask in self._sel.select(self._tick()):
                    what = key.data
                    if what == "up":
                        self._read_upstream()
                    elif what == "listen":
                        self._accept()
                    elif what == "wake":
                        break
                    elif isinstance(what, _Client):
                        if mask & selectors.EVENT_WRITE and what.sock.fileno() >= 0:
                            self._flush(what)
                        if mask & selectors.EVENT_READ and what.sock.fileno() >= 0:
                            self._read_client(what)
                    elif isinstance(what, socket.socket):
                        self._drain_refused(what)
                self._flush_dirty()
                if time.monotonic() >= self._next_timers:
                    self._next_timers = time.monotonic() + 0.1
                    self._timers()
        except Exception:  # the live view must never take the recording down
            _log.exception("the Foxglove live view stopped")
        finally:
            self._teardown()

    def _tick(self) -> float:
        return 0.1

    def _timers(self) -> None:
        now = time.monotonic()
        if self._listen_again and now >= self._listen_again:
            self._listen_again = 0.0
            self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        for client in list(self._clients.values()):
            if client.state == "handshake":
                if now > client.deadline:
                    self._count_once("handshake timeout", f"{client.address}: no upgrade request")
                    self._drop_client(client, f"no handshake in {self.handshake_timeout:g} s")
                continue
            silent = now - client.heard
            if silent > self.idle_timeout:
                self._drop_client(client, f"idle {self.idle_timeout:g} s")
            elif silent > self.idle_timeout / 2 and not client.pinged:
                client.pinged = True
                self._send(client, ws.frame(ws.PING, b"hf"), b"", data=False)
        for fd, (sock, deadline) in list(self._refusing.items()):
            if now > deadline:
                self._end_refusal(fd, sock)

    # -- accepting ----------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):  # a burst, then back to the others
            try:
                sock, peer = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE):
                    self._out_of_fds()
                else:
                    self._refused["accept failed"] += 1
                    self._count_once("accept failed", f"accepting a client failed: {err}")
                continue
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                address = f"{peer[0]}:{peer[1]}"
            except OSError:  # reset before we looked
                sock.close()
                self._refused["reset before the handshake"] += 1
                continue
            now = time.monotonic()
            if sum(1 for c in self._clients.values()) >= self.max_clients:
                self._refuse(
                    sock,
                    503,
                    f"hyperframes live view: {self.max_clients} clients already connected "
                    f"(the limit, --serve-clients); try again later",
                    "client limit",
                )
                continue
            client = _Client(sock, address, now)
            client.deadline = now + self.handshake_timeout
            with self._lock:
                self._clients[sock.fileno()] = client
                self._stats["accepted"] += 1
            self._sel.register(sock, selectors.EVENT_READ, client)

    def _out_of_fds(self) -> None:
        """No descriptor for the next connection: give up the spare, accept and close it."""
        self._refused["no file descriptors"] += 1
        self._count_once(
            "no file descriptors",
            "out of file descriptors: new Foxglove clients are closed until some leave",
        )
        if self._spare is None:  # none to give up: stop listening a while, not spin
            self._sel.unregister(self._listener)
            self._listen_again = time.monotonic() + 0.5
            self._spare = _open_spare()
            return
        _close_fd(self._spare)
        self._spare = None
        with contextlib.suppress(OSError):
            sock, _ = self._listener.accept()
            sock.close()
        self._spare = _open_spare()

    def _refuse(self, sock: socket.socket, status: int, reason: str, why: str) -> None:
        self._refused[why] += 1
        self._count_once(why, f"refused a Foxglove client: {reason}")
        try:
            sock.send(ws.refusal(status, reason))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._refusing) >= _REFUSING_LIMIT:
            sock.close()
            return
        # read what it sent until it closes (closing with unread bytes would reset the answer)
        self._refusing[sock.fileno()] = (sock, time.monotonic() + 1.0)
        self._sel.register(sock, selectors.EVENT_READ, sock)

    def _drain_refused(self, sock: socket.socket) -> None:
        try:
            if sock.recv(65536):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._end_refusal(sock.fileno(), sock)

    def _end_refusal(self, fd: int, sock: socket.socket) -> None:
        self._refusing.pop(fd, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(sock)
        sock.close()

    def _count_once(self, kind: str, line: str) -> None:
        if kind not in self._said:
            self._said.add(kind)
            _log.warning("%s (said once; counted in the summary)", line)

    # -- a client ------------------------------------------------------------------------

    def _read_client(self, client: _Client) -> None:
        try:
            data = client.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            self._drop_client(client, "reset")
            return
        if not data:
            self._drop_client(client, "closed by the client")
            return
        client.heard = time.monotonic()
        client.pinged = False
        if client.state == "handshake":
            self._handshake(client, data)
            return
        try:
            messages = client.reader.feed(data)
        except ws.ProtocolError as err:
            self._drop_client(client, f"protocol error: {err}")
            return
        for message in messages:
            if client.sock.fileno() < 0:
                return
            self._client_message(client, message)

    def _handshake(self, client: _Client, data: bytes) -> None:
        client.request += data
        end = client.request.find(b"\r\n\r\n")
        if end < 0:
            if len(client.request) > ws.MAX_REQUEST:
                self._reject(client, 400, f"an upgrade request over {ws.MAX_REQUEST} bytes")
            return
        try:
            key, protocol = ws.parse_upgrade(bytes(client.request[: end + 4]))
        except ws.BadRequest as err:
            self._reject(client, err.status, err.reason)
            return
        extra = bytes(client.request[end + 4 :])
        client.request = bytearray()
        client.state = "open"
        self._reshare()
        self._send(client, ws.accept(key, protocol), b"", data=False)
        self._send(client, ws.header(ws.TEXT, len(self._server_info)), self._server_info, False)
        if self._channels:
            self._send(client, ws.header(ws.TEXT, len(self._advertise)), self._advertise, False)
        if extra:
            self._read_extra(client, extra)

    def _read_extra(self, client: _Client, data: bytes) -> None:
        try:
            for message in client.reader.feed(data):
                self._client_message(client, message)
        except ws.ProtocolError as err:
            self._drop_client(client, f"protocol error: {err}")

    def _reject(self, client: _Client, status: int, reason: str) -> None:
        with self._lock:
            self._clients.pop(client.sock.fileno(), None)
            self._stats["accepted"] -= 1
        self._sel.unregister(client.sock)
        self._refuse(client.sock, status, reason, "bad request")

    def _client_message(self, client: _Client, message: ws.Message) -> None:
        if message.opcode == ws.PING:
            self._send(client, ws.frame(ws.PONG, bytes(message.payload)), b"", data=False)
        elif message.opcode == ws.CLOSE:
            with contextlib.suppress(OSError):
                client.sock.send(ws.frame(ws.CLOSE, bytes(message.payload[:2])))
            self._drop_client(client, "closed by the client")
        elif message.opcode == ws.TEXT:
            try:
                request = json.loads(bytes(message.payload))
                op = request.get("op")
                if op == "subscribe":
                    for sub in request["subscriptions"]:
                        sid = int(sub["id"])
                        if not 0 <= sid < 1 << 32:
                            raise ValueError(sid)
                        self._subscribe(client, sid, int(sub["channelId"]))
                elif op == "unsubscribe":
                    for sid in request["subscriptionIds"]:
                        self._unsubscribe(client, int(sid))
            except (ValueError, KeyError, TypeError, AttributeError):
                self._status(client, "hyperframes: a request the live view does not understand")
        elif message.opcode == ws.BINARY and message.payload[:1] == bytes([_PLAYBACK_REQUEST]):
            # Foxglove's playback control (pause, play, seek, speed): the SDK's listener
            # answers with a PlaybackState, which every client gets (they share one replay).
            self._upstream_bytes(ws.masked(ws.BINARY, bytes(message.payload)))

    def _status(self, client: _Client, text: str) -> None:
        body = json.dumps({"op": "status", "level": 1, "message": text}).encode()
        self._send(client, ws.header(ws.TEXT, len(body)), body, data=False)

    def _subscribe(self, client: _Client, sid: int, cid: int) -> None:
        if cid not in self._channels or sid in client.subs or cid in client.subs.values():
            return  # an unknown channel, a used id, or a channel it already has
        with self._lock:
            client.subs[sid] = cid
        subscribers = self._subscribers.setdefault(cid, {})
        first = not subscribers
        subscribers[client.sock.fileno()] = sid
        for log_time, payload in self._cache.get(cid, ()):  # what a late subscriber missed
            self._send_data(client, _data_head(payload), sid, log_time, payload)
        if first:
            self._upstream({"op": "subscribe", "subscriptions": [{"id": cid, "channelId": cid}]})

    def _unsubscribe(self, client: _Client, sid: int) -> None:
        with self._lock:
            cid = client.subs.pop(sid, None)
        if cid is None:
            return
        subscribers = self._subscribers.get(cid, {})
        subscribers.pop(client.sock.fileno(), None)
        if not subscribers and cid in self._channels:
            self._subscribers.pop(cid, None)
            self._upstream({"op": "unsubscribe", "subscriptionIds": [cid]})

    def _drop_client(self, client: _Client, why: str) -> None:
        """Forget ``client`` and close its descriptor (its subscriptions end)."""
        fd = client.sock.fileno()
        if fd < 0:
            return
        if why == "reset":
            self._count_once("reset", f"a Foxglove client reset its connection ({client.address})")
        for sid in list(client.subs):
            self._unsubscribe(client, sid)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(client.sock)
        with self._lock:
            self._clients.pop(fd, None)
            self._queued -= client.bytes
            self._reshare()
            if client.state == "open":
                self._finished.append(client.traffic(False, why))
            self._closed_why[_reason(why)] += 1
        client.outbox.clear()
        client.sock.close()

    # -- outboxes -------------------------------------------------------------------------

    def _send_data(
        self, client: _Client, head: bytes, sid: int, tail: bytes, payload: memoryview
    ) -> None:
        """Queue one message data for ``client``: ``head`` (frame header and opcode),
        its subscription id, ``tail`` (the log time) and the shared ``payload``."""
        client.received += 1
        self._send(client, head + sid.to_bytes(4, "little") + tail, payload, data=True)

    def _send(self, client: _Client, prefix: bytes, payload: Any, data: bool) -> None:
        """Queue one message for ``client``, dropping its oldest data to stay within its
        share of the budget; the loop writes it (:meth:`_flush_dirty`)."""
        size = len(prefix) + len(payload)
        with self._lock:
            if data:
                cap = self._share
                while client.data and (client.data >= self.backlog or client.bytes + size > cap):
                    if not self._drop_oldest(client):
                        break
                client.data += 1
            else:
                client.control += 1
            client.outbox.append([prefix, payload, data, size, 0])
            client.bytes += size
            self._queued += size
            if self._queued > self._stats["peak"]:
                self._stats["peak"] = self._queued
        if client.control > _CONTROL_LIMIT:
            self._drop_client(client, "too many control messages queued")
        elif not client.writing:
            self._dirty.add(client)

    def _reshare(self) -> None:
        """Each client's share of the budget: the budget over the clients connected."""
        open_clients = sum(1 for c in self._clients.values() if c.state == "open")
        self._share = min(self.backlog_bytes, self.budget // max(1, open_clients))

    def _drop_oldest(self, client: _Client) -> bool:
        """Drop ``client``'s oldest message data not being written (lock held)."""
        for i, entry in enumerate(client.outbox):
            if entry[2] and entry[4] == 0:
                del client.outbox[i]
                client.data -= 1
                client.bytes -= entry[3]
                self._queued -= entry[3]
                client.dropped += 1
                return True
        return False

    def _flush_dirty(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for client in dirty:
            if client.sock.fileno() >= 0 and not client.writing:
                self._flush(client)

    def _flush(self, client: _Client) -> None:
        """Write what the socket takes now (up to 64 messages a call); wait for it to be
        writable again if not all."""
        sock = client.sock
        outbox = client.outbox
        try:
            while outbox:
                parts: list[Any] = []
                for entry in itertools.islice(outbox, _IOV):
                    prefix, payload, _, _, offset = entry
                    if offset < len(prefix):
                        parts.append(memoryview(prefix)[offset:])
                        parts.append(payload)
                    else:
                        parts.append(memoryview(payload)[offset - len(prefix) :])
                sent = sock.sendmsg(parts)
                with self._lock:
                    while sent and outbox:
                        entry = outbox[0]
                        left = entry[3] - entry[4]
                        if sent < left:
                            entry[4] += sent
                            sent = 0
                            break
                        sent -= left
                        outbox.popleft()
                        client.bytes -= entry[3]
                        self._queued -= entry[3]
                        if entry[2]:
                            client.data -= 1
                            client.sent += 1
                        else:
                            client.control -= 1
                    if outbox and outbox[0][4]:
                        break  # the socket took part of a message: it is full
        except BlockingIOError:
            pass
        except OSError:
            self._drop_client(client, "reset")
            return
        want = bool(outbox)
        if want != client.writing:
            client.writing = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._sel.modify(sock, events, client)

    # -- upstream (the SDK) ------------------------------------------------------------------

    def _upstream(self, request: dict[str, Any]) -> None:
        self._upstream_bytes(ws.masked(ws.TEXT, json.dumps(request).encode()))

    def _upstream_bytes(self, frame: bytes) -> None:
        assert self._up is not None
        self._up_out += frame
        try:
            sent = self._up.send(self._up_out)
            del self._up_out[:sent]
        except BlockingIOError:
            pass
        if self._up_out:  # a few bytes of requests: the loop finishes them
            self._sel.modify(self._up, selectors.EVENT_READ | selectors.EVENT_WRITE, "up")

    def _read_upstream(self) -> None:
        assert self._up is not None
        if self._up_out:
            with contextlib.suppress(BlockingIOError):
                del self._up_out[: self._up.send(self._up_out)]
            if not self._up_out:
                self._sel.modify(self._up, selectors.EVENT_READ, "up")
        for _ in range(16):  # keep up with the SDK, then serve the clients
            try:
                chunk = self._up.recv(_RECV)
            except BlockingIOError:
                return
            if not chunk:
                self._closing.set()  # the SDK stopped
                return
            now = time.monotonic()
            for message in self._up_reader.feed(chunk):
                self._upstream_message(message, now)

    def _upstream_message(self, message: ws.Message, now: float) -> None:
        payload = message.payload
        self._heard_up += 1
        if message.opcode == ws.BINARY and payload.nbytes >= 13 and payload[0] == _MESSAGE_DATA:
            cid = int.from_bytes(payload[1:5], "little")
            log_time = bytes(payload[5:13])
            data = payload[13:]
            self._keep(cid, log_time, data)
            head = _data_head(data)
            for fd, sid in list(self._subscribers.get(cid, {}).items()):
                client = self._clients.get(fd)
                if client is not None:
                    self._send_data(client, head, sid, log_time, data)
        elif message.opcode == ws.BINARY and payload.nbytes and payload[0] in _BROADCAST:
            self._broadcast(ws.BINARY, bytes(payload))
        elif message.opcode == ws.TEXT:
            text = bytes(payload)
            request = json.loads(text)
            op = request.get("op")
            if op == "serverInfo":
                self._server_info = text
            elif op == "advertise":
                for channel in request["channels"]:
                    self._channels[int(channel["id"])] = channel
                self._readvertise()
                self._broadcast(ws.TEXT, text)
            elif op == "unadvertise":
                for cid in request["channelIds"]:
                    self._forget_channel(int(cid))
                self._readvertise()
                self._broadcast(ws.TEXT, text)
            elif op in ("status", "removeStatus"):
                self._broadcast(ws.TEXT, text)
        elif message.opcode == ws.PING:
            self._up_out += ws.masked(ws.PONG, bytes(payload))
        elif message.opcode == ws.CLOSE:
            self._closing.set()

    def _readvertise(self) -> None:
        channels = list(self._channels.values())
        self._advertise = json.dumps({"op": "advertise", "channels": channels}).encode()

    def _forget_channel(self, cid: int) -> None:
        channel = self._channels.pop(cid, None)
        for fd, sid in self._subscribers.pop(cid, {}).items():
            client = self._clients.get(fd)
            if client is not None:
                with self._lock:
                    client.subs.pop(sid, None)
        if channel is not None:
            self._uncache(cid)

    def _broadcast(self, opcode: int, body: bytes) -> None:
        prefix = ws.header(opcode, len(body))
        for client in list(self._clients.values()):
            if client.state == "open":
                self._send(client, prefix, body, data=False)

    # -- what a late subscriber gets ---------------------------------------------------------

    def _keep(self, cid: int, log_time: bytes, data: memoryview) -> None:
        channel = self._channels.get(cid)
        if channel is None or data.nbytes > self.budget // 16:
            return
        latched = channel["topic"] in self.latched
        kept = self._cache.setdefault(cid, deque())
        with self._lock:
            while kept and (not latched or len(kept) >= _LATCH_DEPTH):
                self._cached -= kept.popleft()[1].nbytes
            if self._cached + data.nbytes > self.budget // 4:
                return  # the cache's own bound: this channel's late subscribers wait
            kept.append((log_time, data))
            self._cached += data.nbytes

    def _uncache(self, cid: int) -> None:
        with self._lock:
            for _, data in self._cache.pop(cid, ()):
                self._cached -= data.nbytes


def _data_head(payload: memoryview) -> bytes:
    """The frame header and opcode of a message-data message carrying ``payload``."""
    return ws.header(ws.BINARY, 13 + payload.nbytes) + bytes((_MESSAGE_DATA,))


def _reason(why: str) -> str:
    """A close reason without its figures, to count by (``idle 30 s`` -> ``idle``)."""
    if why.startswith("protocol error"):
        return "protocol error"
    return re.sub(r" (in )?[\d.]+ s$", "", why)


def _open_spare() -> int | None:
    import os

    try:
        return os.open("/dev/null", os.O_RDONLY)
    except OSError:
        return None


def _close_fd(fd: int) -> None:
    import os

    os.close(fd)


class _SdkDropWatch(logging.Handler):
    """Hears the SDK's ``outbox for client ADDR full`` record (INFO, pyo3-log) for a relay
    (:mod:`~recordings.outputs.live._compat_foxglove`)."""

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
        address = dropped_for(record.getMessage())
        if address is not None:
            self._relay.sdk_dropped(address)
