"""Test harness for sans-I/O policies: ``feed(policy, arrivals)``, after h11's ConnectionPair."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from fusion import Frame, FrameGroup
from fusion.policies import SyncPolicy

S = 1_000_000_000  # one second in ns


def feed(
    policy: SyncPolicy, arrivals: Iterable[tuple[str, int]], *, drain: bool = False
) -> tuple[list[FrameGroup], list[Frame]]:
    """Push ``(sensor, t)`` arrivals in order; return the emitted groups and the pushed frames."""
    seqs: dict[str, int] = {}
    frames: list[Frame] = []
    groups: list[FrameGroup] = []
    for sensor, t in arrivals:
        seq = seqs.get(sensor, 0)
        seqs[sensor] = seq + 1
        frame = Frame(sensor, seq, t)
        frames.append(frame)
        groups.extend(policy.push(frame))
    if drain:
        groups.extend(policy.drain())
    return groups, frames


def times(groups: list[FrameGroup], sensors: Iterable[str]) -> list[tuple[int, ...]]:
    """Each group's member times, in ``sensors`` order (seconds when divisible)."""
    out = []
    for g in groups:
        row = []
        for s in sensors:
            f = g.frames[s]
            assert not isinstance(f, list)
            row.append(f.t // S if f.t % S == 0 else f.t)
        out.append(tuple(row))
    return out


def check_accounting(policy: SyncPolicy, frames: list[Frame], groups: list[FrameGroup]) -> None:
    """Every pushed frame is in exactly one group or counted as dropped; times never decrease."""
    emitted = [id(f) for g in groups for f in g.members()]
    assert len(emitted) == len(set(emitted)), "a frame was emitted twice"
    stats = policy.stats
    assert stats.pushed == len(frames)
    assert len(emitted) + stats.dropped_total + stats.buffered == len(frames)
    assert stats.frames_emitted == len(emitted)
    assert all(a.t <= b.t for a, b in itertools.pairwise(groups))
