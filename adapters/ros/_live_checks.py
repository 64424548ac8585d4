"""What DDS and the DDS graph say about a live ROS 2 source's topics, decided without I/O.

Each function takes what was read (a reader's status counters, the graph's publications,
the time) and returns the events to count, ``(sensor, reason, message, units lost)``
(``units == 0`` is a warning), updating the topic's :class:`~adapters.ros._live_topics.Route`
(publishers matched, why the last one was refused, hashes already reported). The shell
(:class:`~adapters.ros._taker.Taker`, :class:`~adapters.ros.Ros2Source`) reads DDS and counts.

* a reader's statuses (:func:`status_events`): samples DDS lost (``dds_lost``) or rejected
  from a full best-effort queue (``dds_rejected``), a publisher whose QoS DDS refused to
  match (``qos_mismatch``, the policy named with what the graph says it offers) or whose
  XTypes layout is another distribution's (``distribution_mismatch``), a publisher gone
  (``publisher_lost``);
* the graph (:func:`hash_events`): a publisher of another type (``type_mismatch``) or of
  another type hash (``type_hash_mismatch``), once each;
* silence (:func:`silence_events`): matched for 5 s and nothing arrived, of a type other
  distributions define differently (``distribution_mismatch``), once per topic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.ros._live_topics import Route
from adapters.ros._names import dds_type_name
from adapters.ros._participant import Publication
from adapters.ros._typestore import ros_distros, type_store

Event = tuple[str, str, str, int]
"""``(sensor, reason, message, units lost)``; ``units == 0`` is a warning."""

SILENT_NS = 5_000_000_000
"""Matched this long and nothing arrived: a layout DDS drops?"""

_POLICIES = {
    2: "durability",
    4: "deadline",
    8: "liveliness",
    11: "reliability",
    13: "history",
    21: "lifespan",
    23: "data representation",
}
"""DDS QoS policy ids (DDS 1.4, 2.2.4.1) a ROS 2 reader and writer can disagree on."""
TYPE_CHECK = 24
"""TYPE_CONSISTENCY_ENFORCEMENT: the writer's XTypes type is not ours."""


def policy_name(policy_id: int) -> str:
    """A DDS QoS policy id as ROS 2 names the policy (``11`` -> ``reliability``)."""
    return _POLICIES.get(policy_id, f"policy {policy_id}")


@dataclass(frozen=True, slots=True)
class ReaderStatus:
    """What DDS counted on one reader since it was last asked."""

    lost: int = 0
    """Samples DDS knows were sent and never arrived (``SAMPLE_LOST`` change)."""
    rejected: int = 0
    """Samples that found the queue full (``SAMPLE_REJECTED`` change; best effort only)."""
    incompatible: int = 0
    """Writers refused for their QoS (``REQUESTED_INCOMPATIBLE_QOS`` change)."""
    last_policy: int = 0
    """The policy id of the last refusal."""
    matched: int = 0
    """Writers matched now (``SUBSCRIPTION_MATCHED`` current count)."""


def read_status(route: Route) -> ReaderStatus:
    """Read (and so reset) ``route``'s reader's status changes; the rejected count only of a
    best-effort reader (a reliable writer sends a rejected sample again)."""
    reader = route.reader
    incompatible = reader.get_requested_incompatible_qos_status()
    return ReaderStatus(
        lost=reader.get_sample_lost_status().total_count_change,
        rejected=reader.get_sample_rejected_status().total_count_change
        if route.qos.reliability == "best_effort"
        else 0,
        incompatible=incompatible.total_count_change,
        last_policy=int(incompatible.last_policy_id),
        matched=int(reader.get_subscription_matched_status().current_count),
    )


class Distributions:
    """The other ROS 2 distributions' definitions, against ``ros_distro``'s (type stores)."""

    def __init__(self, store: Any, ros_distro: str) -> None:
        self.store = store
        self.ros_distro = ros_distro

    def differing(self, msgtype: str) -> list[str]:
        """The ROS 2 distributions (rosbags' stores) whose ``msgtype`` is not ours."""
        mine = self.store.fielddefs[msgtype]
        out = []
        for distro in ros_distros():
            if distro in ("noetic", self.ros_distro):
                continue
            defs = type_store(distro).fielddefs.get(msgtype)
            if defs is not None and defs != mine:
                out.append(distro)
        return out


def status_events(
    route: Route,
    status: ReaderStatus,
    publications: Callable[[], Sequence[Publication]],
    distros: Distributions,
) -> tuple[list[Event], bool]:
    """The events of one reader's statuses, and whether a publisher joined (check its type
    hash). ``publications`` is read only when DDS refused a publisher."""
    sensor, topic, out = route.sensor, route.topic, []
    if status.lost > 0:
        message = f"ROS 2 topic {topic!r}: DDS lost {status.lost} samples"
        out.append((sensor, "dds_lost", message, status.lost))
    if route.qos.reliability == "best_effort" and status.rejected > 0:
        message = (
            f"ROS 2 topic {topic!r}: {status.rejected} samples found the queue of "
            f"{route.qos.depth} full and were dropped (the pipeline fell behind)"
        )
        out.append((sensor, "dds_rejected", message, status.rejected))
    if status.incompatible > 0 and status.last_policy == TYPE_CHECK:
        layout = layout_mismatch(route, publications(), distros)
        if layout is not None:  # another name is a type_mismatch (graph check)
            route.mismatch = "distribution mismatch"
            out.append((sensor, "distribution_mismatch", layout, 0))
    elif status.incompatible > 0:
        policy = policy_name(status.last_policy)
        route.mismatch = f"QoS mismatch ({policy})"
        message = (
            f"ROS 2 topic {topic!r}: a publisher's QoS is incompatible with this source's "
            f"requested {route.qos.describe()}: {policy} "
            f"({offered(route, policy, publications())}); DDS does not match them, set this "
            f"topic's qos {policy} to what the publisher offers"
        )
        out.append((sensor, "qos_mismatch", message, 0))
    count, joined = status.matched, False
    if count < route.publishers:
        message = (
            f"ROS 2 topic {topic!r}: a publisher went away "
            f"({count} left{'; waiting for one' if not count else ''})"
        )
        out.append((sensor, "publisher_lost", message, 0))
    elif count > route.publishers:
        joined = True
    route.publishers = count
    return out, joined


def layout_mismatch(
    route: Route, publications: Sequence[Publication], distros: Distributions
) -> str | None:
    """The message for a publisher of ``route``'s DDS type whose XTypes layout DDS found
    different from ours (another distribution's definition); ``None`` if none has our
    type's name (a publisher of another type: a ``type_mismatch``)."""
    ours = dds_type_name(route.msgtype)
    if not any(p.topic == route.topic and p.dds_type == ours for p in publications):
        return None
    others = distros.differing(route.msgtype)
    where = f"{', '.join(others)} define it differently" if others else "no other rosbags store"
    return (
        f"ROS 2 topic {route.topic!r}: a publisher's {route.msgtype} has another layout "
        f"than ROS 2 {distros.ros_distro}'s (DDS's type check refused it): the robot runs "
        f"another ROS 2 distribution ({where}); set ros_distro to the robot's"
    )


def offered(route: Route, policy: str, publications: Sequence[Publication]) -> str:
    """What the topic's publishers in the graph offer of ``policy`` (for the message)."""
    offers = sorted(
        {
            str(getattr(pub, policy))
            for pub in publications
            if pub.topic == route.topic and getattr(pub, policy, None)
        }
    )
    return f"offered: {', '.join(offers)}" if offers else "see the publisher's QoS"


def hash_events(
    routes: Sequence[Route], publications: Sequence[Publication], distros: Distributions
) -> list[Event]:
    """A publisher of another type (DDS does not match it) and one whose type hash is not
    this distribution's (Iron and later send one), once each."""
    out = []
    for route in routes:
        ours = distros.store.hash_rihs01(route.msgtype)
        for pub in publications:
            if pub.topic != route.topic:
                continue
            if pub.dds_type != dds_type_name(route.msgtype) and pub.key not in route.hashes:
                route.hashes.add(pub.key)  # DDS will not match it: say why it is ignored
                message = (
                    f"ROS 2 topic {route.topic!r}: a publisher sends "
                    f"{pub.msgtype or pub.dds_type}, not {route.msgtype}; it is not read"
                )
                out.append((route.sensor, "type_mismatch", message, 0))
                continue
            if not pub.type_hash or pub.type_hash == ours or pub.type_hash in route.hashes:
                continue
            route.hashes.add(pub.type_hash)
            message = (
                f"ROS 2 topic {route.topic!r}: a publisher's {route.msgtype} has type hash "
                f"{pub.type_hash}, not ROS 2 {distros.ros_distro}'s {ours}: its definition "
                "differs (another ROS 2 distribution?); set ros_distro to the robot's"
            )
            out.append((route.sensor, "type_hash_mismatch", message, 0))
    return out


def silence_events(routes: Sequence[Route], now: int, distros: Distributions) -> list[Event]:
    """A publisher matched for 5 s and nothing arrived, of a type that other distributions
    define differently: say that the robot may run one of them (a node without XTypes type
    information or type hash, as rmw_fastrtps and rmw_cyclonedds on Humble, is matched by
    name, and Cyclone drops every sample that does not fit our layout on receipt, where no
    counter shows it). Once per topic."""
    out = []
    for route in routes:
        if route.received or not route.publishers:
            route.silent_since = None
            continue
        if route.silent_since is None:
            route.silent_since = now
            continue
        if now - route.silent_since < SILENT_NS or route.mismatch:
            continue
        others = distros.differing(route.msgtype)
        route.mismatch = "distribution mismatch?"
        if not others:
            continue
        message = (
            f"ROS 2 topic {route.topic!r}: a publisher has been matched for "
            f"{SILENT_NS // 1_000_000_000} s and nothing arrived: if the robot runs ROS 2 "
            f"{' or '.join(others)}, whose {route.msgtype} has another layout than "
            f"{distros.ros_distro}'s, DDS drops every message on receipt; set ros_distro "
            "to the robot's"
        )
        out.append((route.sensor, "distribution_mismatch", message, 0))
    return out
