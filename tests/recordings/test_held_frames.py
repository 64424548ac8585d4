"""Frames of an unwatched channel held for its first subscriber (``_held_frames``): a topic
holds its latest frame (a latched topic its last 256, within a quarter of the budget, the
latest always); a subscriber gets them oldest first, once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame
from recordings.outputs.live._held_frames import HOLD_LATCHED, HeldFrames, payload_bytes


def _frame(seq: int, size: int) -> Frame:
    return Frame(sensor="s", seq=seq, t=seq, data=np.zeros(size, np.uint8))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["/a", "/tf_static"]), st.integers(1, 40_000), st.booleans()),
        max_size=300,
    ),
    st.integers(4_000, 400_000),
)
def test_a_topic_holds_its_latest_frames_within_its_bounds_and_gives_them_once(
    frames: list[tuple[str, int, bool]], budget: int
) -> None:
    held = HeldFrames(budget)
    came: dict[str, list[int]] = {"/a": [], "/tf_static": []}
    written: list[int] = []
    for seq, (topic, size, subscribe) in enumerate(frames):
        held.hold(topic, _frame(seq, size), latched=topic == "/tf_static")
        came[topic].append(seq)
        for t, seqs in came.items():
            now = [f.seq for f in held.holds(t)]
            if seqs:
                assert now[-1] == seqs[-1]  # the latest is always held
            assert now == [s for s in seqs if s in now]  # in order
            assert now == seqs[len(seqs) - len(now) :]  # the latest ones, none skipped
            if t == "/a":
                assert len(now) <= 1
            else:
                assert len(now) <= HOLD_LATCHED
                sizes = [payload_bytes(f.data) for f in held.holds(t)]
                assert sum(sizes) <= budget // 4 or len(sizes) == 1
        if subscribe:
            assert held.want(topic) == bool(held.holds(topic))
            assert held.wanted == bool(held.holds(topic))
            out = held.take()
            assert [f.seq for f in out] == came[topic][len(came[topic]) - len(out) :]
            written += [f.seq for f in out]
            came[topic] = []
            assert not held.wanted
            assert held.holds(topic) == ()
    assert len(written) == len(set(written))  # each held frame given once


def test_a_topic_nobody_held_is_not_wanted() -> None:
    held = HeldFrames(1 << 20)
    assert not held.want("/nothing")
    assert held.take() == []
    assert payload_bytes({"a": b"123", "b": np.zeros(4, np.uint16)}) == 11
