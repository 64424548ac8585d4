"""Isolation at the source boundary: a bad datagram, packet, row or a failing source
costs that item (or that sensor), counted with its reason, and a healthy sensor next
to it in the same pipeline keeps delivering every frame.

Real components: UDP datagrams on loopback, pcap files, CSV files, a Pipeline
recording to a real ``.hfr`` file.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgpack
import numpy as np
import pytest
from lidar_testdata import VLP16, data_packets, write_pcap

from adapters import SyntheticImu
from adapters._timeseries import REBASE_AFTER, TimeSeriesSource
from adapters.lidar._velodyne import VelodyneSource
from adapters.lidar._velodyne_assembler import SweepAssembler
from adapters.lidar._velodyne_models import get_model
from fusion import Nearest, Pipeline, VirtualClock
from fusion._frames import Frame, SensorSpec
from fusion._source import Source
from recordings import Recorder, open_recording

MS = 1_000_000


def policy(*others: str) -> Nearest:
    return Nearest("imu", ["imu", *others], tolerance=5 * MS, optional=others)


def recorded(path: Path) -> dict[str, list[int]]:
    with open_recording(path) as log:
        out: dict[str, list[int]] = {}
        for f in log.frames():
            out.setdefault(f.sensor, []).append(f.t)
        return out


async def test_hostile_udp_datagrams_cost_themselves_next_to_a_healthy_sensor(
    tmp_path: Path,
) -> None:
    healthy = SyntheticImu("imu", rate_hz=100, duration_s=1.0)
    udp = TimeSeriesSource.from_udp(0, name="udp", kind="imu")
    path = tmp_path / "udp.hfr"
    pipeline = Pipeline([healthy, udp], policy("udp"), recorder=Recorder(path))
    base = 1_700_000_000 * 10**9
    good = [json.dumps({"t": base + i * MS, "v": i}).encode() for i in range(20)]
    hostile = [
        b'{"t": "abc", "v": 1}',  # a stamp that is not a number
        b'{"t": 99999999999999999999999, "v": 1}',  # beyond int64
        b"[" * 5000 + b"]" * 5000,  # nested 5,000 deep
        json.dumps({"t": 2**62, "v": 1}).encode(),  # far ahead: not the new baseline
        b'{"t": 1e400, "v": 1}',  # infinite
        b'{"t": ' + b"9" * 5000 + b', "v": 1}',  # a 5,000-digit integer
        b"\xff\xfe not text",
    ]
    datagrams = [
        json.dumps({"t": base - MS, "other": 5}).encode(),  # odd keys first: costs itself
        *good[:10],
        *hostile,
        *good[10:],
    ]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                async with pipeline.open() as groups:
                    async for _ in groups:
                        pass

            tg.start_soon(run)
            port = await udp.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                for datagram in datagrams:
                    sock.sendto(datagram, ("127.0.0.1", port))
                    await anyio.sleep(0.002)
            # The hub's counters have no event to wait on: poll them (bounded by fail_after).
            while pipeline.statistics().hub.sensors["udp"].frames_in < 20:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            while pipeline.statistics().hub.sensors["imu"].frames_in < 100:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            pipeline.stop()
    got = recorded(path)
    assert len(got["imu"]) == 100  # every healthy frame
    assert got["udp"] == [base + i * MS for i in range(20)]
    errors = udp.errors
    assert errors["bad_record"] == 3  # "abc", 1e400, beyond int64
    assert errors["bad_datagram"] == 3  # nested, 5,000 digits, not text
    assert errors["time_jump"] == 1  # 2**62: held, dropped when good stamps went on
    assert errors["schema_mismatch"] == 1  # the majority of the first samples is the schema
    assert "schema_changed" not in errors
    ledger = udp.ledgers()["udp"]
    assert ledger.unit == "datagram"
    assert ledger.received == len(datagrams)
    assert ledger.emitted == 20
    assert ledger.received == ledger.emitted + ledger.lost_total
    assert pipeline.statistics().hub.sources_failed == {}


async def test_a_schema_fixed_by_fields_drops_other_records_in_words() -> None:
    records = [{"t": i, "v": float(i)} for i in range(3)] + [{"t": 3, "w": 1.0}]
    records += [{"t": 4 + i, "v": 1.0, "extra": 2} for i in range(2)]
    source = TimeSeriesSource.from_iterable(records, name="s", fields=["v"])
    async with source:
        frames = [f async for f in source.frames()]
    assert [f.t for f in frames] == [0, 1, 2, 4, 5]
    assert source.errors["schema_mismatch"] == 1
    assert source.errors["extra_fields"] == 2
    assert "fields extra are not in the schema" in str(source.last_error)


async def test_an_odd_first_record_costs_itself_not_the_schema() -> None:
    records = [{"t": 0, "a": 1.0}] + [{"t": 1 + i, "b": float(i)} for i in range(REBASE_AFTER)]
    source = TimeSeriesSource.from_iterable(records, name="s")
    async with source:
        frames = [f async for f in source.frames()]
    assert [f.t for f in frames] == list(range(1, REBASE_AFTER + 1))
    assert frames[0].data.dtype.names == ("t", "b")
    assert source.errors == {"schema_mismatch": 1}


async def test_a_run_of_records_with_new_fields_becomes_the_schema() -> None:
    first = [{"t": i, "a": 1.0} for i in range(REBASE_AFTER)]
    records = first + [{"t": 10 + i, "b": float(i)} for i in range(REBASE_AFTER)]
    source = TimeSeriesSource.from_iterable(records, name="s")
    async with source:
        frames = [f async for f in source.frames()]
    assert [f.t for f in frames] == [r["t"] for r in records]
    assert frames[0].data.dtype.names == ("t", "a")
    assert frames[-1].data.dtype.names == ("t", "b")
    assert source.errors == {"schema_changed": 1}


async def test_a_sensor_that_restarts_its_clock_is_followed_after_agreement() -> None:
    stamps = [i * MS for i in range(5)] + [3600 * 10**9 + i * MS for i in range(REBASE_AFTER + 2)]
    records = [{"t": t, "v": 1.0} for t in stamps]
    source = TimeSeriesSource.from_iterable(records, name="s", max_time_jump=60.0)
    async with source:
        frames = [f async for f in source.frames()]
    assert [f.t for f in frames] == stamps  # nothing lost: the jump was confirmed
    assert source.errors == {"time_rebased": 1}


async def test_a_csv_bad_row_costs_that_row(tmp_path: Path) -> None:
    lines = ["t,v,n"] + [f"{i}.0,{i},{i}" for i in range(5000)]
    lines[100] = "1e400,1,1"  # time beyond int64
    lines[200] = "2.0,abc,1"  # a value that is not a number
    lines[300] = f"3.0,1,{10**30}"  # an integer beyond int64
    lines[400] = "4.0"  # missing cells: the row does not fit the schema
    lines[500] = "1e999999999,1,1"  # an exponent that would build a huge integer
    path = tmp_path / "s.csv"
    path.write_text("\n".join(lines) + "\n")
    source = TimeSeriesSource.from_csv(path, dtypes={"n": "i8"}, name="csv")
    async with source:
        frames = [f async for f in source.frames()]
    assert len(frames) == 5000 - 5
    assert source.errors == {"bad_row": 4, "schema_mismatch": 1}
    assert "line 301: Python int too large" in str(source.last_error)  # found per chunk
    ledger = source.ledgers()["csv"]
    assert (ledger.unit, ledger.received, ledger.emitted) == ("row", 5000, 4995)
    assert ledger.lost == {"bad_row": 4, "schema_mismatch": 1}


async def test_bad_csv_rows_next_to_a_healthy_sensor(tmp_path: Path) -> None:
    lines = ["t,v"] + [f"{i / 100:.2f},{i}" for i in range(100)]
    lines[10] = "1e400,1"
    lines[20] = "0.19,not a number"
    path = tmp_path / "gps.csv"
    path.write_text("\n".join(lines) + "\n")
    clock = VirtualClock()
    csv_source = TimeSeriesSource.from_csv(path, name="gps", speed=1.0)
    out = tmp_path / "c.hfr"
    pipeline = Pipeline(
        [SyntheticImu("imu", rate_hz=100, duration_s=1.0), csv_source],
        policy("gps"),
        recorder=Recorder(out),
        clock=clock,
    )
    async with clock.autojump():
        async for _ in pipeline:
            pass
    got = recorded(out)
    assert len(got["imu"]) == 100
    assert len(got["gps"]) == 98
    assert csv_source.errors == {"bad_row": 2}


class Failing(Source):
    """Yields ``good`` frames, then raises like a driver that lost its device."""

    def __init__(self, good: int) -> None:
        super().__init__(SensorSpec("flaky", optional=True))
        self.good = good

    async def frames(self) -> AsyncIterator[Frame]:
        for i in range(self.good):
            await anyio.sleep(0.01)
            yield self.make_frame(i * 10 * MS, np.zeros(3, np.float32))
        raise OSError(5, "Input/output error", "/dev/ttyUSB0")


async def test_a_failing_source_ends_only_its_sensor(tmp_path: Path) -> None:
    clock = VirtualClock()
    path = tmp_path / "f.hfr"
    pipeline = Pipeline(
        [SyntheticImu("imu", rate_hz=100, duration_s=1.0), Failing(5)],
        policy("flaky"),
        recorder=Recorder(path),
        clock=clock,
    )
    async with clock.autojump():
        groups = [g async for g in pipeline]
    got = recorded(path)
    assert len(got["imu"]) == 100
    assert len(got["flaky"]) == 5
    assert len(groups) == 100
    failed = pipeline.statistics().hub.sources_failed
    assert list(failed) == ["flaky"]
    assert "OSError: [Errno 5] Input/output error: '/dev/ttyUSB0'" in failed["flaky"]


async def test_bad_return_mode_packets_next_to_a_healthy_sensor(tmp_path: Path) -> None:
    packets = data_packets(VLP16)[:300]
    mixed = [(t, 2368, p[:1204] + b"\x42" + p[1205:] if i % 7 == 0 else p) for i, (t, p) in
             enumerate(packets)]  # fmt: skip
    write_pcap(tmp_path / "dual.pcap", mixed)
    clock = VirtualClock()
    lidar = VelodyneSource(pcap=tmp_path / "dual.pcap", model="VLP-16")
    path = tmp_path / "v.hfr"
    pipeline = Pipeline(
        [SyntheticImu("imu", rate_hz=100, duration_s=1.0), lidar],
        policy("lidar"),
        recorder=Recorder(path),
        clock=clock,
    )
    async with clock.autojump():
        async for _ in pipeline:
            pass
    got = recorded(path)
    assert len(got["imu"]) == 100
    assert len(got["lidar"]) >= 3
    assert lidar.errors["bad_return_mode"] == 43
    assert pipeline.statistics().hub.sources_failed == {}


def test_a_sweep_that_never_closes_is_bounded() -> None:
    packets = [p for _, p in data_packets(VLP16)[:2000]]
    stuck = bytearray(packets[0])
    for b in range(12):  # every block at the same azimuth: it never crosses the cut angle
        stuck[b * 100 + 2 : b * 100 + 4] = (9000).to_bytes(2, "little")
    reasons: list[str] = []
    assembler = SweepAssembler(
        get_model("VLP-16"),
        on_reject=lambda reason, message: reasons.append(reason),
    )
    done: list[Any] = []
    for i in range(2000):  # the same azimuth forever, time advancing
        stuck[1200:1204] = (1000 + i * 1327).to_bytes(4, "little")
        done += assembler.push(bytes(stuck))
        current = assembler._current
        assert current is None or current.rows < assembler.max_sweep_packets
    assert assembler.max_sweep_packets == 302  # two rotations at 5 Hz, VLP-16 packet rate
    assert len(done) == 2000 // 302
    assert all(s.partial for s in done)
    assert reasons == ["sweep_too_long"] * len(done)


def test_msgpack_datagram_nested_deep_is_a_bad_datagram() -> None:
    from adapters._timeseries_records import decode_datagram

    with pytest.raises(ValueError, match="not msgpack"):
        decode_datagram(b"\x91" * 100_000 + b"\xc0", "msgpack")
    assert msgpack.unpackb(msgpack.packb({"t": 1})) == {"t": 1}
