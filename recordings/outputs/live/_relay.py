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
import json
import logging
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from recordings.outputs.live import _websocket as ws
from recordings.outputs.live._compat_foxglove import DROP_LOGGER as SDK_DROP_LOGGER
from recordings.outputs.live._compat_foxglove import dropped_for
from recordings.outputs.live._relay_client import Client, ClientTraffic, Gone, Roster
from recordings.outputs.live._relay_door import Door
from recordings.outputs.live._relay_state import (
    Budget,
    Channels,
    Tally,
    due,
    requests,
)
from recordings.outputs.live._relay_upstream import Upstream

_MESSAGE_DATA, _TIME = 0x01, 0x02  # Foxglove protocol binary opcodes (server to client)
_PLAYBACK_STATE = 0x05  # foxglove-sdk's PlaybackState (server to client)
_PLAYBACK_REQUEST = 0x03  # foxglove-sdk's PlaybackControlRequest (client to server)
_BROADCAST = (_TIME, _PLAYBACK_STATE)  # binary messages every client gets
_CONTROL_LIMIT = 4096  # control messages queued for one client before it is closed
_log = logging.getLogger(__name__)


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
    resubscribed: int = 0
    """Subscriptions made again because the SDK did not know the channel yet (a channel
    advertised an instant before; :mod:`~recordings.outputs.live._compat_foxglove`)."""
    unsubscribable: int = 0
    """Channels the SDK kept refusing for 10 s (given up, logged once)."""


class Relay:
    """Serves ``host:port`` to Foxglove clients from the SDK's server at ``upstream``
    (module docstring). ``latched`` holds the topics whose every message is kept.

    The shell of the relay: sockets, the selector loop, its thread and its lock; the
    decisions (budget, drops, late subscribers, routes, timeouts) are
    :mod:`~recordings.outputs.live._relay_state`'s, the listening socket
    :mod:`~recordings.outputs.live._relay_door`'s, a client connection's I/O
    :mod:`~recordings.outputs.live._relay_client`'s, the SDK link
    :mod:`~recordings.outputs.live._relay_upstream`'s."""

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
        self.budget = budget
        self.handshake_timeout = handshake_timeout
        self.idle_timeout = idle_timeout
        self.latched: set[str] = set(latched)
        self.upstream = upstream
        """The SDK's server (set before :meth:`start`)."""
        self._tally = Tally()
        self._door = Door(host, port, self._tally, self._count_once, max_clients)
        self.port: int = self._door.port
        self._lock = threading.Lock()
        self._clients = Roster()
        self._budget = Budget(budget, backlog, backlog_bytes)
        self._channels = Channels(budget)
        self._server_info = b""
        self._up = Upstream()
        self._next_timers = 0.0
        self._dirty: set[Client] = set()  # clients with messages to write
        self._closing = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel = selectors.DefaultSelector()
        self._thread = threading.Thread(target=self._loop, name="foxglove-relay", daemon=True)
        self._watch = _SdkDropWatch(self)

    # -- lifetime ----------------------------------------------------------------------

    def start(self) -> None:
        """Connect to the SDK (its serverInfo read) and start serving; ``OSError`` if not."""
        assert self.upstream is not None
        self._up.connect(self.upstream, self._upstream_message, lambda: bool(self._server_info))
        if self._up.ended:
            self._closing.set()  # the SDK said goodbye already
        self._door.open(self._sel)
        self._up.register(self._sel)
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
        for client in self._clients:
            client.say_close()
            self._drop_client(client, "server stopped")
        self._up.close()
        self._door.close()
        for sock in (self._wake_r, self._wake_w):
            sock.close()
        self._sel.close()

    # -- observing (any thread) ----------------------------------------------------------

    def traffic(self) -> tuple[ClientTraffic, ...]:
        """Clients that left (the last 256) then those connected, in connection order."""
        with self._lock:
            return self._clients.traffic()

    def statistics(self) -> RelayStatistics:
        with self._lock:
            return RelayStatistics(
                accepted=self._clients.accepted,
                open=self._clients.open(),
                refused=Counter(self._tally.refused),
                closed=Counter(self._clients.closed),
                queued_bytes=self._budget.queued,
                peak_queued_bytes=self._budget.peak,
                budget=self.budget,
                cached_bytes=self._channels.late.bytes,
                via=self._up.address,
                resubscribed=self._up.resubscribed,
                unsubscribable=self._up.unsubscribable,
            )

    def settled(self) -> tuple[int, int]:
        """``(messages read from the SDK so far, bytes queued for clients now)``: a caller
        that sees both unchanged, the second 0, knows what the SDK sent has gone out."""
        with self._lock:
            return self._up.heard, self._budget.queued

    def subscribers(self) -> int:
        """Clients subscribed to at least one channel now."""
        with self._lock:
            return self._clients.subscribed()

    def sdk_dropped(self, address: str) -> None:
        """The SDK said its queue towards ``address`` overflowed: if that is the relay, every
        client's count is a lower bound from now on."""
        if address and address == self._up.address:
            with self._lock:
                for client in self._clients:
                    client.exact = False

    # -- the loop -----------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while not self._closing.is_set():
                for key, mask in self._sel.select(self._up.wait(time.monotonic(), 0.1)):
                    what = key.data
                    if what == "up":
                        self._read_upstream()
                    elif what == "listen":
                        self._accept()
                    elif what == "wake":
                        break
                    elif isinstance(what, Client):
                        if mask & selectors.EVENT_WRITE and what.fd >= 0:
                            self._flush(what)
                        if mask & selectors.EVENT_READ and what.fd >= 0:
                            self._read_client(what)
                    elif isinstance(what, socket.socket):
                        self._door.drain(what)
                self._up.resubscribe(time.monotonic(), self._channels.watched)
                self._flush_dirty()
                if time.monotonic() >= self._next_timers:
                    self._next_timers = time.monotonic() + 0.1
                    self._timers()
        except Exception:  # the live view must never take the recording down
            _log.exception("the Foxglove live view stopped")
        finally:
            self._teardown()

    def _timers(self) -> None:
        now = time.monotonic()
        for client in self._clients:
            what = due(client.state == "handshake", client.deadline, client.heard,
                       client.pinged, now, self.idle_timeout)  # fmt: skip
            if what == "handshake timeout":
                self._count_once("handshake timeout", f"{client.address}: no upgrade request")
                self._drop_client(client, f"no handshake in {self.handshake_timeout:g} s")
            elif what == "idle":
                self._drop_client(client, f"idle {self.idle_timeout:g} s")
            elif what == "ping":
                client.pinged = True
                self._send(client, ws.frame(ws.PING, b"hf"), b"", data=False)
        self._door.timers(now)

    def _count_once(self, kind: str, line: str) -> None:
        if self._tally.first(kind):
            _log.warning("%s (said once; counted in the summary)", line)

    # -- a client ------------------------------------------------------------------------

    def _accept(self) -> None:
        for sock, address in self._door.accept(lambda: len(self._clients.clients)):
            now = time.monotonic()
            client = Client(sock, address, now, now + self.handshake_timeout)
            with self._lock:
                self._clients.add(client)
            self._sel.register(sock, selectors.EVENT_READ, client)

    def _read_client(self, client: Client) -> None:
        try:
            data = client.receive(time.monotonic())
            if client.state == "handshake":
                upgrade = client.upgrade(data)
                if upgrade is None:
                    return
                key, protocol, data = upgrade
                self._opened(client, key, protocol)
            for message in client.messages(data) if data else ():
                if client.fd < 0:
                    return
                self._client_message(client, message)
        except Gone as gone:
            self._drop_client(client, gone.why)
        except ws.BadRequest as err:
            self._reject(client, err.status, err.reason)

    def _opened(self, client: Client, key: str, protocol: str) -> None:
        """``client`` upgraded: it gets serverInfo and the channels advertised so far."""
        self._budget.reshare(self._clients.open())  # each one's share: over those connected
        self._send(client, ws.accept(key, protocol), b"", data=False)
        self._send(client, ws.header(ws.TEXT, len(self._server_info)), self._server_info, False)
        advertise = self._channels.advertise
        if self._channels.channels:
            self._send(client, ws.header(ws.TEXT, len(advertise)), advertise, False)

    def _reject(self, client: Client, status: int, reason: str) -> None:
        with self._lock:
            self._clients.reject(client)
        self._sel.unregister(client.sock)
        self._door.refuse(client.sock, status, reason, "bad request")

    def _client_message(self, client: Client, message: ws.Message) -> None:
        if message.opcode == ws.PING:
            self._send(client, ws.frame(ws.PONG, bytes(message.payload)), b"", data=False)
        elif message.opcode == ws.CLOSE:
            client.say_close(bytes(message.payload[:2]))
            self._drop_client(client, "closed by the client")
        elif message.opcode == ws.TEXT:
            try:
                for op, sid, cid in requests(bytes(message.payload)):
                    if op == "subscribe":
                        self._subscribe(client, sid, cid)
                    else:
                        self._unsubscribe(client, sid)
            except (ValueError, KeyError, TypeError, AttributeError):
                self._status(client, "hyperframes: a request the live view does not understand")
        elif message.opcode == ws.BINARY and message.payload[:1] == bytes([_PLAYBACK_REQUEST]):
            # Foxglove's playback control (pause, play, seek, speed): the SDK's listener
            # answers with a PlaybackState, which every client gets (they share one replay).
            self._up.send(ws.masked(ws.BINARY, bytes(message.payload)))

    def _status(self, client: Client, text: str) -> None:
        body = json.dumps({"op": "status", "level": 1, "message": text}).encode()
        self._send(client, ws.header(ws.TEXT, len(body)), body, data=False)

    def _subscribe(self, client: Client, sid: int, cid: int) -> None:
        with self._lock:
            subscribed = self._channels.subscribe(client.subs, client.fd, sid, cid)
        if subscribed is None:
            return  # an unknown channel, a used id, or a channel it already has
        first, kept = subscribed
        if first:  # before the kept ones: a write of those may find it reset (unsubscribed)
            self._up.subscribe(cid)
        for log_time, payload in kept:  # what a late subscriber missed (newer ones come later)
            self._send_data(client, _data_head(payload), sid, log_time, payload)

    def _unsubscribe(self, client: Client, sid: int) -> None:
        with self._lock:
            cid = self._channels.unsubscribe(client.subs, client.fd, sid)
        if cid is not None:
            self._up.unsubscribe(cid)

    def _drop_client(self, client: Client, why: str) -> None:
        """Forget ``client`` and close its descriptor (its subscriptions end)."""
        fd = client.fd
        if fd < 0:
            return
        if why == "reset":
            self._count_once("reset", f"a Foxglove client reset its connection ({client.address})")
        for sid in list(client.subs):
            self._unsubscribe(client, sid)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(client.sock)
        with self._lock:
            self._clients.left(client, why)
            self._budget.discard(client.box)
            self._budget.reshare(self._clients.open())
        client.sock.close()

    # -- outboxes -------------------------------------------------------------------------

    def _send_data(
        self, client: Client, head: bytes, sid: int, tail: bytes, payload: memoryview
    ) -> None:
        """Queue one message data for ``client``: ``head`` (frame header and opcode),
        its subscription id, ``tail`` (the log time) and the shared ``payload``."""
        self._send(client, head + sid.to_bytes(4, "little") + tail, payload, data=True)

    def _send(self, client: Client, prefix: bytes, payload: Any, data: bool) -> None:
        """Queue one message for ``client`` within its share of the budget
        (:meth:`Budget.push`); the loop writes it (:meth:`_flush_dirty`).

        Message data that would drop the oldest of an outbox whose socket is not known to
        be full writes that outbox first: one turn reads up to 16 MiB from the SDK (all it
        sent while this thread was descheduled), and a client that reads must not lose
        messages only because they came in one turn; only what its socket does not take
        is dropped."""
        size = len(prefix) + len(payload)
        if data and not client.writing and self._budget.full(client.box, size):
            self._flush(client)
            if client.fd < 0:
                return  # it reset: gone, its outbox with it
        with self._lock:
            self._budget.push(client.box, prefix, payload, data)
        if client.box.control > _CONTROL_LIMIT:
            self._drop_client(client, "too many control messages queued")
        elif not client.writing:
            self._dirty.add(client)

    def _flush_dirty(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for client in dirty:
            if client.fd >= 0 and not client.writing:
                self._flush(client)

    def _flush(self, client: Client) -> None:
        """Write what the socket takes now; wait for it to be writable again if not all."""
        try:
            want = client.write(self._budget, self._lock)
        except Gone as gone:
            self._drop_client(client, gone.why)
            return
        if want != client.writing:
            client.writing = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._sel.modify(client.sock, events, client)

    # -- upstream (the SDK) ------------------------------------------------------------------

    def _read_upstream(self) -> None:
        for message in self._up.read():
            self._upstream_message(message)
        if self._up.ended:
            self._closing.set()  # the SDK stopped

    def _upstream_message(self, message: ws.Message) -> None:
        payload = message.payload
        if message.opcode == ws.BINARY and payload.nbytes >= 13 and payload[0] == _MESSAGE_DATA:
            self._route(int.from_bytes(payload[1:5], "little"), bytes(payload[5:13]), payload[13:])
        elif message.opcode == ws.BINARY and payload.nbytes and payload[0] in _BROADCAST:
            self._broadcast(ws.BINARY, bytes(payload))
        elif message.opcode == ws.TEXT:
            text = bytes(payload)
            request = json.loads(text)
            op = request.get("op")
            if op == "serverInfo":
                self._server_info = text
            elif op == "advertise":
                self._channels.advertised(request["channels"])
                self._broadcast(ws.TEXT, text)
            elif op == "unadvertise":
                self._unadvertised(int(cid) for cid in request["channelIds"])
                self._broadcast(ws.TEXT, text)
            elif op in ("status", "removeStatus"):
                self._broadcast(ws.TEXT, text)

    def _route(self, cid: int, log_time: bytes, data: memoryview) -> None:
        """One message data of channel ``cid``: kept for late subscribers, queued for each
        subscriber."""
        with self._lock:
            targets = self._channels.carry(cid, self.latched, log_time, data)
        head = _data_head(data)
        for fd, sid in targets:
            client = self._clients.clients.get(fd)
            if client is not None:
                self._send_data(client, head, sid, log_time, data)

    def _unadvertised(self, cids: Iterable[int]) -> None:
        with self._lock:
            for fd, sid in self._channels.unadvertised(cids):
                client = self._clients.clients.get(fd)
                if client is not None:
                    client.subs.pop(sid, None)

    def _broadcast(self, opcode: int, body: bytes) -> None:
        prefix = ws.header(opcode, len(body))
        for client in self._clients:
            if client.state == "open":
                self._send(client, prefix, body, data=False)


def _data_head(payload: memoryview) -> bytes:
    """The frame header and opcode of a message-data message carrying ``payload``."""
    return ws.header(ws.BINARY, 13 + payload.nbytes) + bytes((_MESSAGE_DATA,))


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
