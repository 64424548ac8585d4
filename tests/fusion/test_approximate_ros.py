"""ApproximateTime against the published ROS message_filters test scenarios.

Each case is the arrival order and expected output of a test in
``message_filters/test/test_approximate_time_policy.cpp`` (ROS 1 and ROS 2),
with the age penalty those tests run with (the ROS default, 0.1).
"""

from __future__ import annotations

import pytest

from fusion.policies import ApproximateTime
from tests.fusion.harness import S, check_accounting, feed, times

AB = ["a", "b"]
QUAD = ["a", "b", "c", "d"]
TRI = ["a", "b", "c"]


def arrivals(topics: list[str], pairs: list[tuple[float, int]]) -> list[tuple[str, int]]:
    return [(topics[i], round(t * S)) for t, i in pairs]


CASES = {
    "ExactMatch": (
        AB,
        10,
        [(0, 0), (0, 1), (3, 0), (3, 1), (6, 0), (6, 1)],
        [(0, 0), (3, 3), (6, 6)],
        {},
    ),
    "PerfectMatch": (
        AB,
        10,
        [(0, 0), (1, 1), (3, 0), (4, 1), (6, 0), (7, 1)],
        [(0, 1), (3, 4)],
        {},
    ),
    "ImperfectMatch": (
        AB,
        10,
        [(0, 0), (1, 1), (2, 0), (3, 0), (5, 1), (6, 0), (7, 1)],
        [(0, 1), (6, 5)],
        {},
    ),
    "Acceleration": (
        AB,
        10,
        [(0, 0), (7, 1), (12, 0), (15, 1), (17, 0), (18, 1)],
        [(12, 7), (17, 18)],
        {},
    ),
    "DroppedMessages-queue1": (
        AB,
        1,
        [(0, 0), (1, 1), (3, 1), (4, 0), (7, 1), (8, 0), (10, 0), (11, 1), (13, 0), (14, 1)],
        [(4, 3), (10, 11)],
        {},
    ),
    "DroppedMessages-queue2": (
        AB,
        2,
        [(0, 0), (1, 1), (3, 1), (4, 0), (7, 1), (8, 0), (10, 0), (11, 1), (13, 0), (14, 1)],
        [(0, 1), (4, 3), (8, 7), (10, 11)],
        {},
    ),
    "LongQueue": (
        AB,
        5,
        [
            (0, 0),
            (1, 0),
            (2, 0),
            (3, 0),
            (4, 0),
            (5, 0),
            (6, 0),
            (7, 0),
            (8, 0),
            (3, 1),
            (9, 0),
            (10, 0),
            (11, 0),
            (12, 0),
            (10, 1),
            (13, 0),
        ],
        [(10, 10)],
        {},
    ),
    "DoublePublish": (AB, 10, [(0, 0), (1, 1), (3, 1), (3, 0)], [(0, 1), (3, 3)], {}),
    "FourTopics": (
        QUAD,
        10,
        [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 3),
            (5, 0),
            (5, 3),
            (6, 1),
            (6, 2),
            (8, 0),
            (9, 1),
            (10, 2),
            (11, 3),
            (10, 0),
            (13, 0),
            (14, 1),
        ],
        [(0, 1, 2, 3), (5, 6, 6, 5), (10, 9, 10, 11)],
        {},
    ),
    "EarlyPublish": (QUAD, 10, [(0, 0), (1, 1), (2, 2), (3, 3), (7, 0)], [(0, 1, 2, 3)], {}),
    "RateBound-1.5": (
        AB,
        10,
        [(0, 0), (1, 1), (3, 0), (4, 1), (6, 0), (7, 1)],
        [(0, 1), (3, 4)],
        {"a": round(1.5 * S)},
    ),
    "RateBound-2": (
        AB,
        10,
        [(0, 0), (1, 1), (3, 0), (4, 1), (6, 0), (7, 1)],
        [(0, 1), (3, 4), (6, 7)],
        {"a": 2 * S},
    ),
    # ROS 2 additions.
    "ThreeTopics": (
        TRI,
        10,
        [(0, 1), (2, 0), (3, 2), (5.5, 1), (6, 0), (6, 2), (8, 1)],
        [(2, 0, 3), (6, 5_500_000_000, 6)],
        {},
    ),
    "TwoTopics": (AB, 10, [(0, 0), (1, 1), (3, 1), (7, 1)], [], {}),
    "PivotRelated": (
        TRI,
        10,
        [(0, 0), (1, 1), (3, 2), (2, 1), (3, 0), (4, 0), (5, 1), (9, 2)],
        [(3, 2, 3)],
        {},
    ),
    "PivotChanged": (TRI, 10, [(0, 0), (2, 1), (3, 2), (4, 0), (5, 1)], [(4, 2, 3)], {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_approximate_time_matches_ros_message_filters(name: str) -> None:
    topics, queue_size, pairs, expected, bounds = CASES[name]
    policy = ApproximateTime(topics, queue_size=queue_size, age_penalty=0.1, lower_bounds=bounds)
    groups, frames = feed(policy, arrivals(topics, pairs))
    assert times(groups, topics) == expected
    check_accounting(policy, frames, groups)


def test_max_interval_rejects_sets_wider_than_the_bound() -> None:
    policy = ApproximateTime(AB, max_interval=S // 2)
    groups, _ = feed(
        policy,
        [("a", 0), ("b", S), ("a", 2 * S), ("b", 2 * S + S // 4), ("a", 4 * S), ("b", 4 * S)],
    )
    assert times(groups, AB) == [(2, 2 * S + S // 4), (4, 4)]
    assert policy.stats.dropped[("a", "unmatched")] == 1


def test_drain_publishes_the_pending_candidate() -> None:
    policy = ApproximateTime(AB)
    groups, frames = feed(policy, [("a", 0), ("b", S)])
    assert groups == []
    tail = policy.drain()
    assert times(tail, AB) == [(0, 1)]
    check_accounting(policy, frames, tail)
    assert policy.stats.buffered == 0
