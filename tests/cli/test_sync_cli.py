"""``hyperframes sync``: Parquet and .hfr output checked against the streaming policy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from fusion import Frame, FrameGroup, Nearest
from hyperframes.cli import main
from hyperframes.cli._units import parse_duration
from recordings import Recorder, open_recording

MS = 1_000_000


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(2)
    path = tmp_path_factory.mktemp("sync") / "s.hfr"
    events = []
    for name, hz in {"cam": 30, "lidar": 10, "imu": 200}.items():
        t = np.arange(3 * hz) * (1_000_000_000 // hz) + rng.integers(0, 3 * MS, 3 * hz)
        events += [(int(x), name, i) for i, x in enumerate(t)]
    with Recorder(path, chunk_bytes=32 << 10) as rec:
        for t, name, i in sorted(events):
            rec.write(Frame(name, i, t, np.full((8, 8), i, np.float32)))
    return path


def streamed(policy: Nearest, path: Path) -> list[FrameGroup]:
    out: list[FrameGroup] = []
    with open_recording(path) as log:
        for f in log.frames():
            out += policy.push(f)
    return out + policy.drain()


def test_sync_writes_a_parquet_row_per_group(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "groups.parquet"
    code = main(
        ["sync", str(session), "--policy", "nearest", "--reference", "lidar", "--sensors",
         "lidar", "cam", "--tolerance", "20ms", "-o", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0
    expected = streamed(Nearest("lidar", ["lidar", "cam"], 20 * MS), session)
    rows = pq.read_table(out).to_pylist()
    assert [(r["t"], r["lidar_seq"], r["cam_seq"]) for r in rows] == [
        (g.t, g.frames["lidar"].seq, g.frames["cam"].seq)  # type: ignore[union-attr]
        for g in expected
    ]


def test_sync_with_windows_and_optional_writes_a_recording(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "grouped.hfr"
    code = main(
        ["sync", str(session), "--reference", "lidar", "--sensors", "lidar", "cam", "imu",
         "--tolerance", "5ms", "--tolerance", "cam=1ms", "--window", "imu=50ms:49ms",
         "--optional", "cam", "-o", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0

    def make() -> Nearest:
        return Nearest(
            "lidar", ["lidar", "cam", "imu"], {"cam": 1 * MS},
            optional=["cam"], windows={"imu": (50 * MS, 49 * MS)},
        )  # fmt: skip

    expected = [g.keys for g in streamed(make(), session)]
    assert [g.keys for g in streamed(make(), out)] == expected
    assert any(g for g in streamed(make(), session) if g.missing == {"cam"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "approximate"], "ApproximateTime has no offline form"),
        (["--reference", "lidar", "--sensors", "lidar", "cam"], "--tolerance: no value for cam"),
        (["--reference", "lidar", "--tolerance", "20"], "expected a duration with a unit"),
        (
            ["--reference", "lidar", "--sensors", "radar"],
            "--sensors: radar is not in the recording; it has ",
        ),
        (["--reference", "lidar", "--tolerance", "1ms", "-o", "x.csv"], "write a .parquet or"),
    ],
)
def test_sync_refuses_bad_options_in_one_line(
    session: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sync", str(session), *args]) == 2
    err = capsys.readouterr().out.strip()
    assert message in err
    assert len(err.splitlines()) == 1


def test_durations_need_a_unit() -> None:
    assert parse_duration("20ms") == 20 * MS
    assert parse_duration("1.5s") == 1_500 * MS
    assert parse_duration("500us") == 500_000
    assert parse_duration("2min") == 120_000 * MS


def test_sync_runs_as_a_process(session: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hyperframes", "sync", str(session), "--policy", "exact",
         "--sensors", "cam,lidar", "--optional", "lidar", "-q"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Jittered stamps never coincide: a group per camera frame, lidar-only times dropped.
    assert "90 groups, 30 dropped as incomplete; 120 stamps" in done.stdout
    assert "out of order" not in done.stdout  # -q: the final line, not the table
