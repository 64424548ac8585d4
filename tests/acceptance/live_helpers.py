"""Processes for the operator journeys: senders, ``hyperframes`` runs, a pseudo-terminal."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SENDERS = Path(__file__).resolve().parent / "senders.py"
LIDAR = ROOT / ".." / "shared" / "data" / "lidar"
VLP16 = LIDAR / "vlp-16-test-90deg-1-50-frames.pcap"
FPS = 25
GOP = 5  # a key frame every 0.2 s: a (re)joining receiver waits at most that


def env() -> dict[str, str]:
    """The child's environment: this worktree's packages first, plain logs."""
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT) + os.pathsep + out.get("PYTHONPATH", "")
    out["PYTHONUNBUFFERED"] = "1"
    out.pop("FORCE_COLOR", None)
    return out


def need_ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:  # the Makefile installs it; say so rather than skip silently
        pytest.fail("ffmpeg is not on PATH: run 'make deps' (apt-get install ffmpeg)")
    return path


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_udp_bound(port: int, timeout: float = 60.0) -> None:
    """Wait until some process has a UDP socket bound to ``port`` (Linux ``/proc/net/udp``):
    a sender started before the receiver binds loses what it sends first."""
    want = f":{port:04X}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for table in ("/proc/net/udp", "/proc/net/udp6"):
            with contextlib.suppress(OSError), open(table) as f:
                if any(line.split()[1].endswith(want) for line in list(f)[1:]):
                    return
        time.sleep(0.05)
    raise AssertionError(f"nothing bound UDP port {port} within {timeout} s")


@dataclass
class Sender:
    """A sender process and the wall-clock span it ran."""

    proc: subprocess.Popen[str]
    started: float = field(default_factory=time.monotonic)
    stopped: float | None = None

    def stop(self, sig: int = signal.SIGTERM) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate(timeout=10)
        self.stopped = self.stopped or time.monotonic()
        return out or ""

    @property
    def seconds(self) -> float:
        return (self.stopped or time.monotonic()) - self.started


def ffmpeg_sender(
    url: str, *, seconds: float = 60.0, size: str = "160x120", rate: int = FPS
) -> Sender:
    """H.264 MPEG-TS at ``rate`` frames/s in real time (``-re``), as a camera encoder sends it."""
    cmd = [
        need_ffmpeg(),
        "-hide_banner",
        "-loglevel",
        "error",
        "-nostdin",
        "-re",
        "-f",
        "lavfi",
        "-i",
        f"testsrc=size={size}:rate={rate}",
        "-t",
        str(seconds),
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-tune",
        "zerolatency",
        "-g",
        str(GOP),
        "-f",
        "mpegts",
        url,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    return Sender(proc)


def python_sender(*args: str) -> Sender:
    proc = subprocess.Popen(
        [sys.executable, str(SENDERS), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
    )
    return Sender(proc)


def nmea_sender(fd: int, log: Path, *, rate: float = 10.0) -> Sender:
    """A GNSS receiver writing NMEA into ``fd`` (a pty's master end; see senders.py)."""
    proc = subprocess.Popen(
        [sys.executable, str(SENDERS), "nmea", str(fd), "--rate", str(rate), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
        pass_fds=(fd,),
    )
    return Sender(proc)


def sent_count(output: str) -> int:
    match = re.search(r"sent (\d+)", output)
    assert match, f"the sender did not report its count: {output!r}"
    return int(match.group(1))


def hyperframes(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``hyperframes ARGS`` to its end; assert it printed no traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
        cwd=ROOT,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def info_json(path: Path) -> dict[str, Any]:
    done = hyperframes("info", str(path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


class Recording:
    """``hyperframes record`` as a background process, in a pseudo-terminal or not."""

    def __init__(self, args: list[str], *, terminal: bool) -> None:
        self.output = bytearray()
        self._reader: threading.Thread | None = None
        cmd = [sys.executable, "-m", "hyperframes", "record", *args]
        if terminal:
            master, slave = os.openpty()
            os.set_inheritable(slave, True)
            self.proc = subprocess.Popen(
                cmd, stdin=slave, stdout=slave, stderr=slave, env=env(), cwd=ROOT, close_fds=True
            )
            os.close(slave)
            self._master = master
            self._reader = threading.Thread(target=self._drain, daemon=True)
            self._reader.start()
        else:
            self._master = -1
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env(),
                cwd=ROOT,
            )
            self._reader = threading.Thread(target=self._drain_pipe, daemon=True)
            self._reader.start()

    def _drain(self) -> None:  # a pty whose buffer fills would block the recorder
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            self.output += chunk

    def _drain_pipe(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            self.output += chunk

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def wait_for(self, needle: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"record never printed {needle!r}:\n{self.text[-3000:]}")
            time.sleep(0.05)

    def stop(self, sig: int, timeout: float = 20) -> tuple[int, float]:
        """Send ``sig``; return the exit code and the seconds it took to exit."""
        sent = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        took = time.monotonic() - sent
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._master >= 0:
            with contextlib.suppress(OSError):
                os.close(self._master)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code, took


@contextlib.contextmanager
def stopping(*senders: Sender) -> Iterator[None]:
    try:
        yield
    finally:
        for s in senders:
            s.stop(signal.SIGKILL)


def mcap_log_times(path: Path) -> dict[str, list[int]]:
    """Log times per topic of an MCAP file, read with the mcap library (not ours)."""
    from mcap.reader import make_reader

    out: dict[str, list[int]] = {}
    with path.open("rb") as f:
        for _schema, channel, message in make_reader(f).iter_messages():
            out.setdefault(channel.topic, []).append(message.log_time)
    return out
