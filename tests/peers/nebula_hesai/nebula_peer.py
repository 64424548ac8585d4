"""tier4/nebula's own Hesai decoder as a peer process (``harness.cpp``), for the AT128 and OT128.

nebula's real captures of these two models are not in its git tree (stored
outside it), so their decode is checked against nebula's C++ decoder itself:
``include/`` holds nebula's headers unchanged (Apache-2.0, ``LICENSE``; see
``PROVENANCE.md``), ``stub/`` the few names they use from ROS 2 and nlohmann-json
and the optional mask filters, none of them on the decode path.
:func:`peer_binary` compiles it with g++ into ``.venv/peers/nebula_hesai/`` the
first time a test needs it, keyed by the sources' hash (a missing g++ or Boost
fails the test with what to install; never skipped). :func:`run_peer` feeds it
packets and reads back every scan it completed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "harness.cpp"
PTC = HERE / "ptc"
BUILD = Path(sys.prefix) / "peers" / "nebula_hesai"
POINT = np.dtype(
    [
        ("x", "<f4"),
        ("y", "<f4"),
        ("z", "<f4"),
        ("intensity", "u1"),
        ("channel", "<u2"),
        ("return_type", "u1"),
        ("time_stamp", "<u4"),
    ]
)


def _digest(root: Path = HERE) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.[hc]pp")):
        if root == HERE and path.parent == PTC:
            continue  # the PTC mock is built on its own
        h.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return h.hexdigest()[:16]


def compile_command(out: Path) -> list[str]:
    """The g++ line that builds the peer (header-only: one translation unit)."""
    return [
        "g++", "-std=c++17", "-O1", "-DNDEBUG", "-w",
        "-I", str(HERE / "stub"), "-I", str(HERE / "include"),
        "-o", str(out), str(SOURCE),
    ]  # fmt: skip


def peer_binary() -> Path:
    """The compiled peer, built now if these sources were not built yet."""
    out = BUILD / f"harness-{_digest()}"
    if out.exists():
        return out
    _need_gxx()
    if not Path("/usr/include/boost/tokenizer.hpp").exists():
        pytest.fail(
            "nebula's Hesai decoder peer needs g++ and Boost headers: "
            "'apt-get install g++ libboost-dev' (make test-system-deps)"
        )
    BUILD.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(compile_command(partial), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"building nebula's Hesai decoder peer failed:\n{done.stderr[-4000:]}")
    partial.replace(out)  # atomic: a concurrent build of the same source loses nothing
    return out


def _need_gxx() -> None:
    if shutil.which("g++") is None:
        pytest.fail("nebula's Hesai peers need g++: 'apt-get install g++' (make test-system-deps)")


def ptc_mock_binary() -> Path:
    """nebula's mock Hesai sensor (``MockHesaiSensor`` of ``ptc/test_hesai_hw_interface.cpp``,
    cut out unchanged) as a program, built now if not built yet."""
    out = BUILD / f"ptc-mock-{_digest(PTC)}"
    if out.exists():
        return out
    _need_gxx()
    text = (PTC / "test_hesai_hw_interface.cpp").read_text()
    start, end = text.index("class MockHesaiSensor\n"), text.index("class MockHesaiCalibration")
    work = BUILD / f"ptc-src-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "mock_hesai_sensor.inc").write_text(text[start:end])
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    command = ["g++", "-std=c++17", "-O1", "-w", "-pthread", "-I", str(work), "-I", str(PTC),
               "-o", str(partial), str(PTC / "ptc_mock.cpp")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        pytest.fail(f"building nebula's mock Hesai sensor failed:\n{done.stderr[-4000:]}")
    partial.replace(out)
    return out


@contextlib.contextmanager
def nebula_ptc_mock() -> Iterator[int]:
    """nebula's mock sensor serving PTC on loopback while the block runs: its TCP port."""
    proc = subprocess.Popen([str(ptc_mock_binary())], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().isdigit(), f"the mock sensor said {line!r}"
        yield int(line)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # it serves until its stdin closes
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@dataclass
class Scan:
    stamp_s: float
    points: npt.NDArray[np.void]


def run_peer(
    model: str,
    angles: Path,
    packets: list[bytes],
    *,
    cut: float,
    fov: tuple[int, int],
    ranges: tuple[float, float],
    threshold: float = 0.1,
) -> list[Scan]:
    """Every scan nebula's decoder completes from ``packets`` (model ``at128`` or ``ot128``)."""
    args = [str(peer_binary()), model, str(angles), repr(cut), str(fov[0]), str(fov[1])]
    args += [repr(ranges[0]), repr(ranges[1]), repr(threshold)]
    data = b"".join(struct.pack("<I", len(p)) + p for p in packets)
    done = subprocess.run(args, input=data, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    out, pos, scans = done.stdout, 0, []
    while pos < len(out):
        stamp, n = struct.unpack_from("<dI", out, pos)
        pos += 12
        pts = np.frombuffer(out, POINT, n, pos).copy()
        pos += n * POINT.itemsize
        scans.append(Scan(stamp, pts))
    return scans
