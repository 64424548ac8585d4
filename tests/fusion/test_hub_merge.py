"""Sources that read files are merged by time (``SyncHub(merge=True)``, what a Pipeline of
file sources does): the groups are those the stamps give, whatever each source's pace,
never ``late``; with a wall-clock deadline instead, a source decoding ahead makes the
other's frames late (the failure the merge fixes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion import (
    Frame,
    FrameGroup,
    Nearest,
    Pipeline,
    SensorSpec,
    SyncHub,
    VirtualClock,
    use_clock,
)
from fusion._source import Source

MS = 1_000_000


class FileLike(Source):
    """One sensor's stamps, ``gaps[i]`` ns of runtime clock before frame ``i`` (decoding)."""

    def __init__(self, name: str, stamps: list[int], gaps: list[int], *, file: bool = True):
        super().__init__(SensorSpec(name, capacity=4))
        self.stamps, self.gaps, self.file = stamps, gaps, file

    @property
    def from_file(self) -> bool:
        return self.file

    async def frames(self) -> AsyncIterator[Frame]:
        from fusion import current_clock

        clock = current_clock()
        for t, gap in zip(self.stamps, self.gaps, strict=True):
            if gap:
                await clock.sleep_until(clock.now() + gap)
            yield self.make_frame(t, None, t_arrival=clock.now())


def policy() -> Nearest:
    return Nearest(
        "cam", ["cam", "mic"], tolerance=40 * MS, windows={"mic": (17 * MS, 17 * MS)},
        optional=["mic"],
    )  # fmt: skip


def by_stamps(cam: list[int], mic: list[int]) -> list[tuple[int, tuple[int, ...]]]:
    """The groups the stamps give: the policy fed every frame in time order."""
    p = policy()
    frames = [Frame("cam", i, t) for i, t in enumerate(cam)]
    frames += [Frame("mic", i, t) for i, t in enumerate(mic)]
    groups: list[FrameGroup] = []
    for f in sorted(frames, key=lambda f: (f.t, f.sensor != "cam")):
        groups += p.push(f)
    return shape(groups + p.drain())


def shape(groups: list[FrameGroup]) -> list[tuple[int, tuple[int, ...]]]:
    out = []
    for g in groups:
        mic = g.frames.get("mic", [])
        assert isinstance(mic, list)
        out.append((g.t, tuple(f.seq for f in mic)))
    return out


def run_hub(sources: list[Source], *, merge: bool) -> tuple[list[FrameGroup], SyncHub]:
    out: list[FrameGroup] = []
    hub = SyncHub(policy(), max_latency=200 * MS, merge=merge, output_capacity=4)

    async def main() -> None:
        clock = VirtualClock()
        with use_clock(clock), anyio.fail_after(30):
            async with clock.autojump(), hub.open(sources) as groups:
                async for g in groups:
                    out.append(g)

    anyio.run(main)
    return out, hub


CAM = [i * 33 * MS for i in range(30)]  # a 30 fps clip's pictures ...
MIC = [i * 20 * MS for i in range(52)]  # ... and its 20 ms audio frames


def test_audio_decoding_far_ahead_loses_pictures_to_the_deadline_unless_merged() -> None:
    def sources() -> list[Source]:
        return [
            FileLike("cam", CAM, [300 * MS] * len(CAM)),  # a slow video decode
            FileLike("mic", MIC, [0] * len(MIC)),  # audio decoded at once
        ]

    merged, hub = run_hub(sources(), merge=True)
    assert shape(merged) == by_stamps(CAM, MIC)
    assert len(merged) == 30
    stats = hub.statistics()
    assert ("cam", "late") not in stats.dropped
    assert stats.groups_expired == 0
    # the same sources against the wall-clock deadline: the pictures come too late
    _, deadline = run_hub(sources(), merge=False)
    assert deadline.statistics().dropped.get(("cam", "late"), 0) > 20


def test_a_pipeline_of_file_sources_merges_them_a_live_one_does_not() -> None:
    def ran(pipeline: Pipeline) -> bool:
        stats = anyio.run(pipeline.run)  # run, so its channels close
        assert stats.hub.groups_emitted == 30
        return pipeline.hub.merge

    assert ran(Pipeline([FileLike("cam", CAM, [0] * 30), FileLike("mic", MIC, [0] * 52)], policy()))
    live_mic = FileLike("mic", MIC, [0] * 52, file=False)
    assert not ran(Pipeline([FileLike("cam", CAM, [0] * 30), live_mic], policy()))
    assert not ran(Pipeline([FileLike("cam", CAM, [0] * 30)], policy(), merge=False))


def test_a_source_that_ends_early_is_drained_and_no_longer_waited_for() -> None:
    short = MIC[:10]  # the audio ends after 200 ms; the pictures go on
    got, hub = run_hub(
        [FileLike("cam", CAM, [5 * MS] * 30), FileLike("mic", short, [0] * 10)], merge=True
    )
    assert shape(got) == by_stamps(CAM, short)
    assert len(got) == 30
    assert hub.statistics().groups_partial == sum(1 for _, seqs in shape(got) if not seqs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cam_gaps=st.lists(st.integers(0, 500 * MS), min_size=12, max_size=12),
    mic_gaps=st.lists(st.integers(0, 500 * MS), min_size=20, max_size=20),
    mic_first=st.integers(0, 100 * MS),
)
def test_merged_groups_do_not_depend_on_the_sources_pace(
    cam_gaps: list[int], mic_gaps: list[int], mic_first: int
) -> None:
    cam = CAM[:12]
    mic = [mic_first + i * 20 * MS for i in range(20)]
    got, hub = run_hub([FileLike("cam", cam, cam_gaps), FileLike("mic", mic, mic_gaps)], merge=True)
    assert shape(got) == by_stamps(cam, mic)
    assert not any(reason == "late" for _, reason in hub.statistics().dropped)
