"""The live relay's decisions without sockets (``_relay_state``): every message data routed to a
client is sent, dropped (oldest first, counted) or queued; each outbox stays within its share of
the budget; a socket that takes any number of bytes gets each message whole and in order; a late
subscriber gets the latest message (a latched channel's last ones) and the cache stays within its
bound; the relay is subscribed upstream exactly to the channels some client subscribes to."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recordings.outputs.live._relay_state import (
    LATCH_DEPTH,
    Budget,
    Channels,
    LateCache,
    Outbox,
    Resubscriptions,
    due,
    requests,
)

# One operation on a few clients' outboxes: (what, client, size or byte count)
_ops = st.lists(
    st.tuples(
        st.sampled_from(["data", "data", "data", "control", "write", "reshare"]),
        st.integers(0, 3),
        st.integers(1, 5000),
    ),
    max_size=80,
)


def _message(number: int, size: int) -> tuple[bytes, bytes]:
    """A message whose prefix names it: ``number`` as 8 bytes, then ``size`` payload bytes."""
    return number.to_bytes(8, "little"), bytes([number % 251]) * size


def _numbers(box: Outbox, data: bool, in_flight: bool = True) -> list[int]:
    return [
        int.from_bytes(e[0][:8], "little")
        for e in box.entries
        if e[2] == data and (in_flight or e[4] == 0)
    ]


@settings(max_examples=150, deadline=None)
@given(_ops, st.integers(1, 12), st.integers(2_000, 40_000), st.integers(1_000, 20_000))
def test_every_message_is_sent_dropped_or_queued_and_drops_are_the_oldest(
    ops: list[tuple[str, int, int]], backlog: int, budget: int, backlog_bytes: int
) -> None:
    boxes = [Outbox() for _ in range(4)]
    budget_ = Budget(budget, backlog, backlog_bytes)
    streams: list[bytearray] = [bytearray() for _ in boxes]  # what each socket took
    pushed: list[dict[int, bytes]] = [{} for _ in boxes]  # number -> the message's bytes
    dropped_seen: list[set[int]] = [set() for _ in boxes]
    for number, (what, who, size) in enumerate(ops):
        box = boxes[who]
        if what in ("data", "control"):
            before = set(_numbers(box, True))
            prefix, payload = _message(number, size)
            budget_.push(box, prefix, payload, data=what == "data")
            pushed[who][number] = prefix + payload
            dropped_seen[who] |= before - set(_numbers(box, True))
            if what == "data":
                # over its share or its backlog only when nothing older can be dropped
                droppable = _numbers(box, True, in_flight=False)
                if box.bytes > budget_.share or box.data > backlog:
                    assert droppable == [number]
        elif what == "write":
            parts = b"".join(bytes(p) for p in box.parts())
            taken = parts[:size]
            streams[who] += taken
            full = budget_.wrote(box, len(taken))
            assert full == (bool(box.entries) and box.entries[0][4] != 0)
        else:
            budget_.reshare(size % 5)
            assert budget_.share == min(backlog_bytes, budget // max(1, size % 5))
        # the accounting, after every step
        assert budget_.queued == sum(b.bytes for b in boxes)
        assert budget_.peak >= budget_.queued
        for b in boxes:
            assert b.bytes == sum(e[3] for e in b.entries)
            assert b.data == len(_numbers(b, True))
            assert b.control == len(_numbers(b, False))
            assert b.received == b.sent + b.dropped + b.queued
            assert b.queued == b.data
            assert sum(1 for e in b.entries if e[4]) <= 1  # only the head is ever part-written
    for who, box in enumerate(boxes):
        # the drops are counted, and they were older than every message not being written
        assert box.dropped == len(dropped_seen[who])
        waiting = _numbers(box, True, in_flight=False)
        assert all(d < w for d in dropped_seen[who] for w in waiting)
        # the socket got whole messages in order, none of the dropped ones, then a part of one
        budget_.wrote(box, 0)
        rest = b"".join(bytes(p) for p in box.parts(limit=len(box.entries)))
        kept = [n for n in sorted(pushed[who]) if n not in dropped_seen[who]]
        assert bytes(streams[who]) + rest == b"".join(pushed[who][n] for n in kept)
        budget_.discard(box)
    assert budget_.queued == 0


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(1, 4000)), max_size=60),
)
def test_clients_within_their_share_hold_at_most_the_budget_and_one_message_each(
    clients: int, pushes: list[tuple[int, int]]
) -> None:
    """Message data only, each message under a share: all outboxes together hold at most the
    budget, plus the one message each client's socket is part-way through."""
    budget, backlog = 32_000, 64
    budget_ = Budget(budget, backlog, budget)
    budget_.reshare(clients)
    boxes = [Outbox() for _ in range(clients)]
    for n, (who, size) in enumerate(pushes):
        box = boxes[who % clients]
        size = min(size, budget_.share - 8)
        budget_.push(box, n.to_bytes(8, "little"), b"x" * size, data=True)
        if n % 7 == 0:  # the socket takes part of the head now and then
            budget_.wrote(box, 3)
        in_flight = sum(e[3] for b in boxes for e in b.entries if e[4])
        assert budget_.queued - in_flight <= budget
        assert all(b.bytes - sum(e[3] for e in b.entries if e[4]) <= budget_.share for b in boxes)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.booleans(), st.integers(1, 3000)),
        max_size=400,
    ),
)
def test_the_late_cache_keeps_the_latest_within_its_bounds(
    messages: list[tuple[int, bool, int]],
) -> None:
    budget = 64_000
    cache = LateCache(budget)
    latched = {0: False, 1: True, 2: True}
    arrived: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for n, (cid, _, size) in enumerate(messages):
        data = memoryview(n.to_bytes(4, "little") + b"\0" * size)
        cache.keep(cid, latched[cid], n.to_bytes(8, "little"), data)
        arrived[cid].append(n)
        kept = {c: [int.from_bytes(t, "little") for t, _ in cache.kept(c)] for c in arrived}
        assert cache.bytes == sum(d.nbytes for c in arrived for _, d in cache.kept(c))
        assert cache.bytes <= budget // 4
        for c, numbers in kept.items():
            assert numbers == sorted(numbers)  # oldest first, as they came
            assert set(numbers) <= set(arrived[c])
            assert len(numbers) <= (LATCH_DEPTH if latched[c] else 1)
        if data.nbytes <= budget // 16 and cache.bytes <= budget // 4 - budget // 16:
            assert kept[cid][-1] == n  # room was left: the latest is what a subscriber gets
    for cid in arrived:
        cache.forget(cid)
    assert cache.bytes == 0


def test_a_late_subscriber_of_a_latched_channel_gets_its_last_messages_in_order() -> None:
    cache = LateCache(1 << 30)
    for n in range(LATCH_DEPTH + 10):
        cache.keep(7, True, n.to_bytes(8, "little"), memoryview(b"m"))
    got = [int.from_bytes(t, "little") for t, _ in cache.kept(7)]
    assert got == list(range(10, LATCH_DEPTH + 10))
    cache.keep(8, False, b"\0" * 8, memoryview(b"x" * ((1 << 30) // 16 + 1)))
    assert cache.kept(8) == ()  # over budget / 16: not kept


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["sub", "sub", "unsub", "carry", "unadvertise", "advertise"]),
            st.integers(0, 3),
            st.integers(0, 4),
            st.integers(0, 3),
        ),
        max_size=60,
    )
)
def test_the_relay_is_subscribed_upstream_to_exactly_the_channels_clients_want(
    ops: list[tuple[str, int, int, int]],
) -> None:
    channels = Channels(1 << 24)
    channels.advertised([{"id": c, "topic": f"/t{c}"} for c in range(3)])
    subs: dict[int, dict[int, int]] = {client: {} for client in range(4)}
    upstream: set[int] = set()
    carried: dict[int, list[int]] = {}
    for n, (op, client, sid, cid) in enumerate(ops):
        if op == "sub":
            got = channels.subscribe(subs[client], client, sid, cid)
            if got is not None:
                first, kept = got
                assert first == (cid not in upstream)
                upstream.add(cid)
                assert subs[client][sid] == cid
                if cid in carried:  # the latest before anything newer (/t1 latched: all)
                    times = [int.from_bytes(t, "little") for t, _ in kept]
                    assert times == (carried[cid] if cid == 1 else carried[cid][-1:])
        elif op == "unsub":
            left = channels.unsubscribe(subs[client], client, sid)
            if left is not None:
                upstream.discard(left)
        elif op == "carry":
            data = memoryview(b"d" * 10)
            targets = channels.carry(cid, {"/t1"}, n.to_bytes(8, "little"), data)
            if cid in channels.channels:
                carried.setdefault(cid, []).append(n)
            assert sorted(targets) == sorted(
                (c, s) for c in subs for s, ch in subs[c].items() if ch == cid
            )
        elif op == "unadvertise":
            for c, s in channels.unadvertised([cid]):
                subs[c].pop(s, None)
            upstream.discard(cid)
            carried.pop(cid, None)
            assert cid not in [c["id"] for c in json.loads(channels.advertise)["channels"]]
        else:
            channels.advertised([{"id": cid, "topic": f"/t{cid}"}])
        wanted = {ch for mine in subs.values() for ch in mine.values()}
        assert upstream == wanted
        for mine in subs.values():
            assert len(set(mine.values())) == len(mine)  # one subscription per channel


@given(
    st.booleans(),
    st.floats(0, 100),
    st.floats(0, 100),
    st.booleans(),
    st.floats(0, 200),
    st.floats(0.1, 60),
)
def test_a_clients_clock_closes_the_silent_and_pings_once(
    handshaking: bool, deadline: float, heard: float, pinged: bool, now: float, idle: float
) -> None:
    what = due(handshaking, deadline, heard, pinged, now, idle)
    if handshaking:
        assert what == ("handshake timeout" if now > deadline else None)
    elif now - heard > idle:
        assert what == "idle"
    elif now - heard > idle / 2:
        assert what == (None if pinged else "ping")
    else:
        assert what is None


def test_requests_are_made_one_by_one_until_one_is_not_understood() -> None:
    body = json.dumps(
        {"op": "subscribe", "subscriptions": [{"id": 1, "channelId": 2}, {"id": -1}]}
    ).encode()
    got = requests(body)
    assert next(got) == ("subscribe", 1, 2)
    with pytest.raises(ValueError, match="-1"):
        next(got)
    body = json.dumps({"op": "unsubscribe", "subscriptionIds": [3, 4]}).encode()
    assert list(requests(body)) == [("unsubscribe", 3, 0), ("unsubscribe", 4, 0)]
    assert list(requests(b'{"op": "getParameters"}')) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 3.0, allow_nan=False), min_size=1, max_size=60))
def test_a_refused_channel_is_tried_again_after_a_doubling_wait_until_it_is_given_up(
    gaps: list[float],
) -> None:
    """Refusals ``gaps`` s apart (each after the last retry came due, or later): the waits
    go 2 ms, 4, 8... up to 100 ms; a run of refusals longer than ``give_up`` s is given up
    (forgotten, nothing due); a refusal after ``give_up`` s of quiet starts a new run."""
    policy = Resubscriptions(first=0.002, longest=0.1, give_up=1.0)
    now, since, wait, last = 100.0, None, 0.0, 0.0
    for gap in gaps:
        now += wait + gap  # never before the last retry came due
        if since is not None and now - last > 1.0:
            since, wait = None, 0.0
        if since is None:
            since = now
        tried = policy.refused(7, now)
        if now - since > 1.0:
            assert not tried
            assert policy.next_at() is None
            assert policy.due(now + 99) == []
            since, wait = None, 0.0
            continue
        assert tried
        wait = 0.002 if not wait else min(2 * wait, 0.1)
        assert policy.next_at() == pytest.approx(now + wait)
        assert policy.due(now + wait / 2) == []
        assert policy.due(now + wait) == [7]  # once: due again only after a new refusal
        assert policy.due(now + 99) == []
        last = now


def test_a_forgotten_channel_is_not_tried_again() -> None:
    policy = Resubscriptions()
    policy.refused(1, 0.0)
    policy.refused(2, 0.0)
    policy.forget(1)
    assert policy.due(1.0) == [2]
