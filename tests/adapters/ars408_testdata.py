"""ARS408 CAN cycles for the tests: status, general, quality and extended frames of
cluster and object lists as python-can messages, written as a candump ``-l`` log,
and the reference reader (``tests/data/radar/ars408_reference.cpp``) compiled and run."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import can

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "radar" / "ars408_reference.cpp"


@dataclass
class Cycle:
    """One measurement cycle: each entry's general payload (byte 0 is set to its id)
    and its quality (and, for objects, extended) payload or None."""

    counter: int
    clusters: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    objects: list[tuple[bytes, bytes | None, bytes | None]] = field(default_factory=list)
    state: bytes | None = None


def _message(t: float, can_id: int, data: bytes) -> can.Message:
    return can.Message(
        timestamp=t, arbitration_id=can_id, is_extended_id=False, data=data, channel="can0"
    )


def cycle_messages(cycle: Cycle, t0: float) -> list[can.Message]:
    """The frames of ``cycle`` in the order the sensor sends them, 0.1 ms apart."""
    out: list[tuple[int, bytes]] = []
    if cycle.state is not None:
        out.append((0x201, cycle.state))
    c = cycle.counter & 0xFFFF
    out.append((0x600, bytes([len(cycle.clusters), 0, c >> 8, c & 0xFF, 0x10])))
    out += [(0x701, bytes([i]) + g[1:8]) for i, (g, _q) in enumerate(cycle.clusters)]
    out += [(0x702, bytes([i]) + q[1:5]) for i, (_g, q) in enumerate(cycle.clusters) if q]
    out.append((0x60A, bytes([len(cycle.objects), c >> 8, c & 0xFF, 0x10])))
    out += [(0x60B, bytes([i]) + g[1:8]) for i, (g, _q, _e) in enumerate(cycle.objects)]
    out += [(0x60C, bytes([i]) + q[1:7]) for i, (_g, q, _e) in enumerate(cycle.objects) if q]
    out += [(0x60D, bytes([i]) + e[1:8]) for i, (_g, _q, e) in enumerate(cycle.objects) if e]
    return [_message(t0 + k * 1e-4, i, d) for k, (i, d) in enumerate(out)]


def write_log(path: Path, messages: list[can.Message]) -> Path:
    """A candump ``-l`` log of ``messages`` (python-can's writer)."""
    with can.Logger(str(path)) as log:
        for m in messages:
            log.on_message_received(m)
    return path


def compile_reference(out: Path) -> Path:
    """The reference reader compiled with g++ into ``out``."""
    gxx = shutil.which("g++")
    if gxx is None:
        raise AssertionError(
            "g++ is not on PATH: the ARS408 reference needs it (apt-get install g++)"
        )
    binary = out / "ars408_reference"
    subprocess.run([gxx, "-O1", "-o", str(binary), str(REFERENCE)], check=True, timeout=120)
    return binary


def run_reference(binary: Path, messages: list[can.Message]) -> list[tuple[int, dict[str, float]]]:
    """(id, fields) per frame, as the reference reads them."""
    text = "".join(f"{m.arbitration_id:X} {bytes(m.data).hex()}\n" for m in messages)
    done = subprocess.run([str(binary)], input=text, capture_output=True, text=True, check=True)
    out = []
    for line in done.stdout.splitlines():
        head, *pairs = line.split()
        out.append((int(head, 16), {k: float(v) for k, v in (p.split("=") for p in pairs)}))
    return out
