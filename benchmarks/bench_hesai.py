"""Hesai decode speed: the compiled kernel against the plain numpy path, same run, same packets.

Decodes every packet of nebula's XT32, QT128 and 40P bags (../shared/data/lidar/hesai)
and of AT128 and OT128 packets built to nebula's layouts (no public capture of either:
``tests/adapters/hesai_synthetic.py``, the packets the tests check against nebula's decoder),
repeated ``--repeat`` times through :class:`adapters.lidar._hesai_decode.HesaiDecoder`
(packet checks included), and prints points/s and CPU seconds per path and the ratio.
The kernel's compile is done before timing (its cost is printed apart).

    .venv/bin/python benchmarks/bench_hesai.py --repeat 20
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

from adapters.lidar._hesai_decode import HesaiDecoder
from adapters.lidar._hesai_models import default_angles, identify
from adapters.lidar._hesai_packets import bag_packets, prepare

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "lidar" / "hesai"


def packets(key: str) -> list[bytes]:
    db = next((DATA / key).glob("*/*.db3"))
    rows = sqlite3.connect(db).execute("select data from messages order by timestamp")
    return [p for (d,) in rows for p in bag_packets(d, "pandar_msgs/msg/PandarScan")]


def synthetic(key: str) -> list[bytes]:
    """AT128 / OT128 packets of about 4 sweeps, built as the tests build them."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.adapters.hesai_synthetic import at128_packets, ot128_packets

    model, mode = key.split("-")
    dual = mode == "dual"
    if model == "at128":  # 3 mirror fields: 3 sweeps a rotation
        return at128_packets(7300 if dual else 3700, dual=dual, seed=7)
    return ot128_packets(7200 if dual else 3600, dual=dual, seed=5)


SYNTHETIC = ("at128-dual", "at128-single", "ot128-dual", "ot128-single")


def run(payloads: list[bytes], kernel: bool, repeat: int) -> tuple[int, float, float]:
    model = identify(payloads[0])[0]
    assert model is not None
    points = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        decoder = HesaiDecoder(model, default_angles(model), kernel=kernel)
        for i in range(0, len(payloads), 512):
            batch, _rejected = prepare(model, payloads[i : i + 512])
            for s in decoder.push(batch, [None] * len(batch.raw)):
                points += len(s.points)
        points += sum(len(s.points) for s in decoder.flush())
    return points, time.perf_counter() - wall, time.process_time() - cpu


def quick() -> list[dict[str, object]]:
    """``hyperframes bench`` row: the compiled kernel against the numpy path on XT32 sweeps."""
    payloads = packets("xt32")
    run(payloads[:64], True, 1)  # compile or load the kernel outside the timing
    n, _, kernel_cpu = run(payloads, True, 2)
    _, _, numpy_cpu = run(payloads, False, 2)
    return [
        {
            "measure": "Hesai XT32 decode, compiled kernel (CPU)",
            "value": f"{n / kernel_cpu / 1e6:.1f} M points/s",
            "ratio": f"{numpy_cpu / kernel_cpu:.2f}x the numpy path",
            "target": "faster than the numpy path",
            "met": numpy_cpu > kernel_cpu,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    t0 = time.perf_counter()
    run(packets("xt32")[:64], True, 1)
    run(synthetic("at128-single")[:64], True, 1)  # the AT128's own loop
    print(f"kernel compile/load: {time.perf_counter() - t0:.2f} s")
    for key in ("40p", "xt32", "qt128", *SYNTHETIC):
        payloads = synthetic(key) if key in SYNTHETIC else packets(key)
        res = {k: run(payloads, k, args.repeat) for k in (True, False)}
        for k, (n, wall, cpu) in res.items():
            name = "kernel" if k else "numpy "
            print(
                f"{key:12} {name} {n / wall / 1e6:6.2f} M points/s  {n / cpu / 1e6:6.2f} M "
                f"points/CPU-s  wall {wall:.3f} s  cpu {cpu:.3f} s"
            )
        print(f"{key:12} kernel/numpy speed ratio {res[False][2] / res[True][2]:.2f}x (CPU time)")


if __name__ == "__main__":
    main()
