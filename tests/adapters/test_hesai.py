"""HesaiSource against tier4/nebula's decoder ground truth, and its ledger on bad input.

Each model's bag of real packets (``pandar_msgs/PandarScan``) is decoded by
:class:`adapters.HesaiSource` and the sweep completed during the PCD's message is
compared with the PCD nebula's own decoder made from the same bag (its unit
test's expected output, with that test's ranges): the same point count and,
point by point in nebula's order, x/y/z within 1 cm. The same packets as a
pcap and live over UDP on loopback give the same sweeps.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters import HesaiSource, VelodyneSource
from adapters.errors import DecodeError
from adapters.lidar._hesai_decode import HESAI_DTYPE, HesaiDecoder
from adapters.lidar._hesai_models import (
    MODELS,
    default_angles,
    hesai_signature,
    identify,
    read_angles,
)
from adapters.lidar._hesai_packets import prepare
from adapters.lidar._pcd import read_pcd
from tests.adapters.hesai_testdata import SHARED, bag_payloads, capture, write_pcap

# nebula's hesai_ros_decoder_test ranges (min, max) per capture
RANGES = {
    "40p": (0.3, 200.0),
    "qt128": (0.3, 300.0),
    "xt32": (0.05, 120.0),
    "64": (0.3, 200.0),
    "qt64": (0.1, 60.0),
    "xt16": (0.05, 120.0),
    "xt32m": (0.5, 300.0),
}
NAMES = {
    "40p": "Pandar40P",
    "qt128": "PandarQT128",
    "xt32": "PandarXT32",
    "64": "Pandar64",
    "qt64": "PandarQT64",
    "xt16": "PandarXT16",
    "xt32m": "PandarXT32M",
}


async def sweeps(source: HesaiSource) -> list[Any]:
    return [frame async for frame in source.frames()]


@pytest.mark.parametrize("key", list(RANGES))
def test_nebula_ground_truth(key: str, tmp_path: Path) -> None:
    if key in ("40p", "qt128", "xt32") and not SHARED.is_dir():
        pytest.fail(f"shared data missing: {SHARED}")
    bag, pcd = capture(key, tmp_path)
    lo, hi = RANGES[key]
    source = HesaiSource(bag=bag, min_range=lo, max_range=hi, name="hesai")
    frames = anyio.run(sweeps, source)
    assert source.model is not None
    assert source.model.name == NAMES[key]
    message_time = int(pcd.stem)
    frame = next(f for f in frames if f.t_arrival == message_time and not f.meta["partial"])
    ref = read_pcd(pcd)
    assert len(frame.data) == len(ref)
    for axis in "xyz":
        assert np.abs(frame.data[axis] - ref[axis]).max() < 0.01
    assert frame.data.dtype == HESAI_DTYPE
    assert frame.data["t_offset"].min() == 0
    assert 0 < frame.data["t_offset"].max() < 150_000_000  # one rotation: 100 ms at 10 Hz
    stats = source.ledger().statistics()
    assert stats.received == stats.emitted > 0
    assert not stats.lost


@pytest.mark.parametrize("key", ["40p", "qt128", "xt32m"])
def test_kernel_equals_numpy(key: str, tmp_path: Path) -> None:
    bag, _pcd = capture(key, tmp_path)
    out = {}
    for kernel in (True, False):
        source = HesaiSource(bag=bag, kernel=kernel)
        out[kernel] = anyio.run(sweeps, source)
    assert [len(f.data) for f in out[True]] == [len(f.data) for f in out[False]]
    for a, b in zip(out[True], out[False], strict=True):
        assert a.t_sensor == b.t_sensor
        for name in ("channel", "t_offset", "return", "intensity"):
            assert (a.data[name] == b.data[name]).all()
        for axis in "xyz":
            assert np.abs(a.data[axis] - b.data[axis]).max() < 1e-5


def test_pcap_gives_the_bag_sweeps(tmp_path: Path) -> None:
    bag, _pcd = capture("xt32", tmp_path)
    pcap = tmp_path / "xt32.pcap"
    write_pcap(pcap, bag_payloads(bag))
    from_bag = anyio.run(sweeps, HesaiSource(bag=bag))
    source = HesaiSource(pcap)
    from_pcap = anyio.run(sweeps, source)
    assert [len(f.data) for f in from_pcap] == [len(f.data) for f in from_bag]
    assert all((a.data == b.data).all() for a, b in zip(from_pcap, from_bag, strict=True))
    assert source.ledger().statistics().emitted == 2000


def test_live_udp_gives_the_file_sweeps(tmp_path: Path) -> None:
    bag, _pcd = capture("40p", tmp_path)
    packets = [p for _t, p in bag_payloads(bag)]
    from_bag = anyio.run(sweeps, HesaiSource(bag=bag))

    async def live() -> list[Any]:
        source = HesaiSource(port=0, host="127.0.0.1", name="hesai")
        got: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def collect() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == 4:
                        tg.cancel_scope.cancel()

            tg.start_soon(collect)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
                for i, p in enumerate(packets):
                    tx.sendto(p, ("127.0.0.1", port))
                    if i % 32 == 0:
                        await anyio.sleep(0.002)
            with anyio.fail_after(20):
                while len(got) < 4:  # noqa: ASYNC110 - bounded by fail_after
                    await anyio.sleep(0.01)
        return got

    got = anyio.run(live)
    assert [len(f.data) for f in got] == [len(f.data) for f in from_bag[:4]]
    assert (got[3].data == from_bag[3].data).all()


def test_angle_files_equal_builtin_defaults() -> None:
    for key, name in (("Pandar40P", "Pandar40P"), ("PandarQT128", "PandarQT128")):
        ours = default_angles(MODELS[key])
        shared = read_angles(SHARED / f"{name}.csv")
        assert (ours.elevation == shared.elevation).all()
        assert (ours.azimuth == shared.azimuth).all()


def test_bad_crc_length_and_header_are_counted(tmp_path: Path) -> None:
    bag, _pcd = capture("qt128", tmp_path)
    packets = [p for _t, p in bag_payloads(bag)][:50]
    model = MODELS["PandarQT128"]
    broken = bytearray(packets[3])
    broken[500] ^= 0xFF  # a distance byte: only the body CRC can tell
    bad = [packets[0], packets[1][:900], packets[2][:4] + b"\x00" * 1200, bytes(broken)]
    _batch, rejected = prepare(model, bad)
    assert [(i, r) for i, r, _m in rejected] == [
        (1, "bad_length"),
        (2, "bad_header"),
        (3, "bad_crc"),
    ]
    assert "expected at least 1095 bytes (PandarQT128), got 900" in rejected[0][2]


def test_unsupported_and_foreign_packets_named() -> None:
    jt = b"\xee\xff\x07\x01\x00\x00\x80\x02" + b"\x00" * 1100
    model, said = identify(jt)
    assert model is None
    assert said == "Hesai protocol 7.1, 128 lasers, 2 blocks: a model not decoded here"
    velodyne = b"\xff\xee" + b"\x00" * 1204
    assert identify(velodyne)[0] is MODELS["Pandar40P"]  # same flag; prepare refuses its length


def test_unknown_model_pcap_refused_with_reason(tmp_path: Path) -> None:
    pcap = tmp_path / "jt.pcap"
    write_pcap(
        pcap, [(10**18 + i, b"\xee\xff\x07\x01\x00\x00\x80\x02" + b"\0" * 1100) for i in range(5)]
    )
    source = HesaiSource(pcap)
    with pytest.raises(DecodeError, match=r"protocol 7\.1, 128 lasers, 2 blocks: a model not"):
        anyio.run(sweeps, source)
    assert source.ledger().statistics().lost == {"unsupported_model": 5}


def test_velodyne_source_names_hesai(tmp_path: Path) -> None:
    bag, _pcd = capture("xt32", tmp_path)
    pcap = tmp_path / "xt32.pcap"
    write_pcap(pcap, bag_payloads(bag)[:100])
    with pytest.raises(DecodeError, match="Hesai"):
        anyio.run(lambda: _drain(VelodyneSource(pcap)))


@pytest.mark.parametrize("key", list(RANGES))
def test_every_real_capture_has_the_strict_hesai_signature(key: str, tmp_path: Path) -> None:
    bag, _pcd = capture(key, tmp_path)
    packets = bag_payloads(bag)[:200]
    said = {hesai_signature(p) for _t, p in packets}
    assert len(said) == 1
    (only,) = said
    assert only is not None
    assert only.endswith(NAMES[key])


VELODYNE = SHARED.parent / "vlp-16-test-90deg-1-50-frames.pcap"


@pytest.fixture(scope="module")
def velodyne_packets() -> list[bytes]:
    from adapters.lidar._pcap import PcapReader

    reader = PcapReader(VELODYNE)
    packets = [d.payload for d in reader if d.dst_port == 2368][:40]
    reader.close()
    assert len(packets) == 40
    assert all(len(p) == 1206 for p in packets)
    return packets


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, 39), cut=st.integers(0, 1206), pad=st.integers(0, 80))
def test_a_velodyne_packet_cut_or_padded_is_never_called_hesai(
    velodyne_packets: list[bytes], index: int, cut: int, pad: int
) -> None:
    packet = velodyne_packets[index]
    assert packet[:2] == b"\xff\xee"  # the 40P's block flag: only the strict check tells
    assert hesai_signature(packet[:cut]) is None
    assert hesai_signature(packet + b"\x00" * pad) is None
    assert hesai_signature(packet[:cut] * 2) is None  # 1262 bytes when cut at 631


def test_hesai_packets_cut_or_with_a_wrong_minor_are_not_certain(tmp_path: Path) -> None:
    bag, _pcd = capture("xt32", tmp_path)
    packet = bag_payloads(bag)[0][1]
    assert hesai_signature(packet) == "protocol 6.1, 32 lasers, 8 blocks: PandarXT32"
    assert hesai_signature(packet[:1000]) is None
    assert hesai_signature(packet[:3] + b"\x07" + packet[4:]) is None
    at128 = b"\xee\xff\x04\x03\x00\x00\x80\x02" + b"\x00" * 1110  # 1118 bytes
    assert hesai_signature(at128) == "protocol 4.3, 128 lasers, 2 blocks: PandarAT128"
    assert hesai_signature(at128[:400]) is None
    jt = b"\xee\xff\x07\x01\x00\x00\x80\x02" + b"\x00" * 1110  # 2 blocks of 128 units
    assert (hesai_signature(jt) or "").startswith("Hesai protocol 7.1")


async def _drain(source: object) -> None:
    async for _f in source.frames():  # type: ignore[attr-defined]
        pass


@pytest.fixture(scope="module")
def xt32_packets(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    bag, _pcd = capture("xt32", tmp_path_factory.mktemp("hesai"))
    return [p for _t, p in bag_payloads(bag)][:40]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.lists(
        st.tuples(st.integers(0, 39), st.integers(0, 1100), st.binary(max_size=8), st.booleans()),
        max_size=60,
    )
)
def test_random_and_truncated_packets_never_crash(
    xt32_packets: list[bytes], data: list[Any]
) -> None:
    model = MODELS["PandarXT32"]
    payloads = []
    for i, cut, junk, truncate in data:
        p = bytearray(xt32_packets[i])
        if truncate:
            payloads.append(bytes(p[:cut]))
        else:
            at = cut % len(p)
            p[at : at + len(junk)] = junk
            payloads.append(bytes(p[: len(xt32_packets[i])]))
    decoder = HesaiDecoder(model, default_angles(model), kernel=False)
    batch, rejected = prepare(model, payloads)
    sweeps = decoder.push(batch, [None] * len(batch.raw)) + decoder.flush()
    assert len(batch.raw) + len(rejected) == len(payloads)
    assert sum(s.units for s in sweeps) == len(batch.raw)
    for s in sweeps:
        assert np.isfinite(s.points["x"]).all()
