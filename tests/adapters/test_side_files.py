"""The one helper every small input file goes through (adapters/_side_files.py): what is
not a regular file is named and never read, a file over its limit is refused from its
size, and a file that is read returns its bytes exactly."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters._side_files import kind_of, open_regular, read_small, read_small_text, size_text
from adapters.errors import DecodeError, SourceOpenError
from fusion.errors import ConfigError
from hyperframes.config._schema import load_config
from hyperframes.config._toml import MAX_DEPTH, parse_toml


def test_a_regular_file_is_read_exactly(tmp_path: Path) -> None:
    path = tmp_path / "calib.yaml"
    data = os.urandom(4096)
    path.write_bytes(data)
    assert read_small(path, "calibration", 4096, error=DecodeError) == data
    with pytest.raises(DecodeError, match=r"calibration '.*calib\.yaml': 4096 bytes, over the "):
        read_small(path, "calibration", 4095, error=DecodeError)


def test_each_kind_of_special_file_is_named(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    try:
        cases = {fifo: "a FIFO", tmp_path: "a directory", Path("/dev/zero"): "a character device",
                 Path("/dev/null"): "a character device", sock_path: "a socket"}  # fmt: skip
        for path, kind in cases.items():
            assert kind_of(path.stat().st_mode) == kind
            with pytest.raises(SourceOpenError, match=f"^timestamps '{path}': is {kind}, not a "):
                read_small(path, "timestamps", 1 << 20, error=SourceOpenError)
    finally:
        sock.close()


def test_a_fifo_swapped_in_after_the_stat_is_caught_without_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is a regular file when stat'ed, a FIFO (no writer) when opened: the
    O_NONBLOCK open returns at once and fstat refuses it."""
    regular = tmp_path / "regular"
    regular.write_bytes(b"x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    real_stat = os.stat

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        return real_stat(regular if path == fifo else path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(ConfigError, match="is a FIFO, not a regular file"):
        open_regular(fifo, "config", error=ConfigError)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SourceOpenError, match=r"^metadata '.*nope\.json': does not exist$"):
        read_small(tmp_path / "nope.json", "metadata", 10, error=SourceOpenError)


def test_text_is_decoded_and_a_strict_decoding_error_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"1.5\n\xff2.5\n")
    assert read_small_text(path, "timestamps", 100, error=SourceOpenError) == "1.5\n\ufffd2.5\n"
    with pytest.raises(SourceOpenError, match=r"not ascii text \(byte 4"):
        read_small_text(path, "t", 100, error=SourceOpenError, encoding="ascii", errors="strict")


def test_sizes_read_for_a_person() -> None:
    assert size_text(812) == "812 bytes"
    assert size_text(64 << 20) == "64 MiB"
    assert size_text(2_254_857_830) == "2.1 GiB"


# -- the TOML a user wrote ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("capacity = 1" + "0" * 30, "capacity = an integer of 31 digits, outside the 64-bit"),
        ("[a.b]\nc = [1, -9223372036854775809]", "a.b.c[1] = an integer of 19 digits"),
        ("x = " + "[" * 5000 + "]" * 5000, "nested hundreds deep"),
        ("x = " + "{a = " * 3000 + "1" + "}" * 3000, "nested hundreds deep"),
        ("x = [1, 2", "not valid TOML"),
    ],
    ids=["huge int", "int64 min - 1 in an array", "deep arrays", "deep tables", "unclosed"],
)
def test_a_hostile_toml_is_one_config_error_naming_the_file(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=r"^c\.toml: ") as caught:
        parse_toml(text, "c.toml")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value).split("(", 1)[0]


def test_int64_extremes_and_moderate_nesting_are_kept() -> None:
    raw = parse_toml(
        "a = 9223372036854775807\nb = -9223372036854775808\nc = " + "[" * 20 + "]" * 20,
        "c.toml",
    )
    assert raw["a"] == 2**63 - 1
    assert raw["b"] == -(2**63)
    assert MAX_DEPTH >= 20


def test_load_config_refuses_a_fifo_and_says_what_is_missing(tmp_path: Path) -> None:
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=f"config '{fifo}': is a FIFO, not a regular file"):
        load_config(fifo)
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "none.toml")


def test_every_reader_of_a_side_file_names_a_fifo(tmp_path: Path) -> None:
    """Each other place a small file is read (journeys: tests/cli/test_side_files_cli.py)."""
    from adapters._timeseries import TimeSeriesSource
    from adapters.can._decoder import load_database
    from adapters.datasets._kitti_raw import read_calibration, read_png, read_timestamps
    from adapters.datasets._oxts import OxtsError, read_packet
    from adapters.lidar._hesai_models import read_angles
    from adapters.lidar._velodyne import VelodyneSource
    from adapters.nmea._source import NmeaSource
    from hyperframes.fleet._config import load_fleet_config

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    kind = "is a FIFO, not a regular file"
    calls: dict[str, Callable[[], object]] = {
        "timestamps file": lambda: read_timestamps(fifo),
        "KITTI calibration": lambda: read_calibration(fifo),
        "PNG file": lambda: read_png(fifo),
        "OXTS packet": lambda: read_packet(fifo),
        "pcap file": lambda: VelodyneSource(pcap=fifo, model="VLP-16"),
        "NMEA file": lambda: NmeaSource(path=fifo),
        "numpy file": lambda: TimeSeriesSource.from_numpy(fifo),
        "run": lambda: load_fleet_config(fifo),
        "Hesai angle file": lambda: read_angles(fifo),
        "CAN database": lambda: load_database(fifo),
    }
    for what, call in calls.items():
        with pytest.raises((SourceOpenError, DecodeError, ConfigError)) as caught:
            call()
        assert f"{what} '{fifo}': {kind}" in str(caught.value), what
    with pytest.raises(OxtsError) as bad:
        read_packet(fifo)
    assert bad.value.reason == "bad_length"
