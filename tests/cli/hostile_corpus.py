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

from fusion.frames import Frame, SensorSpec

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
    from recordings.export import export_recording

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
        Case("info on a truncated MCAP", ("info", "truncated.mcap"), 2,
             "cannot read it as MCAP or a ROS bag: File end magic is invalid"),
        Case("check on a bag folder", ("check", "bag_folder"), 2,
             "check verifies .hfr recordings: for a ROS bag or an MCAP file, "
             "'hyperframes info bag_folder'"),
        Case("check on an MCAP file", ("check", "truncated.mcap"), 2,
             "'hyperframes info truncated.mcap' checks its index"),
    ]  # fmt: skip
