"""``group_columns`` gives exactly the groups of the streaming ExactTime and Nearest.

The oracle is the streaming policy itself, fed the same stamps as data-less
frames in a random interleaving (each sensor's own order kept), then drained.
Stamp streams come with jitter, drops, ties across sensors and out-of-order
stamps within a sensor.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import ApproximateTime, ExactTime, Frame, FrameGroup, Nearest
from fusion.policies import _columnar as columnar
from fusion.policies import _nearest_native as native
from fusion.policies._columnar import Engine, GroupColumns, admitted, group_columns

SENSORS = ["ref", "cam", "imu"]
Key = tuple[int, tuple[tuple[str, Any], ...], frozenset[str]]


@st.composite
def stream(draw: st.DrawFn) -> list[int]:
    """One sensor's stamps in recorded order: a jittered grid with drops, or raw values."""
    if draw(st.booleans()):
        period = draw(st.integers(1, 40))
        n = draw(st.integers(0, 40))
        jitter = draw(st.integers(0, period))
        out = []
        for i in range(n):
            if draw(st.integers(0, 9)) == 0:
                continue  # a drop
            out.append(i * period + draw(st.integers(-jitter, jitter)))
        return out
    # Small values: ties across sensors and repeats (out of order) within one.
    return draw(st.lists(st.integers(0, 120), max_size=30))


@st.composite
def interleaving(draw: st.DrawFn, per: dict[str, list[int]]) -> list[Frame]:
    pos = dict.fromkeys(per, 0)
    frames = []
    while True:
        left = [s for s in per if pos[s] < len(per[s])]
        if not left:
            return frames
        s = draw(st.sampled_from(left))
        frames.append(Frame(s, pos[s], per[s][pos[s]]))
        pos[s] += 1


def streamed(policy: ExactTime | Nearest, frames: list[Frame]) -> list[Key]:
    groups: list[FrameGroup] = []
    for f in frames:
        groups += policy.push(f)
    groups += policy.drain()
    return [
        (
            g.t,
            tuple(
                (s, [x.seq for x in v] if isinstance(v, list) else v.seq)
                for s, v in g.frames.items()
            ),
            g.missing,
        )
        for g in groups
    ]


def offline(
    policy: ExactTime | Nearest, per: dict[str, list[int]], compiled: bool = False
) -> list[Key]:
    """Columns turned into the same keys: seq = position in the sensor's recorded stream."""
    stamps, seqs = {}, {}
    for s, values in per.items():
        t = np.array(values, np.int64)
        keep = admitted(t)
        stamps[s], seqs[s] = t[keep], np.flatnonzero(keep)
    cols = group_columns(policy, stamps, compiled=compiled)
    order = list(policy.sensors)
    if isinstance(policy, Nearest):
        order = [policy.reference, *(s for s in order if s != policy.reference)]
    return keys_of(cols, order, seqs)


def keys_of(cols: GroupColumns, order: list[str], seqs: dict[str, np.ndarray]) -> list[Key]:
    out: list[Key] = []
    for i, t in enumerate(cols.t.tolist()):
        members: list[tuple[str, Any]] = []
        missing = set()
        for s in order:
            if s in cols.spans:
                lo, hi = int(cols.spans[s][0][i]), int(cols.spans[s][1][i])
                members.append((s, seqs[s][lo:hi].tolist() if hi > lo else []))
                if hi <= lo:
                    missing.add(s)
            elif cols.picks[s][i] < 0:
                missing.add(s)
            else:
                members.append((s, int(seqs[s][cols.picks[s][i]])))
        out.append((t, tuple(members), frozenset(missing)))
    return out


streams = st.fixed_dictionaries({s: stream() for s in SENSORS})

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
EDGES = [I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX - 1, I64_MAX]


@st.composite
def wide_stream(draw: st.DrawFn) -> list[int]:
    """Stamps over the whole int64 range: a small stream moved next to an extreme, or
    raw values where the extremes and their neighbours are likely."""
    if draw(st.booleans()):
        small = draw(stream())
        low, top = min(small, default=0), max(small, default=0)
        base = draw(st.sampled_from([I64_MIN - low, I64_MAX - top, -top // 2]))
        return [base + t for t in small]
    value = st.sampled_from(EDGES) | st.integers(I64_MIN, I64_MAX)
    return draw(st.lists(value, max_size=12))


wide_streams = st.fixed_dictionaries({s: wide_stream() for s in SENSORS})
# Tolerances and windows over every size: tiny, the int64 span, beyond it.
wide = st.integers(0, 40) | st.sampled_from([1 << 62, I64_MAX, 1 << 63, (1 << 64) - 1, 1 << 70])


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    per=wide_streams,
    tol=wide,
    window=st.none() | st.tuples(wide, wide),
    optional=st.sets(st.sampled_from(["cam", "imu"])),
)
def test_nearest_on_the_whole_int64_range_equals_the_streaming_groups(
    data: st.DataObject,
    per: dict[str, list[int]],
    tol: int,
    window: tuple[int, int] | None,
    optional: set[str],
) -> None:
    """No stamp arithmetic wraps: offline == streaming with stamps at the int64
    extremes and tolerances up to and past the whole range."""
    windows = {"imu": window} if window is not None else {}

    def make() -> Nearest:
        return Nearest("ref", SENSORS, tol, optional=optional, windows=windows)

    frames = data.draw(interleaving(per))
    assert offline(make(), per) == offline(make(), per, compiled=True) == streamed(make(), frames)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), per=wide_streams, optional=st.sets(st.sampled_from(SENSORS)))
def test_exact_on_the_whole_int64_range_equals_the_streaming_groups(
    data: st.DataObject, per: dict[str, list[int]], optional: set[str]
) -> None:
    frames = data.draw(interleaving(per))
    expected = offline(ExactTime(SENSORS, optional=optional), per)
    assert streamed(ExactTime(SENSORS, 10_000, optional), frames) == expected


def test_a_group_at_the_int64_minimum_does_not_reach_the_maximum() -> None:
    """The red team's case: 9.2e18 ns apart wrapped to -1 and passed a 20 ms tolerance."""
    per = {"ref": [I64_MIN, 0], "cam": [I64_MAX]}
    pol = Nearest("ref", ["ref", "cam"], 20_000_000)
    frames = [Frame("ref", 0, I64_MIN), Frame("ref", 1, 0), Frame("cam", 0, I64_MAX)]
    assert offline(pol, per) == streamed(Nearest("ref", ["ref", "cam"], 20_000_000), frames) == []


@settings(max_examples=400, deadline=None)
@given(
    data=st.data(),
    per=streams,
    tol=st.integers(0, 40),
    window=st.none() | st.tuples(st.integers(0, 30), st.integers(0, 30)),
    optional=st.sets(st.sampled_from(["cam", "imu"])),
    per_sensor_tol=st.booleans(),
)
def test_nearest_columns_equal_the_streaming_groups(
    data: st.DataObject,
    per: dict[str, list[int]],
    tol: int,
    window: tuple[int, int] | None,
    optional: set[str],
    per_sensor_tol: bool,
) -> None:
    windows = {"imu": window} if window is not None else {}
    tolerance: int | dict[str, int] = tol
    if per_sensor_tol and window is None:
        tolerance = {"cam": tol, "imu": tol // 2 + 1}
    elif per_sensor_tol:
        tolerance = {"cam": tol}

    def make() -> Nearest:
        return Nearest("ref", SENSORS, tolerance, optional=optional, windows=windows)

    frames = data.draw(interleaving(per))
    assert offline(make(), per) == offline(make(), per, compiled=True) == streamed(make(), frames)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), per=streams, optional=st.sets(st.sampled_from(SENSORS)))
def test_exact_columns_equal_the_streaming_groups(
    data: st.DataObject, per: dict[str, list[int]], optional: set[str]
) -> None:
    expected = offline(ExactTime(SENSORS, optional=optional), per)
    # In any interleaving, when the queue never overflows.
    frames = data.draw(interleaving(per))
    assert streamed(ExactTime(SENSORS, 10_000, optional), frames) == expected
    # In time order (ties across sensors in a random order), whatever the queue size.
    if all(all(a < b for a, b in itertools.pairwise(ts)) for ts in per.values()):
        tie = data.draw(st.permutations(SENSORS))
        timed = sorted(frames, key=lambda f: (f.t, tie.index(f.sensor)))
        for queue_size in (1, 3, 10):
            assert streamed(ExactTime(SENSORS, queue_size, optional), timed) == expected


def test_a_frame_taken_by_the_previous_group_does_not_end_the_wait() -> None:
    # ref 260 takes cam@278; ref 271 must wait for cam@287 (within 19), not
    # resolve at once with cam missing because cam@278 once arrived.
    pol = Nearest("ref", ["ref", "cam"], 19, optional=["cam"])
    groups = []
    for f in [Frame("ref", 0, 260), Frame("cam", 0, 278), Frame("ref", 1, 271)]:
        groups += pol.push(f)
    assert [(g.t, g.frames["cam"].seq) for g in groups] == [(260, 0)]  # type: ignore[union-attr]
    groups += pol.push(Frame("cam", 1, 287))
    assert [(g.t, sorted(g.frames)) for g in groups] == [
        (260, ["cam", "ref"]),
        (271, ["cam", "ref"]),
    ]


def test_a_long_run_of_shared_frames_is_resolved_in_order() -> None:
    # A 5 Hz sensor matched to a 100 Hz reference: every reference wants the
    # same few frames, each frame goes to the first complete group.
    ref = np.arange(0, 2_000, 10, dtype=np.int64)
    slow = np.arange(0, 2_000, 200, dtype=np.int64)
    pol = Nearest("ref", ["ref", "slow"], 100)
    cols = group_columns(pol, {"ref": ref, "slow": slow})
    same_columns(cols, group_columns(pol, {"ref": ref, "slow": slow}, compiled=True))
    frames = sorted(
        [Frame("ref", i, int(t)) for i, t in enumerate(ref)]
        + [Frame("slow", i, int(t)) for i, t in enumerate(slow)],
        key=lambda f: f.t,
    )
    seqs = {"ref": np.arange(len(ref)), "slow": np.arange(len(slow))}
    assert keys_of(cols, ["ref", "slow"], seqs) == streamed(pol, frames)
    assert len(cols) == len(slow)


def test_approximate_time_has_no_columnar_form() -> None:
    with pytest.raises(ValueError, match="ApproximateTime has no offline form"):
        group_columns(ApproximateTime(SENSORS), {})


# The two compiled forms of Nearest: C (built here by the system compiler) and numba.
KERNELS = ("native", "numba")


def compiled_by(engine: Engine, pol: Nearest, stamps: dict[str, np.ndarray]) -> GroupColumns:
    """``group_columns`` as ``compiled=True`` computes it, by the kernel named."""
    if engine == "native":
        assert native.load(), native.failure()
    cols = {s: np.asarray(stamps.get(s, np.empty(0, np.int64)), np.int64) for s in pol.sensors}
    return columnar._nearest_compiled(pol, cols, engine)


@pytest.mark.parametrize("engine", ["numpy", *KERNELS])
@pytest.mark.parametrize("at", [1, 4095, 4096, 4097, 9999])
def test_unsorted_stamps_are_refused(engine: Engine, at: int) -> None:
    """Wherever the first stamp not after its predecessor is (the kernels check in blocks)."""
    t = np.arange(10_000, dtype=np.int64)
    t[at] = t[at - 1]
    pol = Nearest("ref", ["ref", "cam"], 5)
    stamps = {"ref": np.arange(3), "cam": t}

    def run() -> GroupColumns:
        if engine == "numpy":
            return group_columns(pol, stamps, compiled=False)
        return compiled_by(engine, pol, stamps)

    with pytest.raises(ValueError, match="stamps of 'cam' are not strictly increasing"):
        run()
    with pytest.raises(ValueError, match="stamps of 'cam' are not strictly increasing"):
        group_columns(
            ExactTime(["cam"]), {"cam": np.array([2, 1], np.int64)}, compiled=engine != "numpy"
        )


def test_admitted_drops_what_push_drops_as_out_of_order() -> None:
    t = np.array([5, 3, 5, 6, 6, 4, 9], np.int64)
    pol = ExactTime(["s"], optional=["s"])
    for i, v in enumerate(t.tolist()):
        pol.push(Frame("s", i, v))
    assert admitted(t).tolist() == [True, False, False, True, False, False, True]
    assert pol.stats.dropped[("s", "out_of_order")] == 4


def same_columns(a: GroupColumns, b: GroupColumns) -> None:
    """Every column equal, value for value (spans of missing windows included)."""
    assert a.sensors == b.sensors
    assert a.dropped_groups == b.dropped_groups
    assert a.t.tolist() == b.t.tolist()
    assert list(a.picks) == list(b.picks)
    assert list(a.spans) == list(b.spans)
    for s in a.picks:
        assert a.picks[s].tolist() == b.picks[s].tolist(), s
    for s in a.spans:
        assert [x.tolist() for x in a.spans[s]] == [x.tolist() for x in b.spans[s]], s


@settings(max_examples=250, deadline=None)
@given(
    per=streams | wide_streams,
    tol=st.integers(0, 40) | wide,
    cam_tol=st.none() | st.integers(0, 40),
    window=st.none() | st.tuples(st.integers(0, 30), st.integers(0, 30)) | st.tuples(wide, wide),
    optional=st.sets(st.sampled_from(["cam", "imu"])),
    reference=st.sampled_from(SENSORS),
)
def test_the_merge_kernel_gives_the_numpy_columns(
    per: dict[str, list[int]],
    tol: int,
    cam_tol: int | None,
    window: tuple[int, int] | None,
    optional: set[str],
    reference: str,
) -> None:
    """The compiled kernel and the numpy form agree on every column, any reference,
    over small grids with shared frames and over the whole int64 range."""
    windows = {"imu": window} if window is not None and reference != "imu" else {}
    matched = [s for s in SENSORS if s != reference and s not in windows]
    tolerance: int | dict[str, int] = tol
    if cam_tol is not None and "cam" in matched:
        tolerance = {s: cam_tol if s == "cam" else tol for s in matched}
    pol = Nearest(reference, SENSORS, tolerance, optional=optional - {reference}, windows=windows)
    stamps = {}
    for s, values in per.items():
        t = np.array(values, np.int64)
        stamps[s] = t[admitted(t)]
    numpy_form = group_columns(pol, stamps, compiled=False)
    for engine in KERNELS:
        same_columns(numpy_form, compiled_by(engine, pol, stamps))


def test_a_dense_sensor_beside_a_sparse_reference() -> None:
    """The kernel strides over a fast sensor eight frames at a time: 1 kHz against
    10 Hz with jitter and drops, a window and a matched sensor, equal to numpy."""
    rng = np.random.default_rng(5)
    ref = np.arange(0, 10_000_000, 100_000, dtype=np.int64) + rng.integers(0, 500, 100)
    fast = np.arange(0, 10_000_000, 1_000, dtype=np.int64) + rng.integers(0, 400, 10_000)
    fast = fast[rng.random(len(fast)) > 0.05]
    for pol in (
        Nearest("ref", ["ref", "fast"], 700),
        Nearest("ref", ["ref", "fast"], 0, windows={"fast": (3_000, 2_999)}),
        Nearest("ref", ["ref", "fast"], 60_000),  # wider than half the reference period
    ):
        stamps = {"ref": ref, "fast": fast}
        numpy_form = group_columns(pol, stamps, compiled=False)
        for engine in KERNELS:
            same_columns(numpy_form, compiled_by(engine, pol, stamps))


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
    rate=st.sampled_from([1, 3]),
    tol=st.integers(0, 12),
)
def test_the_native_matched_pass_in_four_stretches_gives_the_numpy_columns(
    m: int, seed: int, rate: int, tol: int
) -> None:
    """The C kernel scans its references in four stretches side by side, each from a
    binary search, and picks the nearer neighbour without branches: any count of
    references (fewer than four, a remainder after the fourth stretch), stamps on a
    coarse grid so that equal distances (the earlier wins) and frames before the first
    or after the last reference occur, equal to numpy."""
    rng = np.random.default_rng(seed)
    ref = np.unique(rng.integers(0, 10 * max(m, 1), m)).astype(np.int64)
    cam = np.unique(rng.integers(-5, 10 * max(m, 1) + 5, rate * m)).astype(np.int64)
    gnss = np.unique(rng.integers(0, 10 * max(m, 1), m // 2)).astype(np.int64)
    pol = Nearest("ref", ["ref", "cam", "gnss"], {"cam": tol, "gnss": 2 * tol}, optional={"gnss"})
    stamps = {"ref": ref, "cam": cam, "gnss": gnss}
    same_columns(group_columns(pol, stamps, compiled=False), compiled_by("native", pol, stamps))


def test_small_inputs_do_not_load_numba() -> None:
    """The default keeps numpy until the kernel pays for its ~0.5 s load, so the
    command line stays light (``hyperframes sync`` on a typical recording)."""
    code = (
        "import sys, numpy as np\n"
        "from fusion import Nearest\n"
        "from fusion.policies._columnar import group_columns\n"
        "t = np.arange(100_000, dtype=np.int64)\n"
        "group_columns(Nearest('a', ['a', 'b'], 3), {'a': t[::10], 'b': t})\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
