"""The decisions inside ``Ros2Source``, checked without DDS: type discovery from the graph,
what a reader's statuses and the graph's publications mean, and silence.

The DDS shell around them is tested against live peers in ``tests/adapters/ros2/``; here
each decision is driven by generated graphs and status counters, with the rule it keeps
written as the property.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from adapters.errors import SourceOpenError
from adapters.ros import SENSOR_DATA, TopicQos, dds_type_name, policy_name
from adapters.ros._discovery import POLL_S, SETTLE_S, TypeDiscovery, discover_types
from adapters.ros._live_checks import (
    SILENT_NS,
    TYPE_CHECK,
    Distributions,
    ReaderStatus,
    hash_events,
    silence_events,
    status_events,
)
from adapters.ros._live_topics import Route
from adapters.ros._participant import Publication
from adapters.ros._typestore import type_store

TOPICS = ["/imu", "/cam", "/gps", "/odd"]
TYPES = ["sensor_msgs/msg/Imu", "sensor_msgs/msg/Image", "std_msgs/msg/String"]
NOT_ROS = "acme::Thing"


class _Graph:
    """A participant whose graph shows ``looks[i]`` at its i-th look (then nothing)."""

    domain_id = 7

    def __init__(self, looks: list[list[Publication]]) -> None:
        self.looks = looks
        self.served = 0

    def publications(self) -> list[Publication]:
        self.served += 1
        index = self.served - 1
        return self.looks[index] if index < len(self.looks) else []


class _Clock:
    """Seconds that pass only when the shell sleeps."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _pub(topic: str, kind: str, key: str = "w") -> Publication:
    ros = None if "::" in kind else kind
    dds = kind if "::" in kind else dds_type_name(kind)
    return Publication(topic, ros, dds, None, key)


publications = st.builds(_pub, st.sampled_from(TOPICS), st.sampled_from([*TYPES, NOT_ROS]))


@given(
    wanted=st.lists(st.sampled_from(TOPICS), min_size=1, unique=True),
    given_types=st.dictionaries(st.sampled_from(TOPICS), st.sampled_from(TYPES)),
    looks=st.lists(st.lists(publications, max_size=4), max_size=30),
    discover_s=st.sampled_from([0.0, 0.2, 1.0, 3.0]),
)
def test_every_wanted_topic_is_typed_or_named_in_the_refusal(
    wanted: list[str],
    given_types: dict[str, str],
    looks: list[list[Publication]],
    discover_s: float,
) -> None:
    given_types = {t: k for t, k in given_types.items() if t in wanted}
    graph, clock = _Graph(looks), _Clock()
    try:
        found = discover_types(
            cast(Any, graph), wanted, given_types, discover_s, clock=clock, sleep=clock.sleep
        )
    except SourceOpenError as err:
        message = str(err)
        named = [t for t in wanted if repr(t) in message and t not in given_types]
        assert named, message
        seen = graph.looks[: graph.served]
        announced = {
            t: [{p.msgtype or p.dds_type for p in look if p.topic == t} for look in seen]
            for t in named
        }
        event(next(k for k in ("several types", "not a ROS 2", "no publisher") if k in message))
        if "several types" in message:  # two types of the topic over the looks discovery made
            assert any(len(set().union(*announced[t])) > 1 for t in named)
        elif "not a ROS 2 message type name" in message:
            assert any(NOT_ROS in kinds for t in named for kinds in announced[t])
        else:  # nobody announced the topic while discovery looked
            assert "no publisher" in message
            assert f"{discover_s:g} s on DDS domain 7" in message
            assert all(not kinds for t in named for kinds in announced[t])
    else:
        event("typed")
        assert set(found) == set(wanted)
        for topic, kind in found.items():
            if topic in given_types:
                assert kind == given_types[topic]  # a given type is never looked up
            else:
                assert kind in TYPES
                # the one type announced in every look discovery made, settling included
                typed = {
                    p.msgtype or p.dds_type
                    for look in graph.looks[: graph.served]
                    for p in look
                    if p.topic == topic
                }
                assert typed == {kind}
    # discovery ends: one look per poll up to the deadline, and one settling second
    assert graph.served <= (discover_s + SETTLE_S) / POLL_S + 3


def test_a_topic_announced_after_the_deadline_is_refused_with_the_setting_that_types_it() -> None:
    late: list[list[Publication]] = [[] for _ in range(10)] + [[_pub("/imu", TYPES[0])]]
    graph, clock = _Graph(late), _Clock()
    with pytest.raises(SourceOpenError) as caught:
        discover_types(cast(Any, graph), ["/imu"], {}, 0.2, clock=clock, sleep=clock.sleep)
    assert str(caught.value) == (
        "no publisher of ROS 2 topic '/imu' announced its type within 0.2 s on DDS domain 7; "
        'give the type (types = { "/imu" = "sensor_msgs/msg/Imu" })'
    )


def test_a_topic_announced_with_two_types_in_one_look_is_refused_with_both_named() -> None:
    look = [_pub("/imu", TYPES[0], "a"), _pub("/imu", TYPES[2], "b"), _pub("/gps", TYPES[1])]
    graph, clock = _Graph([look]), _Clock()
    with pytest.raises(SourceOpenError) as caught:
        discover_types(cast(Any, graph), ["/gps", "/imu"], {}, 1.0, clock=clock, sleep=clock.sleep)
    assert str(caught.value) == (
        "ROS 2 topic '/imu' is published with several types "
        f"({TYPES[0]}, {TYPES[2]}); give its type in types"
    )


@given(
    found_at=st.integers(0, 5),
    second_after=st.integers(1, round(SETTLE_S / POLL_S) - 1),
    kinds=st.lists(st.sampled_from([*TYPES, NOT_ROS]), min_size=2, max_size=2, unique=True).filter(
        lambda k: k[0] != NOT_ROS
    ),
)
def test_a_second_type_announced_while_settling_is_refused_with_both_named(
    found_at: int, second_after: int, kinds: list[str]
) -> None:
    """A topic typed at one look, and another publisher of it with another type a few looks
    later, still inside the settling second (was: a found topic was never looked at again,
    the first type taken and the other publisher's messages dropped)."""
    first, second = (_pub("/imu", kind, key) for kind, key in zip(kinds, "ab", strict=True))
    looks: list[list[Publication]] = [[] for _ in range(found_at)]
    looks += [[first]] * second_after + [[first, second]]
    graph, clock = _Graph(looks), _Clock()
    with pytest.raises(SourceOpenError) as caught:
        discover_types(cast(Any, graph), ["/imu"], {}, 5.0, clock=clock, sleep=clock.sleep)
    assert str(caught.value) == (
        f"ROS 2 topic '/imu' is published with several types ({', '.join(sorted(kinds))}); "
        "give its type in types"
    )
    # a type given by the user is never looked up: the other publisher is the graph check's
    given_types = {"/imu": kinds[0]}
    graph = _Graph(looks)
    found = discover_types(
        cast(Any, graph), ["/imu"], given_types, 5.0, clock=clock, sleep=clock.sleep
    )
    assert found == given_types
    assert graph.served == 0


def test_once_every_type_is_known_discovery_listens_a_settling_second_then_stops() -> None:
    policy = TypeDiscovery(["/imu"], {}, 5.0, now=0.0)
    assert policy.listening(0.0)
    assert policy.observe([_pub("/imu", TYPES[0])], 0.5) == "look"
    assert policy.settle == 0.5 + SETTLE_S
    assert policy.listening(1.0)
    assert not policy.listening(0.5 + SETTLE_S)
    assert policy.result(0) == {"/imu": TYPES[0]}
    given_only = TypeDiscovery(["/imu"], {"/imu": TYPES[1]}, 5.0, now=0.0)
    assert not given_only.listening(0.0)  # every type given: the graph is not read


# -- a reader's statuses ---------------------------------------------------------------

STORE = type_store("jazzy")
DISTROS = Distributions(STORE, "jazzy")
IMU = "sensor_msgs/msg/Imu"


def _route(qos: TopicQos = SENSOR_DATA, publishers: int = 0) -> Route:
    return Route("/imu", "imu", IMU, qos, cast(Any, None), publishers=publishers)


statuses = st.builds(
    ReaderStatus,
    lost=st.integers(0, 5),
    rejected=st.integers(0, 5),
    incompatible=st.integers(0, 2),
    last_policy=st.sampled_from([0, 2, 4, 8, 11, 13, 21, 23, TYPE_CHECK, 99]),
    matched=st.integers(0, 3),
)


@given(
    status=statuses,
    before=st.integers(0, 3),
    reliability=st.sampled_from(["best_effort", "reliable"]),
    ours_in_graph=st.booleans(),
)
def test_each_status_counter_means_one_event(
    status: ReaderStatus, before: int, reliability: str, ours_in_graph: bool
) -> None:
    qos = TopicQos(cast(Any, reliability), "volatile", 5)
    route = _route(qos, publishers=before)
    graph = [
        Publication(
            "/imu",
            IMU,
            dds_type_name(IMU) if ours_in_graph else "x::y_",
            None,
            "k",
            reliability="reliable",
        )
    ]
    read: list[int] = []

    def publications() -> list[Publication]:
        read.append(1)
        return graph

    events, joined = status_events(route, status, publications, DISTROS)
    reasons = [reason for _, reason, _, _ in events]
    units = {reason: n for _, reason, _, n in events}
    assert all(sensor == "imu" for sensor, _, _, _ in events)
    assert ("dds_lost" in reasons) == (status.lost > 0)
    assert units.get("dds_lost", status.lost) == status.lost
    # a reliable writer sends a rejected sample again: only a best-effort reader loses it
    assert ("dds_rejected" in reasons) == (reliability == "best_effort" and status.rejected > 0)
    assert units.get("dds_rejected", status.rejected) == status.rejected
    refused = status.incompatible > 0
    assert ("qos_mismatch" in reasons) == (refused and status.last_policy != TYPE_CHECK)
    assert ("distribution_mismatch" in reasons) == (
        refused and status.last_policy == TYPE_CHECK and ours_in_graph
    )
    if "qos_mismatch" in reasons:
        policy = policy_name(status.last_policy)
        assert route.mismatch == f"QoS mismatch ({policy})"
        message = next(m for _, r, m, _ in events if r == "qos_mismatch")
        # what the graph says the publisher offers of that policy, when it says
        offer = "offered: reliable" if policy == "reliability" else "see the publisher's QoS"
        assert f"{policy} ({offer})" in message
    assert bool(read) == refused  # the graph is read only to explain a refusal
    assert ("publisher_lost" in reasons) == (status.matched < before)
    assert joined == (status.matched > before)
    assert route.publishers == status.matched
    # only samples DDS lost or rejected are lost units; everything else is a warning
    assert all(n == 0 for reason, n in units.items() if reason not in ("dds_lost", "dds_rejected"))


def test_a_publisher_of_another_type_or_type_hash_is_reported_once_each() -> None:
    route = _route()
    ours = STORE.hash_rihs01(IMU)
    graph = [
        Publication("/imu", "std_msgs/msg/String", dds_type_name("std_msgs/msg/String"), None, "a"),
        Publication("/imu", IMU, dds_type_name(IMU), "RIHS01_" + "0" * 64, "b"),
        Publication("/imu", IMU, dds_type_name(IMU), ours, "c"),
        Publication("/other", "std_msgs/msg/String", "std_msgs::msg::dds_::String_", None, "d"),
    ]
    first = hash_events([route], graph, DISTROS)
    assert [reason for _, reason, _, _ in first] == ["type_mismatch", "type_hash_mismatch"]
    assert hash_events([route], graph, DISTROS) == []


class _Differ(Distributions):
    def __init__(self, others: list[str]) -> None:
        super().__init__(STORE, "jazzy")
        self.others = others

    def differing(self, msgtype: str) -> list[str]:
        return self.others


@given(
    others=st.lists(st.sampled_from(["humble", "iron", "kilted"]), unique=True),
    steps=st.lists(st.integers(0, 3 * SILENT_NS), min_size=1, max_size=6),
)
def test_silence_is_reported_once_after_five_seconds_matched(
    others: list[str], steps: list[int]
) -> None:
    route = _route(publishers=1)
    now, reported, first = 0, [], None
    for step in steps:
        now += step
        events = silence_events([route], now, _Differ(others))
        first = now if first is None else first
        reported += events
        if events:
            assert now - first >= SILENT_NS
            assert others
    assert len(reported) <= 1
    if others and now - (first or 0) >= SILENT_NS:
        assert len(reported) == 1
        assert " or ".join(others) in reported[0][2]
    route.received = 1  # a message arrived: the topic is not silent
    assert silence_events([route], now + SILENT_NS, _Differ(others)) == []
    assert route.silent_since is None
