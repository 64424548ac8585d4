"""The red-team corpus of careless and hostile command lines (issue 26), made on demand.

Each :class:`Case` is one class of input a user (or a script) gives a command: an
output that is its input (by name, symlink or hard link), an option value that
overflows, an unknown sensor, a config whose python source takes options of the
wrong type, a truncated MCAP, a bag folder given to ``check``. :func:`build` writes
the few small files the cases need into a folder and returns them; the README in
``tests/data/hostile/`` has one line per case (its "Command lines" section).
``tests/cli/test_hostile_corpus.py`` runs every case; ``benchmarks/bench_hostile.py``
sweeps them as subprocesses (exit code, one line, time, peak RSS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fusion._frames import Frame, SensorSpec

MS = 1_000_000


@dataclass(frozen=True)
class Case:
    """``hyperframes ARGV`` (run in the corpus folder) must exit ``code`` with one error
    line holding ``words``, and leave ``guard`` (an input) byte for byte as it was."""

    name: str
    argv: tuple[str, ...]
    code: int
    words: str
    guard: str | None = None


def recording(path: Path) -> Path:
    """A small real recording: cam 30 Hz images, lidar 10 Hz points, imu 200 Hz, 1 s."""
    from recordings import Recorder

    rng = np.random.default_rng(26)
    events: list[tuple[int, str, int]] = []
    for name, hz in {"cam": 30, "lidar": 10, "imu": 200}.items():
        t = np.arange(hz) * (1_000_000_000 // hz) + rng.integers(0, 3 * MS, hz)
        events += [(int(x), name, i) for i, x in enumerate(t)]
    specs = [SensorSpec("cam", kind="camera"), SensorSpec("lidar", kind="lidar"), SensorSpec("imu")]
    with Recorder(path, sensors=specs, chunk_bytes=64 << 10) as rec:
        for t, name, i in sorted(events):
            if name == "cam":
                data: object = np.full((16, 16, 3), i, np.uint8)
            elif name == "lidar":
                data = rng.normal(0, 10, (64, 3)).astype(np.float32)
            else:
                data = {"ax": float(i), "gz": 0.5}
            rec.write(Frame(name, i, t, data))
    return path


def truncated_mcap(path: Path, source: Path) -> Path:
    """``source`` exported as ROS 2 MCAP, cut to its first 60 %: no summary, no end magic."""
    from recordings.outputs._export import export_recording

    whole = path.with_name("whole.mcap")
    export_recording(source, whole, groups="none")
    data = whole.read_bytes()
    path.write_bytes(data[: len(data) * 6 // 10])
    whole.unlink()
    return path


PYTHON_CONFIG = """
[sync]
policy = "exact"
sensors = ["tick"]

[[sources]]
type = "python"
name = "tick"
class = "tests.config.config_sources:{cls}"
{options}
"""


OUSTER_JSON = (
    Path(__file__).resolve().parents[3] / "shared/data/lidar/ouster_OS-1-32-G_v2.1.1_1024x10.json"
)
OUSTER_PCAP = OUSTER_JSON.with_suffix(".pcap")

OUSTER_CONFIG = """
[[sources]]
type = "ouster"
name = "os1"
metadata = "{metadata}"
pcap = "{pcap}"
"""


def forged_ouster(path: Path, change: dict[str, object], mode: str | None = None) -> Path:
    """The real OS-1-32 metadata JSON with ``data_format`` keys (or the lidar mode) changed."""
    import json

    doc = json.loads(OUSTER_JSON.read_text())
    doc["data_format"].update(change)
    if mode is not None:
        doc["lidar_mode"] = mode
    path.write_text(json.dumps(doc))
    return path


def ouster_config(folder: Path, name: str, metadata: Path) -> str:
    (folder / name).write_text(OUSTER_CONFIG.format(metadata=metadata, pcap=OUSTER_PCAP))
    return name


def side_file_cases(folder: Path) -> list[Case]:
    """Issue 35: small inputs that asked for large memory, hung, or ended in a bare
    ``OverflowError`` / ``IndexError`` / ``RecursionError`` / ``ValueError``."""
    os.mkfifo(folder / "fifo.toml")
    (folder / "a_dir.csv").mkdir()
    (folder / "bigint.toml").write_text('[sync]\npolicy = "exact"\nqueue_size = 1' + "0" * 30)
    (folder / "deep.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "rate.toml").write_text(
        '[[sources]]\ntype = "synthetic_imu"\nname = "imu"\nrate_hz = 1e-300\n\n'
        '[sync]\npolicy = "exact"\n'
    )
    (folder / "csv_dir.toml").write_text(
        '[[sources]]\ntype = "timeseries_csv"\nname = "imu"\npath = "a_dir.csv"\n'
    )
    (folder / "calib_zero.toml").write_text(
        '[[sources]]\ntype = "velodyne"\nname = "v"\nmodel = "VLP-16"\n'
        f'pcap = "{OUSTER_PCAP.with_name("vlp-16-test-90deg-1-50-frames.pcap")}"\n'
        'calibration = "/dev/zero"\n'
    )
    (folder / "deep.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    big = ouster_config(
        folder,
        "ouster_12gib.toml",
        forged_ouster(folder / "ouster_12gib.json", {"columns_per_frame": 16_777_216}),
    )
    zero = ouster_config(
        folder,
        "ouster_cpp0.toml",
        forged_ouster(folder / "ouster_cpp0.json", {"columns_per_packet": 0}),
    )
    mode = ouster_config(
        folder, "ouster_mode.toml", forged_ouster(folder / "ouster_mode.json", {}, mode="65536x10")
    )
    digits = ouster_config(
        folder,
        "ouster_digits.toml",
        forged_ouster(folder / "ouster_digits.json", {"pixels_per_column": 10**400}),
    )
    fifo_meta = ouster_config(folder, "ouster_fifo.toml", folder / "fifo.toml")
    deep = ouster_config(folder, "ouster_deep.toml", folder / "deep.json")
    rec = ("record", "--fast", "-o", "t.hfr")
    return [
        Case("config that is a FIFO", (*rec, "fifo.toml"), 2,
             "config 'fifo.toml': is a FIFO, not a regular file"),
        Case("config that is /dev/zero", (*rec, "/dev/zero"), 2,
             "config '/dev/zero': is a character device, not a regular file"),
        Case("config with a 31-digit integer", (*rec, "bigint.toml"), 2,
             "sync.queue_size = an integer of 31 digits, outside the 64-bit range"),
        Case("config nested 5000 deep", (*rec, "deep.toml"), 2, "nested hundreds deep"),
        Case("synthetic source at 1e-300 Hz", (*rec, "rate.toml"), 2,
             "rate_hz: expected greater than or equal to 0.000001; found 1e-300"),
        Case("CSV path that is a directory", (*rec, "csv_dir.toml"), 2,
             "CSV file 'a_dir.csv': is a directory, not a regular file"),
        Case("Velodyne calibration /dev/zero", (*rec, "calib_zero.toml"), 2,
             "Velodyne calibration '/dev/zero': is a character device"),
        Case("Ouster metadata asking for 12 GiB", (*rec, big), 2,
             "columns_per_frame = 16777216 is not the width of an Ouster lidar mode"),
        Case("Ouster metadata with 0 columns per packet", (*rec, zero), 2,
             "columns_per_packet = 0 is not from 1 to 64"),
        Case("Ouster metadata with an unknown lidar mode", (*rec, mode), 2,
             "lidar_mode '65536x10' is not an Ouster lidar mode"),
        Case("Ouster metadata with a 401-digit integer", (*rec, digits), 2,
             "pixels_per_column = an integer of 401 digits is out of range"),
        Case("Ouster metadata that is a FIFO", (*rec, fifo_meta), 2,
             "fifo.toml': is a FIFO, not a regular file"),
        Case("Ouster metadata nested 100000 deep", (*rec, deep), 2,
             "deep.json' is not an Ouster sensor's metadata JSON: JSON nested too deep"),
    ]  # fmt: skip


def build(folder: Path) -> list[Case]:
    """Write the corpus's files into ``folder``; the cases that use them."""
    rec = recording(folder / "s.hfr")
    (folder / "link.hfr").symlink_to(rec.name)
    os.link(rec, folder / "hard.hfr")
    (folder / "link.mcap").symlink_to(rec.name)
    truncated_mcap(folder / "truncated.mcap", rec)
    bag = folder / "bag_folder"
    bag.mkdir()
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {version: 8}\n")
    (folder / "types.toml").write_text(
        PYTHON_CONFIG.format(cls="Ticker", options='options = { count = "many" }')
    )
    (folder / "slip.toml").write_text(PYTHON_CONFIG.format(cls="NameAsSpec", options=""))
    (folder / "replay.toml").write_text(
        '[[sources]]\ntype = "replay"\nname = "rep"\npath = "s.hfr"\n\n'
        '[sync]\npolicy = "approximate"\n'
    )
    sync = ("sync", "s.hfr", "--reference", "lidar", "--tolerance", "20ms")
    refused = "nothing was written: write somewhere else"
    return [
        Case("sync -o the input", (*sync, "-o", "s.hfr"), 2, refused, "s.hfr"),
        Case("sync -o a symlink to the input", (*sync, "-o", "link.hfr"), 2, refused, "s.hfr"),
        Case("sync -o a hard link to the input", (*sync, "-o", "hard.hfr"), 2, refused, "s.hfr"),
        Case("export -o a symlink to the input", ("export", "s.hfr", "-o", "link.mcap"), 2,
             refused, "s.hfr"),
        Case("record -o its replay source", ("record", "replay.toml", "--fast", "-o", "hard.hfr"),
             2, refused, "s.hfr"),
        Case("replay --metrics over the input", ("replay", "s.hfr", "--metrics", "link.hfr"), 2,
             refused, "s.hfr"),
        Case("sync --start inf", (*sync, "--start", "inf"), 2,
             "argument --start: expected seconds from 0 to 1e+09"),
        Case("sync --start 1e300", (*sync, "--start", "1e300"), 2,
             "argument --start: expected seconds from 0 to 1e+09"),
        Case("sync --tolerance 2**63 ns", ("sync", "s.hfr", "--reference", "lidar", "--tolerance",
                                           "9223372036854775808ns"), 2,
             "--tolerance: expected a duration from 0 to 1000000000 s"),
        Case("record --max-size nan", ("record", "--max-size", "nan"), 2,
             "argument --max-size: expected a size"),
        Case("sync --reference nosuch", ("sync", "s.hfr", "--reference", "nosuch",
                                         "--tolerance", "20ms"), 2,
             "--reference: nosuch is not in the recording; it has cam, lidar, imu"),
        Case("python source option of the wrong type", ("record", "types.toml", "--fast",
                                                        "-o", "t.hfr"), 2,
             "option 'count' expects int, found 'many' (str)"),
        Case("python source passing a str to Source", ("record", "slip.toml", "--fast",
                                                       "-o", "t.hfr"), 2,
             "source 'tick': tests.config.config_sources:NameAsSpec(...) failed"),
        Case("info on a truncated MCAP", ("info", "truncated.mcap"), 0,
             "damage: the data section stops at byte 1368"),
        Case("check on a bag folder", ("check", "bag_folder"), 2,
             "check verifies .hfr recordings: for a ROS bag or an MCAP file, "
             "'hyperframes info bag_folder'"),
        Case("check on an MCAP file", ("check", "truncated.mcap"), 2,
             "'hyperframes info truncated.mcap' checks its index"),
        *side_file_cases(folder),
    ]  # fmt: skip
