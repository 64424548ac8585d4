"""Accounting invariants of every sync policy, on random interleavings (hypothesis).

Each pushed frame ends up in exactly one emitted group or is counted as dropped
with a reason; no frame appears twice; group times never decrease. Checked
after random pushes, random ``expire`` calls and a final ``drain``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame, FrameGroup
from fusion.policies import ApproximateTime, ExactTime, Nearest, SyncPolicy
from tests.fusion.harness import check_accounting

SENSORS = ["ref", "cam", "imu"]

# An event is ("push", sensor, dt) or ("expire", lag): per-sensor times advance
# by dt (0 allowed, to exercise out-of-order drops), expiries trail the newest time.
events = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.sampled_from(SENSORS), st.integers(0, 40)),
        st.tuples(st.just("expire"), st.just(""), st.integers(0, 80)),
    ),
    max_size=120,
)


def run(policy: SyncPolicy, script: list[tuple[str, str, int]]) -> None:
    t_of = dict.fromkeys(SENSORS, 0)
    seqs = dict.fromkeys(SENSORS, 0)
    newest = 0
    frames: list[Frame] = []
    groups: list[FrameGroup] = []
    for kind, sensor, value in script:
        if kind == "push":
            t_of[sensor] += value
            newest = max(newest, t_of[sensor])
            frame = Frame(sensor, seqs[sensor], t_of[sensor])
            seqs[sensor] += 1
            frames.append(frame)
            groups.extend(policy.push(frame))
        else:
            groups.extend(policy.expire(newest - value))
        check_accounting(policy, frames, groups)
    groups.extend(policy.drain())
    check_accounting(policy, frames, groups)
    assert policy.stats.buffered == 0
    for g in groups:
        assert g.missing.isdisjoint(k for k, v in g.frames.items() if v != [])


@settings(max_examples=300, deadline=None)
@given(script=events, queue_size=st.integers(1, 6), optional=st.booleans())
def test_exact_time_accounts_for_every_frame(script, queue_size, optional) -> None:
    run(ExactTime(SENSORS, queue_size=queue_size, optional=["imu"] if optional else ()), script)


@settings(max_examples=300, deadline=None)
@given(
    script=events,
    queue_size=st.integers(1, 6),
    max_interval=st.one_of(st.none(), st.integers(0, 30)),
    age_penalty=st.sampled_from([0.0, 0.1, 1.0]),
    bound=st.integers(0, 10),
)
def test_approximate_time_accounts_for_every_frame(
    script, queue_size, max_interval, age_penalty, bound
) -> None:
    policy = ApproximateTime(
        SENSORS,
        queue_size=queue_size,
        max_interval=max_interval,
        age_penalty=age_penalty,
        lower_bounds={"ref": bound},
    )
    run(policy, script)


@settings(max_examples=300, deadline=None)
@given(
    script=events,
    tolerance=st.integers(0, 30),
    optional=st.booleans(),
    window=st.one_of(st.none(), st.tuples(st.integers(0, 20), st.integers(0, 20))),
    max_buffer=st.integers(1, 8),
)
def test_nearest_accounts_for_every_frame(script, tolerance, optional, window, max_buffer) -> None:
    policy = Nearest(
        "ref",
        SENSORS,
        tolerance,
        optional=["cam"] if optional else (),
        windows={"imu": window} if window else None,
        max_buffer=max_buffer,
    )
    run(policy, script)
