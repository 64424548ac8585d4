"""TimeSeriesSource: CSV, numpy, iterables, live UDP; interpolation for Nearest windows."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgpack
import numpy as np
import pytest

from adapters import TimeSeriesSource, interpolate, slerp
from adapters._timeseries import parse_time_ns
from adapters.errors import SourceOpenError
from fusion._frames import Frame
from fusion.errors import ConfigError
from fusion.policies import Nearest


async def collect(source: TimeSeriesSource) -> list[Frame]:
    async with source:
        return [f async for f in source.frames()]


IMU_CSV = """t,ax,ay,az,gz
1700000000.000000001,0.1,0.2,9.81,0.01
1700000000.010000001,0.2,0.3,9.80,0.02
1700000000.020000001,oops,0.3,9.80,0.02
1700000000.030000001,0.4,0.5,9.79,0.03
1700000000.025000000,0.9,0.9,9.00,0.09
1700000000.040000001,0.5,0.6,9.78,0.04
"""


async def test_csv_rows_become_frames_with_exact_ns_stamps(tmp_path: Path) -> None:
    (tmp_path / "imu.csv").write_text(IMU_CSV)
    source = TimeSeriesSource.from_csv(tmp_path / "imu.csv", time_column="t", time_unit="s")
    frames = await collect(source)
    assert source.name == "imu"
    assert [f.t_sensor for f in frames] == [
        1700000000000000001,
        1700000000010000001,
        1700000000030000001,
        1700000000040000001,
    ]
    assert frames[0].data.dtype.names == ("t", "ax", "ay", "az", "gz")
    assert frames[0].data.dtype["ax"] == np.float64
    assert frames[2].data["ax"][0] == 0.4
    assert frames[2].data.shape == (1,)
    assert source.errors == {"bad_row": 1, "time_backwards": 1}
    assert source.statistics()["frames"] == {"imu": 4}


async def test_csv_in_ns_with_chosen_columns_dtypes_and_blocks(tmp_path: Path) -> None:
    rows = ["stamp,id,dlc,speed"] + [f"{i * 1000},0x{0x100 + i:x},8,{i / 2}" for i in range(10)]
    (tmp_path / "can.csv").write_text("\n".join(rows) + "\n")
    source = TimeSeriesSource.from_csv(
        tmp_path / "can.csv", time_column="stamp", time_unit="ns",
        columns=["id", "speed"], dtypes={"id": "u4"}, block=4, name="can", kind="can",
    )  # fmt: skip
    frames = await collect(source)
    assert [len(f.data) for f in frames] == [4, 4, 2]
    assert [f.t_sensor for f in frames] == [0, 4000, 8000]
    assert frames[1].data["id"].tolist() == [0x104, 0x105, 0x106, 0x107]
    assert frames[1].data.dtype.names == ("t", "id", "speed")
    assert source.spec.kind == "can"


def test_csv_errors_name_the_file_and_column(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("time,x\n1,2\n")
    with pytest.raises(ConfigError, match=r"a.csv: no time column 't'; the header has time, x"):
        TimeSeriesSource.from_csv(tmp_path / "a.csv", time_column="t")
    with pytest.raises(ConfigError, match="time_unit must be one of ns, us, ms, s, got 'min'"):
        TimeSeriesSource.from_csv(tmp_path / "a.csv", time_column="time", time_unit="min")
    with pytest.raises(SourceOpenError, match="does not exist"):
        TimeSeriesSource.from_csv(tmp_path / "missing.csv")


@pytest.mark.parametrize(
    ("text", "unit", "ns"),
    [
        ("1700000000.123456789", "s", 1700000000123456789),
        ("1.5", "ms", 1_500_000),
        ("12", "us", 12_000),
        ("2011-09-26 13:02:25.964389445", "s", 1317042145964389445),
        ("2011-09-26T13:02:25", "s", 1317042145000000000),
    ],
)
def test_times_parse_exactly(text: str, unit: str, ns: int) -> None:
    assert parse_time_ns(text, unit) == ns


async def test_numpy_arrays_and_files(tmp_path: Path) -> None:
    gnss = np.zeros(3, [("time", "f8"), ("lat", "f8"), ("lon", "f8")])
    gnss["time"] = [0.0, 0.1, 0.2]
    gnss["lat"] = [37.1305401234567, 37.13054, 37.13055]
    np.save(tmp_path / "gnss.npy", gnss)
    frames = await collect(
        TimeSeriesSource.from_numpy(tmp_path / "gnss.npy", time_field="time", time_unit="s")
    )
    assert [f.t for f in frames] == [0, 100_000_000, 200_000_000]
    assert frames[0].data["lat"][0] == 37.1305401234567  # float64 kept
    np.savez(tmp_path / "cols.npz", t=np.arange(5), v=np.arange(5) * 2.0)
    source = TimeSeriesSource.from_numpy(tmp_path / "cols.npz", block=5)
    (frame,) = await collect(source)
    assert frame.data["v"].tolist() == [0, 2, 4, 6, 8]
    assert source.name == "cols"


async def test_sync_and_async_iterables_of_records() -> None:
    records = [{"t": i, "q": [1.0, 0.0, 0.0, 0.0], "ok": True} for i in range(3)]
    records.insert(1, {"t": 1})  # missing fields
    source = TimeSeriesSource.from_iterable(records, name="att")
    frames = await collect(source)
    assert [f.t for f in frames] == [0, 1, 2]
    assert frames[0].data.dtype["q"].shape == (4,)
    assert source.errors == {"schema_mismatch": 1}
    assert "lack field(s) q, ok of the schema" in str(source.last_error)

    async def stream() -> AsyncIterator[dict[str, float]]:
        for i in range(4):
            yield {"t": i * 0.5, "x": float(i)}

    live = TimeSeriesSource.from_iterable(stream(), time_unit="s", fields=["x"])
    assert [f.t for f in await collect(live)] == [0, 500_000_000, 1_000_000_000, 1_500_000_000]


@pytest.mark.parametrize("fmt", ["jsonl", "msgpack"])
async def test_live_udp_datagrams(fmt: str) -> None:
    source = TimeSeriesSource.from_udp(0, format=fmt, name="imu", kind="imu")
    got: list[Frame] = []
    with anyio.fail_after(10):
        async with source, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == 5:
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            port = await source.wait_listening()
            samples = [{"t": 1000 * i, "gz": i / 10} for i in range(5)]
            if fmt == "jsonl":
                datagrams = [
                    json.dumps(samples[0]).encode(),
                    b"{broken json",
                    b"\n".join(json.dumps(s).encode() for s in samples[1:4]),
                    json.dumps(samples[4]).encode(),
                ]
            else:
                datagrams = [
                    msgpack.packb(samples[0]),
                    b"\xc1",
                    msgpack.packb(samples[1:4]),
                    msgpack.packb(samples[4]),
                ]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for datagram in datagrams:
                    sock.sendto(datagram, ("127.0.0.1", port))
    assert [f.t for f in got] == [0, 1000, 2000, 3000, 4000]
    assert [float(f.data["gz"][0]) for f in got] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert all(f.t_arrival is not None for f in got)
    assert source.errors == {"bad_datagram": 1}
    assert source.spec.overflow == "drop_oldest"


def test_interpolate_is_linear_for_vectors_and_slerp_for_quaternions() -> None:
    half = np.sqrt(0.5)
    rows = np.array(
        [(0, 0.0, 1.0, 0.0, 0.0, 0.0, 7), (100, 10.0, half, 0.0, 0.0, half, 8)],
        [("t", "<i8"), ("ax", "f8"), ("qw", "f8"), ("qx", "f8"), ("qy", "f8"), ("qz", "f8"),
         ("mode", "i4")],
    )  # fmt: skip
    out = interpolate(rows, 50)
    assert out["t"][0] == 50
    assert out["ax"][0] == pytest.approx(5.0)
    yaw = 2 * np.degrees(np.arctan2(out["qz"][0], out["qw"][0]))
    assert yaw == pytest.approx(45.0)  # halfway between 0° and 90° about z, unit length
    assert np.hypot(out["qw"][0], out["qz"][0]) == pytest.approx(1.0)
    assert interpolate(rows, 40)["mode"][0] == 7  # integers take the nearer sample
    assert interpolate(rows, 60)["mode"][0] == 8
    np.testing.assert_allclose(slerp(np.array([1.0, 0, 0, 0]), -np.array([1.0, 0, 0, 0]), 0.3),
                               [1, 0, 0, 0])  # fmt: skip
    with pytest.raises(ValueError, match=r"t=101: the window spans \[0, 100\]"):
        interpolate(rows, 101)
    with pytest.raises(ValueError, match="the window is empty"):
        interpolate([], 0)


async def test_imu_window_from_nearest_resamples_at_the_camera_time() -> None:
    imu = np.zeros(21, [("t", "<i8"), ("gz", "f8")])
    imu["t"] = np.arange(21) * 5_000_000  # 200 Hz
    imu["gz"] = np.arange(21) * 0.5
    policy = Nearest("cam", ["cam", "imu"], tolerance=0, windows={"imu": (10_000_000, 10_000_000)})
    groups = []
    for frame in await collect(TimeSeriesSource(imu, name="imu")):
        groups += policy.push(frame)
    groups += policy.push(Frame("cam", 0, 52_500_000))
    groups += policy.drain()
    (group,) = groups
    window = group.frames["imu"]
    assert isinstance(window, list)
    assert len(window) == 4
    sample = interpolate(window, group.t)
    assert sample["gz"][0] == pytest.approx(5.25)
