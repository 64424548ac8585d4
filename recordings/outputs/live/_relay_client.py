"""One Foxglove client of the live relay: its socket, its upgrade request, its frames in and
its outbox out.

:class:`Client` does a connection's I/O for the relay's loop
(:class:`~recordings.outputs.live._relay.Relay`) and says what happened: bytes read, an
upgrade request complete, the messages it sent, what its socket took. A client that reset,
closed, or broke the protocol raises :class:`Gone` with the reason the relay counts; the relay
decides everything else (what it is sent, when it is closed).
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass

from recordings.outputs.live import _websocket as ws
from recordings.outputs.live._relay_state import Budget, Outbox

_CLIENT_MESSAGE_LIMIT = 1 << 20  # a client's subscribe lists, not data
_RECV = 65536
_KEEP_FINISHED = 256  # clients that left, kept for the statistics (then only counted)


class Gone(Exception):
    """The client is gone or must go: ``why`` (``reset``, ``closed by the client``,
    ``protocol error: ...``)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


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


class Client:
    """One connection (the loop thread only; counters read under the relay's lock): in
    ``handshake`` until ``deadline``, then ``open``."""

    def __init__(self, sock: socket.socket, address: str, now: float, deadline: float) -> None:
        self.sock = sock
        self.address = address
        self.state = "handshake"
        self.request = bytearray()
        self.reader = ws.FrameReader(limit=_CLIENT_MESSAGE_LIMIT, masked=True)
        self.box = Outbox()
        self.exact = True
        self.subs: dict[int, int] = {}  # subscription id -> channel id
        self.deadline = deadline
        self.heard = now
        self.pinged = False
        self.writing = False

    @property
    def fd(self) -> int:
        """Its descriptor; negative once closed."""
        return self.sock.fileno()

    def traffic(self, connected: bool, left: str = "") -> ClientTraffic:
        box = self.box
        return ClientTraffic(
            self.address,
            box.received,
            box.sent,
            box.dropped,
            box.queued,
            connected,
            self.exact,
            left,
        )

    def receive(self, now: float) -> bytes:
        """What it sent (``b''``: nothing yet); it was heard at ``now``. :class:`Gone` if it
        reset or closed."""
        try:
            data = self.sock.recv(_RECV)
        except BlockingIOError:
            return b""
        except OSError:
            raise Gone("reset") from None
        if not data:
            raise Gone("closed by the client")
        self.heard = now
        self.pinged = False
        return data

    def upgrade(self, data: bytes) -> tuple[str, str, bytes] | None:
        """Its upgrade request with ``data``: ``(key, subprotocol, the bytes after it)`` once
        whole (it is ``open`` then), ``None`` until then; :class:`~._websocket.BadRequest`."""
        self.request += data
        end = self.request.find(b"\r\n\r\n")
        if end < 0:
            if len(self.request) > ws.MAX_REQUEST:
                raise ws.BadRequest(400, f"an upgrade request over {ws.MAX_REQUEST} bytes")
            return None
        key, protocol = ws.parse_upgrade(bytes(self.request[: end + 4]))
        extra = bytes(self.request[end + 4 :])
        self.request = bytearray()
        self.state = "open"
        return key, protocol, extra

    def messages(self, data: bytes) -> list[ws.Message]:
        """The whole messages ``data`` completes; :class:`Gone` if it breaks the protocol."""
        try:
            return self.reader.feed(data)
        except ws.ProtocolError as err:
            raise Gone(f"protocol error: {err}") from None

    def write(self, budget: Budget, lock: threading.Lock) -> bool:
        """Write what the socket takes now (up to 64 messages a ``sendmsg``), accounted in
        ``budget`` under ``lock``: whether some is left (wait for the socket to be
        writable). :class:`Gone` if it reset."""
        box = self.box
        try:
            while box.entries:
                sent = self.sock.sendmsg(box.parts())
                with lock:
                    full = budget.wrote(box, sent)
                if full:
                    break  # the socket took part of a message: it is full
        except BlockingIOError:
            pass
        except OSError:
            raise Gone("reset") from None
        return bool(box.entries)

    def say_close(self, code: bytes = struct.pack("!H", 1001)) -> None:
        """A close frame with ``code``, if the socket takes it at once."""
        with contextlib.suppress(OSError):
            self.sock.send(ws.frame(ws.CLOSE, code))


class Roster:
    """The relay's clients by descriptor and the last 256 that left (the loop changes it,
    any thread reads it, both under the relay's lock)."""

    def __init__(self) -> None:
        self.clients: dict[int, Client] = {}
        self.accepted = 0
        """Connections accepted (refused ones not included)."""
        self.closed: Counter[str] = Counter()
        """Clients that left, by reason (without its figures)."""
        self._finished: deque[ClientTraffic] = deque(maxlen=_KEEP_FINISHED)

    def __iter__(self) -> Iterator[Client]:
        return iter(list(self.clients.values()))

    def add(self, client: Client) -> None:
        self.clients[client.fd] = client
        self.accepted += 1

    def reject(self, client: Client) -> None:
        """``client`` was refused after all (its upgrade request): not accepted."""
        self.clients.pop(client.fd, None)
        self.accepted -= 1

    def left(self, client: Client, why: str) -> None:
        """``client`` left (``why``): its traffic is kept if it was open."""
        self.clients.pop(client.fd, None)
        if client.state == "open":
            self._finished.append(client.traffic(False, why))
        self.closed[_reason(why)] += 1

    def open(self) -> int:
        """Clients past their handshake."""
        return sum(1 for c in self.clients.values() if c.state == "open")

    def subscribed(self) -> int:
        """Clients subscribed to at least one channel."""
        return sum(1 for c in self.clients.values() if c.subs)

    def traffic(self) -> tuple[ClientTraffic, ...]:
        """Clients that left (the last 256) then those connected, in connection order."""
        now = [c.traffic(True) for c in self.clients.values() if c.state == "open"]
        return (*self._finished, *now)


def _reason(why: str) -> str:
    """A close reason without its figures, to count by (``idle 30 s`` -> ``idle``)."""
    if why.startswith("protocol error"):
        return "protocol error"
    return re.sub(r" (in )?[\d.]+ s$", "", why)
