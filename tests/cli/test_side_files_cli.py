"""Small inputs cannot cost large memory or hang a command (issue 35): a config, a Velodyne
calibration, a timestamps file, an Ouster metadata JSON or a CSV that is a FIFO, a
device (``/dev/zero``), a directory or a file over its stated limit is refused in one line
naming the path and what it is, at once (a FIFO with no writer would block a plain
``open``; ``/dev/zero`` would be read until memory runs out). Ouster metadata whose
dimensions are forged (the real OS-1-32 JSON, one number changed) is refused before any
array is sized by it. Journeys: ``hyperframes record`` as a subprocess, under a memory
limit, with a timeout that a hang would hit."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
LIDAR = DATA / "lidar"
OUSTER_JSON = LIDAR / "ouster_OS-1-32-G_v2.1.1_1024x10.json"
OUSTER_PCAP = LIDAR / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"
VLP16 = LIDAR / "vlp-16-test-90deg-1-50-frames.pcap"
IMU_CSV = DATA / "real" / "csv" / "kimera_euroc_imu0_data.csv"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
MEMORY = 3 << 30  # a refused input allocates nothing: the run stays far below this

pytestmark = pytest.mark.skipif(not OUSTER_JSON.exists(), reason="needs ../shared/data")


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def record(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", "record", str(config), "--fast", "-o",
         str(config.with_name("out.hfr"))],
        cwd=config.parent, env=ENV, capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=limited,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess[str], words: str) -> str:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if words in ln]
    assert len(lines) == 1, text
    return lines[0]


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def folder(tmp_path: Path) -> Path:
    path = tmp_path / "a_folder"
    path.mkdir()
    return path


def zero(_: Path) -> Path:
    return Path("/dev/zero")


KINDS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "FIFO": (fifo, "is a FIFO, not a regular file"),
    "/dev/zero": (zero, "is a character device, not a regular file"),
    "directory": (folder, "is a directory, not a regular file"),
}

SOURCES = {  # name -> (TOML of one source with {side} for the side file, its role in the line)
    "velodyne calibration": (
        f'type = "velodyne"\nname = "v"\nmodel = "VLP-16"\npcap = "{VLP16}"\n'
        'calibration = "{side}"',
        "Velodyne calibration '{side}'",
    ),
    "timestamps file": (
        f'type = "pointcloud_files"\nname = "p"\npaths = "{LIDAR}/*.pcd"\ntimestamps = "{{side}}"',
        "timestamps file '{side}'",
    ),
    "ouster metadata": (
        f'type = "ouster"\nname = "os1"\nmetadata = "{{side}}"\npcap = "{OUSTER_PCAP}"',
        "Ouster metadata '{side}'",
    ),
    "csv": (
        'type = "timeseries_csv"\nname = "imu"\npath = "{side}"\ntime_column = "#timestamp [ns]"'
        '\ntime_unit = "ns"',
        "CSV file '{side}'",
    ),
}


def config_with(tmp_path: Path, source: str) -> Path:
    config = tmp_path / "c.toml"
    config.write_text(f"[[sources]]\n{source}\n")
    return config


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("role", list(SOURCES))
def test_a_side_file_that_is_not_a_regular_file_is_refused_naming_it(
    tmp_path: Path, role: str, kind: str
) -> None:
    make, what = KINDS[kind]
    side = make(tmp_path)
    toml, named = SOURCES[role]
    proc = record(config_with(tmp_path, toml.replace("{side}", str(side))))
    line = one_line(proc, what)
    assert named.format(side=side) in line, line


def test_a_side_file_over_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "calib.yaml"
    with big.open("wb") as f:  # sparse: 2.1 GiB on paper, nothing on disk
        f.truncate(2_254_857_830)
    toml, _ = SOURCES["velodyne calibration"]
    proc = record(config_with(tmp_path, toml.replace("{side}", str(big))))
    line = one_line(proc, "over the 4 MiB limit for a calibration file")
    assert f"Velodyne calibration '{big}': 2.1 GiB, over the 4 MiB limit" in line


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_config_that_is_not_a_regular_file_is_refused_naming_it(
    tmp_path: Path, kind: str
) -> None:
    make, what = KINDS[kind]
    side = make(tmp_path)
    line = one_line(record(side), what)
    assert f"config '{side}'" in line


def test_a_config_over_its_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.truncate(20 << 20)
    line = one_line(record(big), "over the 16 MiB limit for a config file")
    assert f"config '{big}': 20 MiB" in line


FORGED = {  # data_format key -> value; the words of the refusal
    "columns_per_frame": (16_777_216, "columns_per_frame = 16777216 is not the width"),
    "columns_per_packet": (0, "columns_per_packet = 0 is not from 1 to 64"),
    "pixels_per_column": (1 << 40, "pixels_per_column = 1099511627776 is out of range"),
    "column_window": ([0, 1 << 31], "column_window"),
}


@pytest.mark.parametrize("key", list(FORGED))
def test_forged_ouster_dimensions_are_refused_before_anything_is_allocated(
    tmp_path: Path, key: str
) -> None:
    value, words = FORGED[key]
    doc = json.loads(OUSTER_JSON.read_text())
    doc["data_format"][key] = value
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    toml, _ = SOURCES["ouster metadata"]
    proc = record(config_with(tmp_path, toml.replace("{side}", str(forged))))
    line = one_line(proc, f"Ouster metadata '{forged}'")
    assert words in line, line


def test_an_unknown_ouster_lidar_mode_is_named(tmp_path: Path) -> None:
    doc = json.loads(OUSTER_JSON.read_text())
    doc["lidar_mode"] = "65536x10"  # ouster-sdk says only "default_data_format"
    forged = tmp_path / "mode.json"
    forged.write_text(json.dumps(doc))
    toml, _ = SOURCES["ouster metadata"]
    proc = record(config_with(tmp_path, toml.replace("{side}", str(forged))))
    line = one_line(proc, "lidar_mode '65536x10' is not an Ouster lidar mode")
    assert str(forged) in line
    assert "default_data_format" not in proc.stdout + proc.stderr
