"""Learning each topic's ROS 2 type from the DDS graph: a sans-I/O policy and its thin shell.

The publications a ROS 2 node announces carry their DDS type name
(``sensor_msgs::msg::dds_::Imu_``), which names the ROS 2 type.
:class:`TypeDiscovery` decides from what was seen and the time: a topic with one type is
found; one with several, or with a DDS type that is no ROS 2 type name, is refused; once
every type is known it listens a little longer (at most until the deadline), still reading
every topic not given a type (a second type announced then is refused too), and then
stops; past the deadline a topic still unknown is refused, named, with the setting that
gives its type. :func:`discover_types` only reads the graph, reads the clock and sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from adapters.errors import SourceOpenError
from adapters.ros._participant import Participant, Publication

SETTLE_S = 1.0
"""Discovery listens this much longer once every type is known (never past the deadline)."""
POLL_S = 0.05
"""The wait between two looks at the graph."""

Step = Literal["look", "wait", "stop"]
"""After one look: look again at once, wait :data:`POLL_S` first, or stop looking."""


class TypeDiscovery:
    """Each wanted topic's ROS 2 type: given, else announced by its publishers (sans-I/O).

    ``now`` is any monotonic time in seconds; the caller looks at the graph while
    :meth:`listening`, hands each look to :meth:`observe`, and asks :meth:`result` at the end.
    """

    def __init__(
        self, wanted: Iterable[str], given: Mapping[str, str], discover_s: float, now: float
    ) -> None:
        self.given = dict(given)
        self.found = dict(given)
        """Topic -> ROS 2 type, for the topics known so far."""
        self.missing = [t for t in wanted if t not in self.found]
        """Topics whose type is not known yet, in the order wanted."""
        self.watched = frozenset(self.missing)
        """Topics not given a type: their announcements are read until discovery ends, found
        or not, so a second type announced while settling is refused too."""
        self.discover_s = discover_s
        self.deadline = now + discover_s
        self.seen: dict[str, set[str]] = {}
        """Types announced per watched topic, over every look."""
        self.settle: float | None = None
        """Once every type is known: when to stop listening."""

    def listening(self, now: float) -> bool:
        """Whether to look at the graph (again)."""
        return bool(self.missing) or (self.settle is not None and now < self.settle)

    def observe(self, publications: Iterable[Publication], now: float) -> Step:
        """Take one look at the graph's publications; raise for a topic that cannot be read."""
        for pub in publications:
            if pub.topic in self.watched:
                self.seen.setdefault(pub.topic, set()).add(pub.msgtype or pub.dds_type)
        for topic, kinds in self.seen.items():
            if len(kinds) > 1:  # a found topic too: a second type announced while settling
                raise _several(topic, kinds)
        for topic in list(self.missing):
            if not self.seen.get(topic):
                continue
            (kind,) = self.seen[topic]
            if "::" in kind:
                raise SourceOpenError(
                    f"ROS 2 topic {topic!r} has DDS type {kind!r}, which is not a ROS 2 "
                    "message type name (pkg::msg::dds_::Type_)"
                )
            self.found[topic] = kind
            self.missing.remove(topic)
        if not self.missing and self.settle is None and self.seen:
            self.settle = min(self.deadline, now + SETTLE_S)
            return "look"
        if (self.missing or self.settle is None) and now >= self.deadline:
            return "stop"
        return "wait"

    def result(self, domain_id: int) -> dict[str, str]:
        """Topic -> ROS 2 type of every wanted topic, or the error naming the first not known."""
        for topic, kinds in self.seen.items():
            if len(kinds) > 1:
                raise _several(topic, kinds)
        missing = self.missing
        if missing:
            example = f'types = {{ "{missing[0]}" = "sensor_msgs/msg/Imu" }}'
            raise SourceOpenError(
                f"no publisher of ROS 2 topic{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(repr, missing))} announced its type within "
                f"{self.discover_s:g} s on DDS domain {domain_id}; give the type ({example})"
            )
        return dict(self.found)


def _several(topic: str, kinds: set[str]) -> SourceOpenError:
    return SourceOpenError(
        f"ROS 2 topic {topic!r} is published with several types "
        f"({', '.join(sorted(kinds))}); give its type in types"
    )


def discover_types(
    participant: Participant,
    wanted: Iterable[str],
    given: Mapping[str, str],
    discover_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> dict[str, str]:
    """Each wanted topic's ROS 2 type, looking at ``participant``'s graph for up to
    ``discover_s`` seconds (see :class:`TypeDiscovery`)."""
    policy = TypeDiscovery(wanted, given, discover_s, clock())
    while policy.listening(clock()):
        step = policy.observe(participant.publications(), clock())
        if step == "stop":
            break
        if step == "wait":
            sleep(POLL_S)
    return policy.result(participant.domain_id)
