"""The Fast DDS peer (``peer.cpp``) for the tests: built once, run as a process on loopback.

``peer.cpp`` is a ROS 2 node's middleware as ``rmw_fastrtps_cpp`` sets it up
(``rt/`` topics, ``dds_`` type names, XCDR1, no type information, a
localhost-only participant, ROS 2's default QoS), written against Debian's
``libfastrtps-dev`` (Fast DDS 2.9) and sharing no code with hyperframes.
:func:`peer_binary` compiles it with g++ into ``.venv/peers/fastdds/`` (the
environment's folder) the first time a test needs it, keyed by the source's
hash; a missing Fast DDS fails the test with the package to install
(``make test-system-deps`` installs it), it is never skipped.

Messages travel as records ``<u16 topic length><u32 data length><i64 ns><topic><CDR>``
(:func:`write_records`, :func:`read_records`): the publisher's input, the
subscriber's output (``ns``: its monotonic receive time).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "peer.cpp"
ROOT = HERE.parents[2]
BUILD = Path(sys.prefix) / "peers" / "fastdds"
"""In the environment's own folder (``.venv/peers/fastdds`` under ``make test``): no test
writes into the source tree, and a fresh environment builds afresh."""
HEADER = "/usr/include/fastdds/dds/domain/DomainParticipant.hpp"
RECORD = struct.Struct("<HIq")
"""A record's head: topic length, data length, nanoseconds."""


def compile_command(out: Path) -> list[str]:
    """The g++ line that builds the peer (``make fastdds-peer`` runs the same)."""
    return ["g++", "-std=c++17", "-O1", "-o", str(out), str(SOURCE), "-lfastrtps", "-lfastcdr"]


def peer_binary() -> Path:
    """The compiled peer, built now if this source was not built yet."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = BUILD / f"peer-{digest}"
    if out.exists():
        return out
    if not Path(HEADER).exists() or shutil.which("g++") is None:
        pytest.fail(
            "the Fast DDS peer needs g++ and Debian's libfastrtps-dev (Fast DDS 2.9): "
            "run 'make test-system-deps' or 'apt-get install g++ libfastrtps-dev libfastcdr-dev'"
        )
    BUILD.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(compile_command(partial), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"building the Fast DDS peer failed:\n{done.stderr[-4000:]}")
    partial.replace(out)  # atomic: a concurrent build of the same source loses nothing
    return out


def write_records(path: Path, records: Iterable[tuple[str, bytes]]) -> int:
    """``(topic, CDR bytes)`` records to ``path`` for ``peer pub --data``; how many."""
    n = 0
    with path.open("wb") as out:
        for topic, data in records:
            name = topic.encode()
            out.write(RECORD.pack(len(name), len(data), 0) + name + bytes(data))
            n += 1
    return n


def read_records(path: Path) -> list[tuple[str, int, bytes]]:
    """``(topic, receive ns, CDR bytes)`` of every record ``peer sub --out`` wrote."""
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        n_topic, n_data, ns = RECORD.unpack_from(data, at)
        at += RECORD.size
        topic = data[at : at + n_topic].decode()
        out.append((topic, ns, data[at + n_topic : at + n_topic + n_data]))
        at += n_topic + n_data
    return out


class Peer:
    """``peer pub|sub ...`` as a process; its lines read with :meth:`wait_line`."""

    def __init__(self, mode: str, domain: int, topics: dict[str, str], *extra: str) -> None:
        cmd = [str(peer_binary()), mode, "--domain", str(domain)]
        for topic, msgtype in topics.items():
            cmd += ["--topic", f"{topic}={msgtype}"]
        self.proc = subprocess.Popen(
            [*cmd, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []

    def wait_line(self, prefix: str, timeout: float = 30) -> str:
        """The first line not read yet that starts with ``prefix`` (lines before it are kept)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"the Fast DDS peer never printed {prefix!r}: {self.lines}")

    def go(self) -> None:
        """Let a ``pub --wait-go`` peer send (once the readers matched its writers too)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60) -> list[str]:
        """Wait for the exit (status 0 asserted); every line it printed."""
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines += out.splitlines()
        assert self.proc.returncode == 0, self.lines
        return self.lines

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
