"""The live relay's decisions, with no sockets and no clock of their own: what each client's
outbox holds within the memory budget and what it drops (counted), what a late subscriber
gets, which channel a client may subscribe to, and when a silent client is pinged or closed.

:class:`~recordings.outputs.live._relay.Relay` is the shell: it owns the sockets, the
selector, the thread and the lock, reads the clock, and carries these decisions out (it
calls everything here under its lock; nothing here is thread-safe by itself).

* :class:`Budget` and :class:`Outbox`: each client's outbox holds at most ``backlog``
  message data and its share of ``budget`` bytes (the budget over the clients connected, at
  most ``backlog_bytes``); over its share a client drops its oldest message data not being
  written, counted for it. Control messages are never dropped. Every message data routed to
  a client is sent, dropped or still queued (``received == sent + dropped + queued``).
* :class:`LateCache`: the last message of every channel (every message of a latched
  channel, up to 256), if under ``budget / 16``, all together under ``budget / 4``.
* :class:`Channels`: the channels advertised and who subscribes to each: the first
  subscriber of a channel subscribes the relay upstream, the last one to leave unsubscribes
  it; a new subscriber gets what :class:`LateCache` kept for it before anything newer.
* :class:`Resubscriptions`: a subscription the SDK refused because it did not know the
  channel yet (it advertises a channel before it takes subscriptions to it) is made again,
  2 ms later, then at twice the last wait up to 100 ms, for 10 s at most.
* :func:`due`: a client past its handshake deadline, or silent for ``idle_timeout`` s, is
  closed; one silent for half of it is pinged once.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, deque
from collections.abc import Container, Iterable, Iterator
from typing import Any, Literal

LATCH_DEPTH = 256
"""Messages kept for a latched channel's late subscribers."""
IOV = 64
"""Messages written by one ``sendmsg``."""

# An outbox entry: [prefix, payload, is_data, size, offset written]
_PREFIX, _PAYLOAD, _DATA, _SIZE, _OFFSET = range(5)


class Outbox:
    """One client's queued messages and its counts (message data: received, sent, dropped)."""

    __slots__ = ("bytes", "control", "data", "dropped", "entries", "received", "sent")

    def __init__(self) -> None:
        self.entries: deque[list[Any]] = deque()
        self.bytes = self.data = self.control = 0
        self.received = self.sent = self.dropped = 0

    @property
    def queued(self) -> int:
        """Message data routed here and neither sent nor dropped."""
        return self.received - self.sent - self.dropped

    def parts(self, limit: int = IOV) -> list[Any]:
        """What one ``sendmsg`` writes: the unwritten bytes of the first ``limit`` entries."""
        parts: list[Any] = []
        for prefix, payload, _, _, offset in itertools.islice(self.entries, limit):
            if offset < len(prefix):
                parts.append(memoryview(prefix)[offset:])
                parts.append(payload)
            else:
                parts.append(memoryview(payload)[offset - len(prefix) :])
        return parts


class Budget:
    """Every client's outbox within its share of ``budget`` bytes and ``backlog`` messages."""

    def __init__(self, budget: int, backlog: int, backlog_bytes: int) -> None:
        self.budget = budget
        self.backlog = backlog
        self.backlog_bytes = backlog_bytes
        self.share = min(backlog_bytes, budget)
        """One client's bytes: the budget over the clients connected (``backlog_bytes`` at most)."""
        self.queued = 0
        """Bytes in every outbox now."""
        self.peak = 0
        """The most bytes every outbox held together at once."""

    def reshare(self, open_clients: int) -> None:
        """``open_clients`` are connected now: each one's share of the budget."""
        self.share = min(self.backlog_bytes, self.budget // max(1, open_clients))

    def push(self, box: Outbox, prefix: bytes, payload: Any, data: bool) -> None:
        """Queue one message in ``box``; message data drops ``box``'s oldest message data
        (not being written) until it fits its share and its backlog, or none is left."""
        size = len(prefix) + len(payload)
        if data:
            box.received += 1
            while self.full(box, size):
                if not self.drop_oldest(box):
                    break
            box.data += 1
        else:
            box.control += 1
        box.entries.append([prefix, payload, data, size, 0])
        box.bytes += size
        self.queued += size
        if self.queued > self.peak:
            self.peak = self.queued

    def full(self, box: Outbox, size: int) -> bool:
        """Whether message data of ``size`` bytes would drop ``box``'s oldest message data
        now: it holds some and is at its backlog, or the new one would take it over its
        share."""
        return bool(box.data) and (box.data >= self.backlog or box.bytes + size > self.share)

    def drop_oldest(self, box: Outbox) -> bool:
        """Drop ``box``'s oldest message data not being written (counted); ``False`` if none."""
        for i, entry in enumerate(box.entries):
            if entry[_DATA] and entry[_OFFSET] == 0:
                del box.entries[i]
                box.data -= 1
                box.bytes -= entry[_SIZE]
                self.queued -= entry[_SIZE]
                box.dropped += 1
                return True
        return False

    def wrote(self, box: Outbox, sent: int) -> bool:
        """The socket took ``sent`` bytes of ``box``: the whole messages leave it. ``True``
        if it took part of a message (it is full: wait until it is writable)."""
        entries = box.entries
        while sent and entries:
            entry = entries[0]
            left = entry[_SIZE] - entry[_OFFSET]
            if sent < left:
                entry[_OFFSET] += sent
                break
            sent -= left
            entries.popleft()
            box.bytes -= entry[_SIZE]
            self.queued -= entry[_SIZE]
            if entry[_DATA]:
                box.data -= 1
                box.sent += 1
            else:
                box.control -= 1
        return bool(entries) and entries[0][_OFFSET] != 0

    def discard(self, box: Outbox) -> None:
        """The client left: its outbox's bytes leave the budget (its queued count stays)."""
        self.queued -= box.bytes
        box.entries.clear()


class LateCache:
    """What a late subscriber gets first: per channel, the last message (every message of a
    latched channel, the last ``LATCH_DEPTH``), each under ``budget / 16``, all under
    ``budget / 4``."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.bytes = 0
        """Bytes kept, all channels together."""
        self._kept: dict[int, deque[tuple[bytes, memoryview]]] = {}

    def keep(self, cid: int, latched: bool, log_time: bytes, data: memoryview) -> None:
        """Channel ``cid`` carried ``data`` (logged at ``log_time``)."""
        if data.nbytes > self.budget // 16:
            return
        kept = self._kept.setdefault(cid, deque())
        while kept and (not latched or len(kept) >= LATCH_DEPTH):
            self.bytes -= kept.popleft()[1].nbytes
        if self.bytes + data.nbytes > self.budget // 4:
            return  # the cache's own bound: this channel's late subscribers wait
        kept.append((log_time, data))
        self.bytes += data.nbytes

    def kept(self, cid: int) -> tuple[tuple[bytes, memoryview], ...]:
        """``(log time, payload)`` of what channel ``cid`` keeps, oldest first."""
        return tuple(self._kept.get(cid, ()))

    def forget(self, cid: int) -> None:
        """Channel ``cid`` is gone."""
        for _, data in self._kept.pop(cid, ()):
            self.bytes -= data.nbytes


class Channels:
    """The channels advertised upstream, who subscribes to each (per channel
    ``{client: subscription id}``; a client's own ``{subscription id: channel}`` is its
    ``subs``) and what a late subscriber gets (:attr:`late`). The first subscriber of a
    channel subscribes the relay upstream, the last one to leave unsubscribes it."""

    def __init__(self, budget: int) -> None:
        self.channels: dict[int, dict[str, Any]] = {}
        self.advertise = b""
        """Every channel in one advertise message (what a new client gets)."""
        self.late = LateCache(budget)
        self._subscribers: dict[int, dict[int, int]] = {}

    def advertised(self, channels: list[dict[str, Any]]) -> None:
        for channel in channels:
            self.channels[int(channel["id"])] = channel
        self._readvertise()

    def unadvertised(self, cids: Iterable[int]) -> list[tuple[int, int]]:
        """Forget channels ``cids``: the ``(client, subscription id)`` they had."""
        gone: list[tuple[int, int]] = []
        for cid in cids:
            if self.channels.pop(cid, None) is not None:
                self.late.forget(cid)
            gone.extend(self._subscribers.pop(cid, {}).items())
        self._readvertise()
        return gone

    def _readvertise(self) -> None:
        channels = list(self.channels.values())
        self.advertise = json.dumps({"op": "advertise", "channels": channels}).encode()

    def subscribe(
        self, subs: dict[int, int], client: int, sid: int, cid: int
    ) -> tuple[bool, tuple[tuple[bytes, memoryview], ...]] | None:
        """``client`` (whose subscriptions are ``subs``) asks for channel ``cid`` as ``sid``:
        ``None`` if refused (an unknown channel, a used id, a channel it has), else whether
        it is the channel's first subscriber (the relay subscribes upstream) and the
        ``(log time, payload)`` kept for it (sent first, oldest first)."""
        if cid not in self.channels or sid in subs or cid in subs.values():
            return None
        subs[sid] = cid
        subscribers = self._subscribers.setdefault(cid, {})
        first = not subscribers
        subscribers[client] = sid
        return first, self.late.kept(cid)

    def watched(self, cid: int) -> bool:
        """Whether channel ``cid`` is advertised and some client subscribes to it."""
        return cid in self.channels and bool(self._subscribers.get(cid))

    def unsubscribe(self, subs: dict[int, int], client: int, sid: int) -> int | None:
        """``client`` ends its subscription ``sid``: the channel the relay unsubscribes
        upstream (it was the last subscriber), or ``None``."""
        cid = subs.pop(sid, None)
        if cid is None:
            return None
        subscribers = self._subscribers.get(cid, {})
        subscribers.pop(client, None)
        if not subscribers and cid in self.channels:
            self._subscribers.pop(cid, None)
            return cid
        return None

    def carry(
        self, cid: int, latched: Container[str], log_time: bytes, data: memoryview
    ) -> list[tuple[int, int]]:
        """Channel ``cid`` carried ``data``: kept for late subscribers (every message when
        its topic is in ``latched``); the ``(client, subscription id)`` it goes to."""
        channel = self.channels.get(cid)
        if channel is not None:
            self.late.keep(cid, channel["topic"] in latched, log_time, data)
        return list(self._subscribers.get(cid, {}).items())


class Resubscriptions:
    """When to subscribe again to channels the SDK refused (:func:`~recordings.outputs.live.
    _compat_foxglove.unknown_channel`): ``first`` s after the first refusal, then twice the
    last wait up to ``longest`` s, until ``give_up`` s after the first refusal of a run of
    them (a channel not refused again for ``give_up`` s starts a new run). Times are the
    caller's monotonic seconds."""

    def __init__(self, first: float = 0.002, longest: float = 0.1, give_up: float = 10.0) -> None:
        self.first = first
        self.longest = longest
        self.give_up = give_up
        self._due: dict[int, float] = {}  # channel -> when to subscribe again
        self._runs: dict[int, tuple[float, float, float]] = {}
        # channel -> (its run's first refusal, the last wait, the last refusal)

    def refused(self, cid: int, now: float) -> bool:
        """The SDK refused channel ``cid`` at ``now``: ``True`` if it is tried again (when
        :meth:`due` says), ``False`` if its run of refusals is over ``give_up`` s old (given
        up: it is forgotten)."""
        since, wait, last = self._runs.get(cid, (now, 0.0, now))
        if now - last > self.give_up:  # accepted for a long time since: a new run
            since, wait = now, 0.0
        elif now - since > self.give_up:
            self.forget(cid)
            return False
        wait = self.first if not wait else min(2 * wait, self.longest)
        self._runs[cid] = (since, wait, now)
        self._due[cid] = now + wait
        return True

    def due(self, now: float) -> list[int]:
        """The channels to subscribe to again now (each once; a new refusal adds it back)."""
        ready = [cid for cid, at in self._due.items() if at <= now]
        for cid in ready:
            del self._due[cid]
        return ready

    def next_at(self) -> float | None:
        """When the next channel is due, or ``None``."""
        return min(self._due.values(), default=None)

    def forget(self, cid: int) -> None:
        """Channel ``cid`` was unadvertised or lost its last subscriber."""
        self._due.pop(cid, None)
        self._runs.pop(cid, None)


def requests(payload: bytes) -> Iterator[tuple[str, int, int]]:
    """A client's text message as ``("subscribe", sid, cid)`` and ``("unsubscribe", sid, 0)``
    requests, one by one (other ops: none); ``ValueError`` (or ``KeyError``, ``TypeError``,
    ``AttributeError``) where the relay does not understand it: those before were made."""
    request = json.loads(payload)
    op = request.get("op")
    if op == "subscribe":
        for sub in request["subscriptions"]:
            sid = int(sub["id"])
            if not 0 <= sid < 1 << 32:
                raise ValueError(sid)
            yield "subscribe", sid, int(sub["channelId"])
    elif op == "unsubscribe":
        for sid in request["subscriptionIds"]:
            yield "unsubscribe", int(sid), 0


Due = Literal["handshake timeout", "idle", "ping"] | None


def due(
    handshaking: bool,
    deadline: float,
    heard: float,
    pinged: bool,
    now: float,
    idle_timeout: float,
) -> Due:
    """What a client's clock asks at ``now``: ``handshake timeout`` (past ``deadline`` with
    no upgrade request), ``idle`` (nothing heard for ``idle_timeout`` s), ``ping`` (nothing
    for half of it, not pinged yet) or ``None``."""
    if handshaking:
        return "handshake timeout" if now > deadline else None
    silent = now - heard
    if silent > idle_timeout:
        return "idle"
    if silent > idle_timeout / 2 and not pinged:
        return "ping"
    return None


class Tally:
    """Connections refused, by reason; each kind of trouble said once."""

    def __init__(self) -> None:
        self.refused: Counter[str] = Counter()
        self._said: set[str] = set()

    def first(self, kind: str) -> bool:
        """Whether ``kind`` is said now (its first time)."""
        if kind in self._said:
            return False
        self._said.add(kind)
        return True
