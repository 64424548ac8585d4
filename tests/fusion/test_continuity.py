"""Segments, gaps and the opening burst of live streams (fusion._continuity), as pure cores."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion._continuity import Continuity, OpeningBurst, StreamWatch
from fusion._frames import Frame

MS = 1_000_000
S = 1_000_000_000


def feed(c: Continuity, stamps: list[tuple[int, int | None]]) -> list[tuple[bool, int | None]]:
    out = []
    for t_sensor, t_arrival in stamps:
        change = c.observe(t_sensor, t_arrival)
        if change is not None:
            out.append((change.restarted, change.gap_ns))
    return out


@pytest.mark.parametrize(
    ("case", "stamps", "expected"),
    [
        ("steady", [(i * 40 * MS, 5 * S + i * 40 * MS) for i in range(50)], []),
        # a sender restarted within the read timeout: PTS back to 1.4 s, 1 s of silence
        ("restart", [(6 * S, 10 * S), (1_400 * MS, 11_500 * MS)], [(True, 1_500 * MS)]),
        # the network dropped 3 s, the camera kept its clock: a gap, no segment
        ("outage", [(6 * S, 10 * S), (9 * S, 13 * S)], [(False, 3 * S)]),
        # the PTS jumped forward 5 s in 40 ms: a new segment
        ("forward", [(6 * S, 10 * S), (11 * S, 10 * S + 40 * MS)], [(True, None)]),
        # MPEG-TS hands the tail frame over late, with the next PTS: a gap only
        ("late tail", [(6 * S, 10 * S), (6 * S + 40 * MS, 12 * S)], [(False, 2 * S)]),
        # a file: only a backward jump counts
        ("file", [(0, None), (5 * S, None), (2 * S, None)], [(True, None)]),
    ],
)
def test_continuity_tells_segments_from_gaps(
    case: str, stamps: list[tuple[int, int | None]], expected: list[tuple[bool, int | None]]
) -> None:
    c = Continuity(S)
    assert feed(c, stamps) == expected
    assert c.segment == sum(r for r, _ in expected)


def test_a_discontinuity_describes_itself_in_words() -> None:
    c = Continuity(S)
    c.observe(6_430 * MS, 10 * S)
    change = c.observe(1_470 * MS, 10 * S + 40 * MS)
    assert change is not None
    assert change.describe() == "stream restarted, timestamps jumped back 4.96 s"
    c.observe(2 * S, 11 * S)
    gap = c.observe(2 * S + 40 * MS, 13_310 * MS)
    assert gap is not None
    assert gap.describe() == "no data for 2.31 s"


def test_stream_watch_marks_frames_counts_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    watch = StreamWatch("imu", S)
    frames = [
        Frame("imu", 0, 3 * S, t_arrival=10 * S),
        Frame("imu", 1, 3 * S + 10 * MS, t_arrival=10 * S + 10 * MS),
        Frame("imu", 2, 0, t_arrival=12 * S),
    ]
    with caplog.at_level(logging.WARNING):
        for f in frames:
            watch.check(f)
    assert frames[2].meta == {"segment_start": True, "gap_ns": 2 * S - 10 * MS}
    assert watch.as_dict() == {"restarts": 1, "gaps_ns": [2 * S - 10 * MS]}
    assert "imu: stream restarted, timestamps jumped back 3.01 s after 1.99 s" in caplog.text


@dataclass
class Item:
    t_sensor: int
    t_arrival: int | None


def test_opening_burst_is_repaced_to_the_pace_of_the_frames_after_it() -> None:
    burst: OpeningBurst[Item] = OpeningBurst()
    # frames 0-5 (40 ms apart) were buffered and are read at once at 10 s; from frame 6
    # on they arrive at the live pace, 9.795 s after their sensor stamps
    delay = 9_795 * MS
    items = [Item(i * 40 * MS, 10 * S + i * MS // 10) for i in range(6)]
    items += [Item(i * 40 * MS, i * 40 * MS + delay) for i in range(6, 9)]
    out = [o for item in items for o in burst.push(item)]
    assert [o.t_sensor for o in out] == [i.t_sensor for i in items]
    assert [o.t_arrival - o.t_sensor for o in out if o.t_arrival is not None] == [delay] * 9
    assert burst.repaced == 6


@given(
    st.lists(st.tuples(st.integers(1, 100 * MS), st.integers(0, 200 * MS)), min_size=1, max_size=80)
)
def test_opening_burst_never_invents_a_delay_below_one_measured(
    steps: list[tuple[int, int]],
) -> None:
    burst: OpeningBurst[Item] = OpeningBurst(max_items=16, max_span_ns=S)
    t_sensor, t_arrival = 0, 0
    items = []
    for ds, da in steps:
        t_sensor += ds
        t_arrival += da
        items.append(Item(t_sensor, t_arrival))
    originals = [(i.t_sensor, i.t_arrival) for i in items]
    out = [o for item in items for o in burst.push(item)] + burst.flush()
    assert [o.t_sensor for o in out] == [s for s, _ in originals]  # all, in order
    lowest = min(a - s for s, a in originals)
    for o, (_, read) in zip(out, originals, strict=True):
        assert o.t_arrival is not None
        assert o.t_arrival <= read  # never later than it was read
        assert o.t_arrival - o.t_sensor >= lowest  # never a delay nobody measured
    arrivals = [o.t_arrival for o in out]
    assert arrivals == sorted(arrivals)  # still in arrival order


async def test_the_hub_restarts_a_sensors_clock_when_its_stream_restarts() -> None:
    import anyio

    from fusion import ExactTime, OnlineClock, SensorSpec, Source, SyncHub

    clock = OnlineClock()

    class Restarting(Source):
        """6 s of a camera on the host clock, then its sender restarts near 0."""

        def __init__(self) -> None:
            super().__init__(SensorSpec("cam", clock=clock))

        async def frames(self):  # type: ignore[no-untyped-def]
            for i in range(150):
                yield self.make_frame(i * 40 * MS, None, t_arrival=100 * S + i * 40 * MS)
            for i in range(50):
                frame = self.make_frame(
                    1_400 * MS + i * 40 * MS, None, t_arrival=107 * S + i * 40 * MS
                )
                if i == 0:
                    frame.meta["segment_start"] = True
                yield frame

    hub = SyncHub(ExactTime(["cam"]))
    times = []
    with anyio.fail_after(10):
        async with hub.open([Restarting()]) as groups:
            async for group in groups:
                times.append(group.t)
    assert hub.statistics().sensors["cam"].segments == 1
    assert clock.resets == 1  # told at once, not fitted as skew
    assert times[150] == 107 * S  # the first frame after the restart lands on its arrival
    assert times == sorted(times)  # aligned time goes on; nothing dropped
    assert len(times) == 200
    assert abs(clock.skew_ppm or 0.0) < 1.0
