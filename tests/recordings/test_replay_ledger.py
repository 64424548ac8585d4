"""A replay accounts for every frame the recording promised: read, or lost to damage."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np

from fusion import Frame
from recordings import Recorder, Replay, open_recording
from tests.terminal import run_piped


def damaged_recording(path: Path) -> int:
    """Four chunks of 50 frames; the third's payload has a flipped byte. Returns its count."""
    with Recorder(path, chunk_bytes=4096, chunk_duration=None, wall_clock=False) as rec:
        for i in range(200):
            rec.write(Frame("imu", i, i * 1_000_000, np.full(8, i, np.float64)))
    with open_recording(path) as log:
        victim = log.chunks[2]
        offset, count = victim.offset, victim.count
    data = bytearray(path.read_bytes())
    data[offset + 24 + 40] ^= 0xFF  # inside the stored payload: its CRC no longer matches
    path.write_bytes(bytes(data))
    return count


def test_frames_in_a_damaged_chunk_are_lost_by_reason(tmp_path: Path) -> None:
    path = tmp_path / "d.hfr"
    lost = damaged_recording(path)

    async def play() -> tuple[int, Replay]:
        replay = Replay(path, speed=None)
        async with replay:
            return len([f async for f in replay.frames()]), replay

    got, replay = anyio.run(play)
    ledger = replay.ledgers()["imu"]
    assert got == 200 - lost
    assert (ledger.unit, ledger.received, ledger.frames) == ("frame", 200, 200 - lost)
    assert ledger.lost == {"damaged": lost}
    assert replay.errors["damaged"] >= 1


def test_replay_exits_1_on_loss_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "d.hfr"
    lost = damaged_recording(path)
    done = run_piped("replay", str(path), "--rate", "max")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"imu: lost {lost} of 200 frames (damaged {lost})" in done.stdout + done.stderr
    allowed = run_piped("replay", str(path), "--rate", "max", "--allow-loss")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"imu: lost {lost} of 200 frames" in allowed.stdout + allowed.stderr
