"""Decoding a CAN log: CanSource against plain python-can + cantools, in the same run.

    .venv/bin/python benchmarks/bench_can.py [--frames 1000000]

Writes a candump ``-l`` log of ``--frames`` frames of the motohawk DBC's message
(tests/data/can/motohawk.dbc) with random payloads, then times (CPU seconds of
this process):

* ``python-can read``: ``can.LogReader`` over the log, nothing else (the floor
  both paths pay);
* ``python-can + cantools``: that loop plus ``db.decode_message(id, data)`` per frame;
* ``CanSource``: ``frames()`` of ``CanSource(log, database=dbc)`` (raw and
  decoded frames, one :class:`~fusion.Frame` each, ledger counted), with and
  without the raw copy;
* ``CanSource(block=N)``: ``frame_batches()`` (what the hub reads) of the block
  path: a frame per ``N`` rows of a sensor, no Python work per CAN frame beyond
  python-can's message (``--block``, default 4096).

Prints the ratios; BENCHMARKS.md keeps the figures.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio
import can
import cantools
import numpy as np

from adapters.can import CanSource

DBC = Path(__file__).resolve().parents[1] / "tests" / "data" / "can" / "motohawk.dbc"


def write_log(path: Path, frames: int) -> None:
    rng = np.random.default_rng(0)
    payloads = rng.integers(0, 256, (frames, 8), dtype=np.uint8)
    with path.open("w") as f:
        for k in range(frames):
            f.write(f"({1.7e9 + k * 1e-4:.6f}) can0 1F0#{payloads[k].tobytes().hex().upper()}\n")


def cpu(func: object) -> float:
    start = time.process_time()
    func()  # type: ignore[operator]
    return time.process_time() - start


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: a 100,000-frame log decoded in blocks vs python-can + cantools."""
    db = cantools.database.load_file(str(DBC))
    n = 100_000
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "drive.log"
        write_log(log, n)

        def peer() -> None:
            for m in can.LogReader(str(log)):
                db.decode_message(m.arbitration_id, bytes(m.data))  # type: ignore[union-attr]

        def ours() -> None:
            async def run() -> None:
                async with CanSource(log, database=DBC, block=4096) as source:
                    async for _ in source.frame_batches():
                        pass

            anyio.run(run)

        base, took = cpu(peer), cpu(ours)
    return [
        {
            "measure": "CAN log decoded with a DBC, block = 4096 (CPU)",
            "value": f"{took / n * 1e6:.2f} µs/frame",
            "ratio": f"{base / took:.2f}x python-can + cantools",
            "target": "at least as fast as python-can + cantools",
            "met": took <= base,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--block", type=int, default=4096)
    args = parser.parse_args()
    db = cantools.database.load_file(str(DBC))
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "drive.log"
        write_log(log, args.frames)

        def read_only() -> None:
            for _ in can.LogReader(str(log)):
                pass

        def peer() -> None:
            for m in can.LogReader(str(log)):
                db.decode_message(m.arbitration_id, bytes(m.data))  # type: ignore[union-attr]

        def ours(raw: bool) -> None:
            async def run() -> None:
                async with CanSource(log, database=DBC, raw=raw) as source:
                    async for _ in source.frames():
                        pass

            anyio.run(run)

        def blocks(raw: bool) -> None:
            async def run() -> None:
                async with CanSource(log, database=DBC, raw=raw, block=args.block) as source:
                    async for _ in source.frame_batches():
                        pass

            anyio.run(run)

        floor = cpu(read_only)
        base = cpu(peer)
        both = cpu(lambda: ours(True))
        decoded = cpu(lambda: ours(False))
        block_both = cpu(lambda: blocks(True))
        block_decoded = cpu(lambda: blocks(False))
    n = args.frames
    print(f"{n:,} frames")
    print(f"python-can read only        {floor:7.2f} s CPU  {floor / n * 1e6:6.2f} us/frame")
    print(f"python-can + cantools       {base:7.2f} s CPU  {base / n * 1e6:6.2f} us/frame")
    print(f"CanSource (decoded only)    {decoded:7.2f} s CPU  {decoded / n * 1e6:6.2f} us/frame"
          f"  {base / decoded:.2f}x the peer")  # fmt: skip
    print(f"CanSource (raw + decoded)   {both:7.2f} s CPU  {both / n * 1e6:6.2f} us/frame"
          f"  {base / both:.2f}x the peer")  # fmt: skip
    for label, took in (("decoded only", block_decoded), ("raw + decoded", block_both)):
        print(f"CanSource block={args.block} ({label}) {took:7.2f} s CPU  "
              f"{took / n * 1e6:6.2f} us/frame  {base / took:.2f}x the peer")  # fmt: skip
    print(f"decoding beyond reading: peer {base - floor:.2f} s, ours {decoded - floor:.2f} s, "
          f"ours in blocks {block_decoded - floor:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
