"""A live audio stream recorded by ``hyperframes record`` in a pseudo-terminal: ffmpeg sends
an MP2 sine over UDP (MPEG-TS, real time) on loopback, Ctrl-C ends the recording, and every
recorded sample equals the decode of the file ffmpeg sent."""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
from pathlib import Path

import anyio
import numpy as np
import pytest

from adapters.audio import AudioSource
from recordings import open_recording
from tests.acceptance.live_helpers import Recording, free_port, need_ffmpeg, wait_udp_bound

pytestmark = pytest.mark.serial


def file_samples(path: Path) -> np.ndarray:
    chunks: list[np.ndarray] = []

    async def run() -> None:
        async with AudioSource(path) as source:
            async for frame in source.frames():
                chunks.append(frame.data)

    anyio.run(run)
    return np.concatenate(chunks, axis=1)


def test_a_udp_audio_stream_recorded_in_a_terminal_equals_the_file_sent(
    tmp_path: Path,
) -> None:
    ffmpeg = need_ffmpeg()
    sent = tmp_path / "sine.ts"
    subprocess.run(
        [
            *(ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"),
            *("-t", "3", "-ac", "1", "-c:a", "mp2", "-f", "mpegts", str(sent)),
        ],
        check=True,
    )  # fmt: skip
    port = free_port()
    config = tmp_path / "mic.toml"
    config.write_text(
        f"""
[[sources]]
type = "audio"
name = "mic"
url = "udp://127.0.0.1:{port}"
open_timeout_s = 30
read_timeout_s = 30
"""
    )
    out = tmp_path / "mic.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    try:
        wait_udp_bound(port, timeout=60)
        sender = subprocess.run(
            [
                *(ffmpeg, "-v", "error", "-nostdin", "-re", "-i", str(sent), "-c", "copy"),
                *("-f", "mpegts", f"udp://127.0.0.1:{port}?pkt_size=1316"),
            ],
            timeout=30,
            check=True,
        )  # fmt: skip
        assert sender.returncode == 0
        time.sleep(1.5)  # the last packets through the pipeline
        code, took = rec.stop(signal.SIGINT)
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()
    assert code == 0, rec.text[-3000:]
    assert took < 10
    want = file_samples(sent)
    with open_recording(out) as log:
        frames = list(log.frames(sensors=["mic"]))
        ledgers = log.summary().ledgers
    got = np.concatenate([f.data for f in frames], axis=1)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    index = [f.meta["sample_index"] for f in frames]
    assert all(b - a == 960 for a, b in itertools.pairwise(index))  # no gap
    assert [f.t_sensor for f in frames] == [i * 10**9 // 48000 for i in index]
    assert all(f.t_arrival is not None for f in frames)
    ledger = ledgers["mic"]
    assert ledger.source.received == ledger.source.emitted > 0
    assert ledger.lost_total == 0
