"""Bag import throughput: BagSource against reading the same bag with rosbags alone.

Both sides do the whole job from a closed file to usable data, timed end to end:

* **rosbags alone** (the baseline): ``AnyReader([bag], default_typestore=...)``
  (the same construction BagSource uses: Humble types for ROS 2, Noetic for
  ROS 1), ``open()``, ``messages()`` over every connection, and
  ``reader.deserialize(raw, msgtype)`` of every message: message objects whose
  numeric fields are numpy arrays (image pixels and cloud bytes as ``uint8``
  arrays, covariances as ``float64`` arrays), what a rosbags user works with.
* **BagSource**: ``anyio.run`` of ``BagSource(bag)`` + ``frames()`` to the end:
  the same reading, then decoding to our payloads (image arrays in the
  encoding's dtype and shape, structured point arrays by field name, IMU and
  GNSS dicts of arrays, generic dicts for other types), ``Frame`` objects with
  both stamps and ``seq``, handed through the event loop.
* **read only** (a floor, for context): ``messages()`` without deserialising.

Each round times the three back to back (order rotated per round), so both
sides of a ratio see the same machine load. Reported: best of the rounds for
each side (wall clock) and their ratio; the same ratio in process CPU time
(all threads; less disturbed by other processes on a shared machine); and the
median and range of the per-round wall-clock ratios.
Target: BagSource within 20 % of rosbags alone (ratio <= 1.20). Bags are
written in the run with rosbags (``tests/interop/bagdata.py``).

Export (``--export``): the same bags recorded to ``.hfr`` (BagSource ->
Recorder, not timed), then ``export_recording(hfr, out.mcap, to="ros2")`` of
every frame as its original message (ROS 1 bags converted to CDR), against
**rosbags writing the same messages** (the CDR bytes our export wrote, held
in memory) with its rosbag2 MCAP writer, zstd chunks on both sides. Reported in MB/s of message bytes
(the same bytes on both sides), best of the paired rounds, and their ratio.

Real bags (``--real``): every bag in ``../shared/data/real/bags/`` and
``bags-rosbag2/``, the same three readers. rosbags alone opens each the way
a rosbags user must: ``AnyReader`` with the type store BagSource picks
(Humble for the bags that store no definitions), through a symlink without
the ``.bag`` suffix for rosbag2 directories named ``*.bag`` (``AnyReader``
takes them for ROS 1), and on the MCAP file itself for ``rosbag2_talker``
(its directory reads 0 messages in rosbags: QoS mismatch). A bag rosbags
cannot open at all (a service-event schema) has no ratio. Counts: frames plus
counted losses for BagSource, messages for rosbags; they must agree.

Run:  .venv/bin/python benchmarks/bench_bags.py [--seconds S] [--repeat N] [--export] [--real]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.bags import BagSource
from tests.interop.bagdata import write_bag

MIXED = ("/cam/image", "/lidar", "/imu", "/gps", "/pose")
CASES = {
    "camera 24x32 + lidar 500 pts + imu + gps + pose": MIXED,
    "imu only (100 Hz, small messages)": ("/imu",),
    "lidar only (500-point PointCloud2)": ("/lidar",),
    "camera only (24x32 rgb8 Image)": ("/cam/image",),
}
"""ROS 2 MCAP bags: label -> topics."""

OTHER_STORAGE = {
    "mixed, ROS 2 sqlite3": ("sqlite3", MIXED),
    "mixed, ROS 1 .bag": ("ros1", MIXED),
}
"""The mixed bag in the other storage formats: label -> (kind, topics)."""

TARGET = 1.20


def _typestore(path: Path) -> Any:
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS1_NOETIC if path.suffix == ".bag" else Stores.ROS2_HUMBLE)


REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real"


def real_bags() -> list[Path]:
    """Every bag in ``shared/data/real/bags/`` and ``bags-rosbag2/``."""
    out: list[Path] = []
    for folder in ("bags", "bags-rosbag2"):
        if (REAL / folder).is_dir():
            out += sorted(p for p in (REAL / folder).iterdir() if p.suffix not in (".md", ".json"))
    return out


def rosbags_path(bag: Path, tmp: Path) -> Path | None:
    """Where rosbags' ``AnyReader`` reads the same messages (see the module docstring)."""
    from rosbags.highlevel import AnyReader

    path = bag
    if bag.is_dir() and bag.suffix == ".bag":
        path = tmp / bag.stem
        if not path.exists():
            path.symlink_to(bag.resolve(), target_is_directory=True)
    try:
        with AnyReader([path], default_typestore=_typestore(path)) as reader:
            if reader.message_count and not any(True for _ in reader.messages()):
                mcaps = sorted(bag.glob("*.mcap")) if bag.is_dir() else []
                return mcaps[0] if len(mcaps) == 1 else None
    except Exception:  # rosbags cannot open it (a schema it cannot parse)
        return None
    return path


def rosbags_alone(path: Path) -> int:
    """Open, read and deserialise every message with rosbags; the message count."""
    from rosbags.highlevel import AnyReader

    n = 0
    with AnyReader([path], default_typestore=_typestore(path)) as reader:
        deserialize = reader.deserialize
        for conn, _, raw in reader.messages():
            deserialize(raw, conn.msgtype)
            n += 1
    return n


def read_only(path: Path) -> int:
    """Open and read every message's bytes with rosbags, no deserialising."""
    from rosbags.highlevel import AnyReader

    with AnyReader([path], default_typestore=_typestore(path)) as reader:
        return sum(1 for _ in reader.messages())


def bag_source(path: Path) -> int:
    """Every message of the bag as a frame through BagSource; frames plus counted losses."""

    async def run() -> int:
        n = 0
        source = BagSource(path)
        async with source:
            async for _ in source.frames():
                n += 1
        lost = sum(s.lost.get("undecodable", 0) for s in source.ledgers().values())
        return n + lost

    return anyio.run(run)


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    """``(best seconds, count)`` of ``repeat`` calls (the quick-mode runner uses this)."""
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def _bag(tmp: Path, i: int, kind: str, seconds: float, topics: tuple[str, ...]) -> Path:
    path = tmp / (f"bag{i}.bag" if kind == "ros1" else f"bag{i}")
    write_bag(path, kind, seconds, topics)
    return path


def compare(path: Path, rounds: int, baseline: Path | None = None) -> dict[str, Any]:
    """Paired rounds of the three readers on one bag (rosbags on ``baseline`` if given)."""
    other = baseline or path
    fns: dict[str, Callable[[Path], int]] = {
        "read": lambda _p: read_only(other),
        "rosbags": lambda _p: rosbags_alone(other),
        "ours": bag_source,
    }
    times: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    counts: dict[str, int] = {}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            start, start_cpu = time.perf_counter(), time.process_time()
            counts[name] = fns[name](path)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    if len(set(counts.values())) != 1:
        raise AssertionError(f"message counts differ: {counts}")
    ratios = [o / b for o, b in zip(times["ours"], times["rosbags"], strict=True)]
    cpu_ratios = [o / b for o, b in zip(cpu["ours"], cpu["rosbags"], strict=True)]
    best = {name: min(t) for name, t in times.items()}
    return {
        "messages": counts["ours"],
        "best": best,
        "ratio": best["ours"] / best["rosbags"],
        "cpu_ratio": min(cpu["ours"]) / min(cpu["rosbags"]),
        "cpu_median": statistics.median(cpu_ratios),
        "median": statistics.median(ratios),
        "low": min(ratios),
        "high": max(ratios),
    }


def _record(bag: Path, out: Path) -> None:
    from recordings import Recorder

    async def run() -> None:
        source = BagSource(bag)
        with Recorder(out, sensors=source.specs) as rec:
            async with source:
                async for frame in source.frames():
                    rec.write(frame)

    anyio.run(run)


def _exported_messages(mcap: Path) -> list[tuple[str, str, str, int, bytes]]:
    """``(topic, type, schema text, log time, CDR bytes)`` of every message of our export."""
    from mcap.reader import make_reader

    with open(mcap, "rb") as f:
        return [
            (c.topic, s.name, s.data.decode(), m.log_time, m.data)
            for s, c, m in make_reader(f).iter_messages()
            if s is not None
        ]


def rosbags_write(path: Path, messages: list[tuple[str, str, str, int, bytes]]) -> None:
    """rosbags' rosbag2 MCAP writer writing ``messages`` (types from their schemas).

    With zstd chunk compression, as our writer does (``CompressionMode.STORAGE``).
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.rosbag2.enums import CompressionFormat, CompressionMode
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.EMPTY)
    for _, msgtype, text, _, _ in {(m[0], m[1]): m for m in messages}.values():
        store.register(get_types_from_msg(text, msgtype))
    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        conns = {}
        for topic, msgtype, _, log_time, data in messages:
            conn = conns.get(topic)
            if conn is None:
                conn = conns[topic] = writer.add_connection(topic, msgtype, typestore=store)
            writer.write(conn, log_time, data)


def compare_export(bag: Path, tmp: Path, rounds: int) -> dict[str, Any]:
    """Paired rounds: our ros2 export of the recorded bag vs rosbags writing its messages."""
    from recordings.outputs._export import export_recording

    hfr = tmp / f"{bag.name}.hfr"
    _record(bag, hfr)
    first = tmp / f"{bag.name}-first.mcap"
    export_recording(hfr, first, to="ros2", groups="none")
    messages = _exported_messages(first)
    size = sum(len(m[4]) for m in messages)
    times: dict[str, list[float]] = {"ours": [], "rosbags": [], "read": []}
    names = list(times)
    for r in range(rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            out = tmp / f"{bag.name}-{name}-{r}"
            start = time.perf_counter()
            if name == "read":  # the .hfr read alone, part of "ours"
                _read_all(hfr)
            elif name == "ours":
                report = export_recording(hfr, out.with_suffix(".mcap"), to="ros2", groups="none")
                if not report.complete:
                    raise AssertionError(f"export left frames out: {report.skipped}")
            else:
                rosbags_write(out, messages)
            times[name].append(time.perf_counter() - start)
    best = {name: min(t) for name, t in times.items()}
    return {
        "messages": len(messages),
        "mb": size / 1e6,
        "ours": size / 1e6 / best["ours"],
        "rosbags": size / 1e6 / best["rosbags"],
        "read_share": best["read"] / best["ours"],
        "ratio": best["ours"] / best["rosbags"],
    }


def _read_all(hfr: Path) -> int:
    from recordings import open_recording

    with open_recording(hfr) as log:
        return sum(1 for _ in log.frames())


def quick() -> list[dict[str, Any]]:
    """``hyperframes bench`` rows: 3 s bags, 3 paired rounds."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, topics) in enumerate(CASES.items()):
            res = compare(_bag(Path(tmp), i, "mcap", 3.0, topics), 3)
            rows.append(
                {
                    "measure": f"BagSource: {label}",
                    "value": f"{res['messages'] / res['best']['ours']:,.0f} msg/s",
                    "ratio": f"{res['ratio']:.2f}x rosbags time",
                    "target": f"<= {TARGET:.2f}x",
                    "met": res["ratio"] <= TARGET,
                }
            )
        bag = _bag(Path(tmp), 99, "mcap", 3.0, MIXED)
        res = compare_export(bag, Path(tmp), 3)
        rows.append(
            {
                "measure": "export --profile ros2 of a recorded bag",
                "value": f"{res['ours']:,.1f} MB/s",
                "ratio": f"{res['ratio']:.2f}x rosbags writing them",
                "target": "reported",
                "met": None,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="bag length (s)")
    parser.add_argument("--repeat", type=int, default=7, help="paired rounds per bag")
    parser.add_argument("--export", action="store_true", help="measure export throughput")
    parser.add_argument("--real", action="store_true", help="the real bags in shared/data")
    args = parser.parse_args()
    if args.real:
        main_real(args.repeat)
        return
    if args.export:
        main_export(args.seconds, args.repeat)
        return
    cases = [(label, "mcap", topics) for label, topics in CASES.items()]
    cases += [(label, kind, topics) for label, (kind, topics) in OTHER_STORAGE.items()]
    print(
        f"{'bag':48} {'msgs':>6} {'read only':>10} {'rosbags':>10} {'BagSource':>10} "
        f"{'ratio':>6} {'cpu':>5} {'median':>6} {'range':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, kind, topics) in enumerate(cases):
            res = compare(_bag(Path(tmp), i, kind, args.seconds, topics), args.repeat)
            n, best = res["messages"], res["best"]
            print(
                f"{label:48} {n:6} {n / best['read']:10,.0f} {n / best['rosbags']:10,.0f} "
                f"{n / best['ours']:10,.0f} {res['ratio']:6.2f} {res['cpu_ratio']:5.2f} "
                f"{res['median']:6.2f} "
                f"{res['low']:5.2f}-{res['high']:<5.2f}"
            )
    print(
        "msg/s: best of the rounds (wall clock). ratio = BagSource best time / rosbags-alone "
        f"best time (target <= {TARGET:.2f}); cpu: the same in process CPU time; median, "
        "range: of the per-round wall-clock ratios."
    )


def main_export(seconds: float, repeat: int) -> None:
    cases = [(label, "mcap", topics) for label, topics in CASES.items()]
    cases += [(label, kind, topics) for label, (kind, topics) in OTHER_STORAGE.items()]
    print(
        f"{'bag':48} {'msgs':>6} {'MB':>7} {'ours MB/s':>10} {'rosbags MB/s':>13} "
        f"{'ratio':>6} {'read':>5}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, kind, topics) in enumerate(cases):
            res = compare_export(_bag(Path(tmp), i, kind, seconds, topics), Path(tmp), repeat)
            print(
                f"{label:48} {res['messages']:6} {res['mb']:7.1f} {res['ours']:10.1f} "
                f"{res['rosbags']:13.1f} {res['ratio']:6.2f} {res['read_share']:5.0%}"
            )
    print(
        "MB/s: message bytes / best time of the rounds. ratio = our export time / rosbags "
        "write time (ours also reads and decompresses the .hfr and, for ROS 1, converts to "
        "CDR); read: share of our time that reading the .hfr alone takes."
    )


def main_real(repeat: int) -> None:
    print(
        f"{'bag':36} {'msgs':>6} {'read ms':>8} {'rosbags ms':>10} {'ours ms':>8} "
        f"{'ratio':>6} {'cpu':>5} {'median':>6} {'cpu med':>7} {'range':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for bag in real_bags():
            baseline = rosbags_path(bag, Path(tmp))
            if baseline is None:
                n = bag_source(bag)
                print(f"{bag.name:36} {n:6}  rosbags cannot open it: no ratio")
                continue
            res = compare(bag, repeat, baseline)
            best = res["best"]
            print(
                f"{bag.name:36} {res['messages']:6} {best['read'] * 1e3:8.1f} "
                f"{best['rosbags'] * 1e3:10.1f} {best['ours'] * 1e3:8.1f} {res['ratio']:6.2f} "
                f"{res['cpu_ratio']:5.2f} {res['median']:6.2f} {res['cpu_median']:7.2f} "
                f"{res['low']:5.2f}-{res['high']:<5.2f}"
            )
    print(
        "ms: best of the rounds (wall clock). ratio = BagSource best time / rosbags-alone best "
        "time (<= 1.00: BagSource at least as fast); cpu: the same in process CPU time; "
        "median, cpu med, range: of the per-round ratios (wall, CPU, wall)."
    )


if __name__ == "__main__":
    main()
