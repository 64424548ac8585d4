"""Decoding ARS548 lists: our numpy decoder against a pure-Python ``struct`` loop, same run.

    .venv/bin/python benchmarks/bench_radar.py [--cycles 2000]

The datagrams are the real detection list (308 detections) and object list (50 objects)
of tier4/nebula's ARS548 bag (../shared/data/real/radar/ars548), each decoded ``--cycles``
times. Timed (CPU seconds of this process):

* ``struct loop``: the baseline a user writes first: ``struct.unpack_from`` of the list
  header, then of each detection / object, values kept as tuples (no frame array);
* ``decode``: :func:`adapters.radar._ars548.decode`, the whole list read with
  ``numpy.frombuffer`` of the big-endian wire dtype and copied into the frame dtype
  (``x, y, z`` computed too);
* ``RadarSource(pcap)``: the whole source on a capture of the same cycles (capture
  read, ledger, one Frame per list).

The struct baseline is checked to give the same numbers as the decoder first.
Prints the ratios; BENCHMARKS.md keeps the figures.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.radar import (
    RadarSource,
    _ars548,
)

DETECTION = struct.Struct(">ffBffffffbHBBBHBH")  # 44 bytes, WIRE_DETECTION
OBJECT = struct.Struct(
    ">HIHBBHB" + "f" * 9 + "B" + "ff" + "B" * 10 + ("B" + "f" * 5) * 4 + "Bff" + ("IBff") * 2
)


def struct_loop(payload: bytes) -> list[tuple[Any, ...]]:
    """The baseline: one ``unpack_from`` per row."""
    method = struct.unpack_from(">H", payload, 2)[0]
    if method == _ars548.DETECTION_METHOD:
        count = struct.unpack_from(">I", payload, 101 + 800 * 44 + 8)[0]
        return [DETECTION.unpack_from(payload, 101 + 44 * i) for i in range(count)]
    count = payload[50]
    return [OBJECT.unpack_from(payload, 51 + 187 * i) for i in range(count)]


def cpu(func: Any) -> float:
    start = time.process_time()
    func()
    return time.process_time() - start


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: ARS548 list decoding against a pure-Python struct loop."""
    from tests.adapters.radar_testdata import bag_packets

    packets = [p for _t, p in bag_packets()]
    cycles = 200
    t_struct = cpu(lambda: [struct_loop(p) for _ in range(cycles) for p in packets])
    t_ours = cpu(lambda: [_ars548.decode(p) for _ in range(cycles) for p in packets])
    lists = cycles * len(packets)
    return [
        {
            "measure": "ARS548 list decode (CPU)",
            "value": f"{t_ours / lists * 1e6:.1f} µs/list",
            "ratio": f"{t_struct / t_ours:.2f}x a struct loop",
            "target": "faster than a struct loop",
            "met": t_struct > t_ours,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=2000)
    args = parser.parse_args()
    from tests.adapters.radar_testdata import bag_packets, scan_capture

    assert OBJECT.size == 187
    assert DETECTION.size == 44
    packets = [p for _t, p in bag_packets()]
    for p in packets:  # the baseline reads the same numbers
        scan = _ars548.decode(p)
        assert isinstance(scan, _ars548.Scan)
        rows = struct_loop(p)
        assert len(rows) == len(scan.data)
        if scan.kind == "detections":
            assert np.float32(rows[0][0]) == scan.data[0]["azimuth"]
        else:
            assert rows[0][1] == scan.data[0]["id"]
    cycles = args.cycles
    rows = sum(len(struct_loop(p)) for p in packets) * cycles

    def baseline() -> None:
        for _ in range(cycles):
            for p in packets:
                struct_loop(p)

    def ours() -> None:
        for _ in range(cycles):
            for p in packets:
                _ars548.decode(p)

    load = os.getloadavg()[0]
    t_struct, t_ours = cpu(baseline), cpu(ours)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ars548.pcap"
        scan_capture(path, cycles)

        async def source() -> int:
            return sum([1 async for _ in RadarSource(path).frames()])

        start = time.process_time()
        frames = anyio.run(source)
        t_source = time.process_time() - start
    assert frames == 2 * cycles
    lists = 2 * cycles
    print(
        f"{lists:,} lists ({rows:,} rows), load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print("| path | CPU s | µs / list | rows / s | vs struct loop |")
    print("|---|---|---|---|---|")
    for name, t in (
        ("pure-Python struct loop (baseline)", t_struct),
        ("`_ars548.decode` (numpy wire dtype)", t_ours),
        ("`RadarSource(pcap)` frames (capture read, ledger, Frame)", t_source),
    ):
        print(
            f"| {name} | {t:.3f} | {t / lists * 1e6:.1f} | {rows / t / 1e6:.2f} M | {t_struct / t:.2f}x |"
        )


if __name__ == "__main__":
    main()
