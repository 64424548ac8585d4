"""Live audio streams recorded by ``hyperframes record`` in a pseudo-terminal, stopped with
Ctrl-C, each against PyAV's decode of the file ffmpeg sent: RTP described by an SDP file,
RTSP pulled from a real server (Debian's rtsp-server-perl), and an RTP sender SIGKILLed and
restarted mid-recording (the source reconnects; ``info`` shows it)."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fusion._frames import Frame
from recordings import open_recording
from tests.acceptance.audio_streams import (
    contiguous_at,
    make_sine,
    pyav_decode,
    rtp_args,
    rtsp_server,
    wait_mount,
    write_sdp,
)
from tests.acceptance.live_helpers import (
    Recording,
    env,
    free_port,
    info_json,
    need_ffmpeg,
    wait_udp_bound,
)

pytestmark = pytest.mark.serial  # real-time senders


def recorded(path: Path) -> list[Frame]:
    with open_recording(path) as log:
        return list(log.frames(sensors=["mic"]))


def contiguous(frames: list[Frame]) -> bool:
    return all(
        b.meta["sample_index"] == a.meta["sample_index"] + a.data.shape[1]
        for a, b in itertools.pairwise(frames)
    )


def config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "mic.toml"
    path.write_text(f'[[sources]]\ntype = "audio"\nname = "mic"\nurl = "{url}"\n{extra}')
    return path


def wait_frames(rec: Recording, n: int, timeout: float = 60.0) -> None:
    """Wait until the live table shows at least ``n`` frames of ``mic``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = [int(x) for x in re.findall(r"mic\s+│\s+(\d+)\s+│", rec.text)]
        if shown and max(shown) >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"mic did not reach {n} frames in {timeout} s: {rec.text[-2000:]}")


def stop(rec: Recording) -> tuple[int, float]:
    try:
        return rec.stop(signal.SIGINT)
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()


def test_rtp_from_an_sdp_file_recorded_in_a_terminal_equals_the_file_sent(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 2.0)
    want = pyav_decode(wav)
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    out = tmp_path / "mic.hfr"
    rec = Recording([str(config(tmp_path, str(sdp))), "-o", str(out)], terminal=True)
    try:
        wait_udp_bound(port, timeout=60)
        sender = subprocess.run(
            rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}"), timeout=30, check=False
        )
        assert sender.returncode == 0
        time.sleep(1.0)  # the last packets through the pipeline
    finally:
        code, took = stop(rec)
    assert code == 0, rec.text[-3000:]
    assert took < 10
    frames = recorded(out)
    np.testing.assert_array_equal(np.concatenate([f.data for f in frames], axis=1), want)
    assert contiguous(frames)  # every sample where its RTP timestamp puts it
    assert [f.t_sensor for f in frames] == [f.meta["sample_index"] * 10**9 // 48000 for f in frames]
    doc = info_json(out)
    assert doc["sensors"]["mic"]["audio"]["samples"] == want.shape[1]
    assert doc["sensors"]["mic"]["audio"]["gaps"] == 0
    ledger = doc["ledger"]["mic"]
    assert ledger["received"] == ledger["emitted"] > 0


def test_rtsp_pulled_from_a_real_server_recorded_in_a_terminal_is_a_run_of_the_file(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 30.0)
    want = pyav_decode(wav)
    out = tmp_path / "mic.hfr"
    with rtsp_server() as (client, source_port):
        push = subprocess.Popen(
            [
                *(need_ffmpeg(), "-v", "error", "-nostdin", "-re", "-i", str(wav)),
                *("-c:a", "pcm_s16be", "-f", "rtsp", "-rtsp_transport", "udp"),
                f"rtsp://127.0.0.1:{source_port}/mic",
            ],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_mount(client, "mic")
            url = f"rtsp://127.0.0.1:{client}/mic"
            rec = Recording(
                [str(config(tmp_path, url, 'transport = "udp"\n')), "-o", str(out)],
                terminal=True,
            )
            try:
                wait_frames(rec, 60)  # 1.2 s of it
            finally:
                code, _ = stop(rec)
        finally:
            if push.poll() is None:
                push.kill()
            push.wait(10)
    assert code == 0, rec.text[-3000:]
    frames = recorded(out)
    got = np.concatenate([f.data for f in frames], axis=1)
    assert got.shape[1] >= 60 * 960
    contiguous_at(got, want)  # one run of the file's samples, as sent
    assert contiguous(frames)
    ledger = info_json(out)["ledger"]["mic"]
    assert ledger["received"] == ledger["emitted"] > 0


def test_a_sender_killed_and_restarted_during_record_is_a_counted_reconnect(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 20.0)
    want = pyav_decode(wav)
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    out = tmp_path / "mic.hfr"
    toml = config(tmp_path, str(sdp), "read_timeout_s = 0.5\nbackoff_max_s = 0.2\n")
    rec = Recording([str(toml), "-o", str(out)], terminal=True)
    senders: list[subprocess.Popen[bytes]] = []
    try:
        wait_udp_bound(port, timeout=60)
        senders.append(subprocess.Popen(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}")))
        time.sleep(1.5)
        senders[0].send_signal(signal.SIGKILL)  # the sender dies mid-stream
        senders[0].wait(10)
        rec.wait_for("reconnecting", timeout=20)  # the silence, said
        time.sleep(0.3)
        wait_udp_bound(port, timeout=20)  # reopened
        senders.append(subprocess.Popen(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}")))
        rec.wait_for("reconnected", timeout=20)
        time.sleep(1.5)
    finally:
        code, took = stop(rec)
        for sender in senders:
            if sender.poll() is None:
                sender.kill()
            sender.wait(10)
    assert code == 0, rec.text[-3000:]  # a live outage alone is not a failure (cli.md)
    assert took < 10
    assert "a new timeline" in rec.text
    frames = recorded(out)
    first = [f for f in frames if "connection" not in f.meta]
    second = frames[len(first) :]
    assert first
    assert second
    for part in (first, second):  # each connection: a run of the file from its start
        got = np.concatenate([f.data for f in part], axis=1)
        assert contiguous_at(got, want) == 0
        assert contiguous(part)
    assert second[0].meta["segment_start"]
    assert second[0].meta["gap_ns"] >= 0.5e9  # at least the read timeout without data
    doc = info_json(out)
    mic = doc["sensors"]["mic"]
    assert mic["audio"]["reconnects"] == 1
    assert mic["audio"]["gaps"] == 0
    assert mic["segments"] == 2
    assert mic["gaps_ns"] == [second[0].meta["gap_ns"]]
    ledger = doc["ledger"]["mic"]
    assert ledger["received"] == ledger["emitted"] > 0
    shown = subprocess.run(
        [sys.executable, "-m", "hyperframes", "info", str(out)],
        capture_output=True, text=True, timeout=60, env=env(), check=True,
    ).stdout  # fmt: skip
    assert "reconnects" in shown


def test_without_reconnect_a_killed_sender_fails_the_source_and_the_exit_code(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 20.0)
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    out = tmp_path / "mic.hfr"
    toml = config(tmp_path, str(sdp), "read_timeout_s = 0.5\nreconnect = false\n")
    rec = Recording([str(toml), "-o", str(out)], terminal=True)
    sender = None
    try:
        wait_udp_bound(port, timeout=60)
        sender = subprocess.Popen(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}"))
        time.sleep(1.5)
        sender.send_signal(signal.SIGKILL)
        sender.wait(10)
        code = rec.proc.wait(timeout=30)  # its only source ended: record ends
    finally:
        if rec.proc.poll() is None:
            stop(rec)
        if sender is not None and sender.poll() is None:
            sender.kill()
    assert code == 1, rec.text[-3000:]
    assert "source mic failed" in rec.text
    assert "no data for 0.5 s (read_timeout)" in rec.text
    assert recorded(out)  # what came before the outage is kept
