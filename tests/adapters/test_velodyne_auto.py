"""The model from the packets: product byte and cadence; declared models checked; other
sensors' captures refused with what they are; every packet in the ledger."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lidar_testdata import LIDAR_DATA, MONTEREY, VLP16, data_packets, write_pcap

from adapters import VelodyneSource
from adapters.errors import DecodeError
from adapters.lidar._velodyne_models import ModelDetector
from fusion._frames import Frame

RUSTLIDAR = LIDAR_DATA / "rustlidar_hdl32_example.pcap"  # HDL-32E, 876 data packets
OUSTER = LIDAR_DATA / "ouster_OS-1-32-G_v2.1.1_1024x10.pcap"


async def collect(source: VelodyneSource) -> list[Frame]:
    async with source:
        return [frame async for frame in source.frames()]


@pytest.mark.parametrize(
    ("path", "model", "packets", "said"),
    [
        (MONTEREY, "HDL-32E", 2702, "product byte 0x21 (HDL-32E), one packet every 553 µs"),
        (RUSTLIDAR, "HDL-32E", 876, "product byte 0x21 (HDL-32E), one packet every 553 µs"),
        # early VLP-16 firmware: 0x21 in the product byte, a VLP-16's 1,327 µs cadence
        (
            VLP16,
            "VLP-16",
            1902,
            "product byte 0x21 (HDL-32E), one packet every 1,327 µs "
            "(a VLP-16's cadence: early VLP-16 firmware reports 0x21)",
        ),
    ],
    ids=["monterey", "rustlidar", "vlp16-early-firmware"],
)
async def test_auto_detects_the_model_and_counts_every_packet(
    path: Path, model: str, packets: int, said: str
) -> None:
    source = VelodyneSource(pcap=path)
    frames = await collect(source)
    assert source.model is not None
    assert source.model.name == model
    assert source.spec.meta["model"] == model
    assert source.spec.meta["model_evidence"] == said
    ledger = source.ledgers()["lidar"]
    assert (ledger.unit, ledger.received, ledger.emitted, ledger.lost_total) == (
        "packet", packets, packets, 0)  # fmt: skip
    assert ledger.frames == len(frames)
    declared = await collect(VelodyneSource(pcap=path, model=model))
    assert [len(f.data) for f in declared] == [len(f.data) for f in frames]


async def test_a_declared_model_the_packets_contradict_fails_naming_what_they_say() -> None:
    source = VelodyneSource(pcap=RUSTLIDAR, model="VLP-16")
    with pytest.raises(DecodeError) as caught:
        await collect(source)
    assert str(caught.value) == (
        f"lidar: {RUSTLIDAR}: model 'VLP-16' was given, but the packets say HDL-32E: product "
        "byte 0x21 (HDL-32E), one packet every 553 µs; use model='auto' or model='HDL-32E'"
    )
    ledger = source.ledgers()["lidar"]
    assert ledger.received == ledger.lost["unsupported_device"] > 0
    assert ledger.emitted == 0
    with pytest.raises(DecodeError, match="the packets say VLP-16"):
        await collect(VelodyneSource(pcap=VLP16, model="HDL-32E"))


async def test_an_ouster_capture_is_counted_and_named_not_silently_empty() -> None:
    source = VelodyneSource(pcap=OUSTER)
    with pytest.raises(DecodeError) as caught:
        await collect(source)
    assert str(caught.value) == (
        f"lidar: {OUSTER}: 64 datagrams of 6,464 bytes on port 7502: this looks like an "
        "Ouster sensor, not a Velodyne"
    )
    ledger = source.ledgers()["lidar"]
    assert (ledger.received, ledger.emitted, dict(ledger.lost)) == (
        64, 0, {"unsupported_device": 64})  # fmt: skip


async def test_packets_that_all_fail_end_with_an_error_saying_why(tmp_path: Path) -> None:
    packets = data_packets(VLP16)[:50]
    write_pcap(tmp_path / "cut.pcap", [(t, 2368, p[:1000]) for t, p in packets])
    source = VelodyneSource(pcap=tmp_path / "cut.pcap")
    with pytest.raises(DecodeError, match=r"50 packets on port 2368 gave no sweep \(50 bad_len"):
        await collect(source)
    only_position = [(t, 8308, p[:512]) for t, p in packets]
    write_pcap(tmp_path / "pos.pcap", only_position)
    with pytest.raises(DecodeError, match=r"only 50 position packets \(port 8308\)"):
        await collect(VelodyneSource(pcap=tmp_path / "pos.pcap"))


def test_the_detector_needs_the_cadence_to_name_an_early_vlp16() -> None:
    packets = [p for _t, p in data_packets(VLP16)[:16]]
    one = ModelDetector()
    one.add(packets[0])
    assert one.evidence().model is not None
    assert one.evidence().model.name == "HDL-32E"
    many = ModelDetector()
    for p in packets:
        many.add(p)
    assert many.ready
    assert many.evidence().model is not None
    assert many.evidence().model.name == "VLP-16"
    unknown = ModelDetector()
    for p in packets:
        unknown.add(p[:1205] + b"\x23")
    assert unknown.evidence().model is None
    assert unknown.evidence().problem == "VLP-32A/B is not supported"


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(["good", "short", "flag", "mode", "junk"]), min_size=1,
                max_size=120), st.booleans())  # fmt: skip
def test_every_packet_ends_in_a_sweep_or_a_counted_loss(
    tmp_path: Path, kinds: list[str], partial: bool
) -> None:
    good = data_packets(VLP16)[:120]
    records = []
    for (t, payload), kind in zip(good, kinds, strict=False):
        if kind == "short":
            payload = payload[:700]
        elif kind == "flag":
            payload = b"\x00\x00" + payload[2:]
        elif kind == "mode":
            payload = payload[:1204] + b"\x42" + payload[1205:]
        elif kind == "junk":
            payload = bytes(len(payload))
        records.append((t, 2368, payload))
    path = tmp_path / f"mix{len(records)}{partial}.pcap"
    write_pcap(path, records)
    source = VelodyneSource(pcap=path, model="VLP-16", partial_sweeps=partial)
    try:
        frames = anyio.run(collect, source)
    except DecodeError:
        frames = []  # nothing decodable: said, and still counted
    ledger = source.ledgers()["lidar"]
    assert ledger.received == len(records)
    assert ledger.received == ledger.emitted + ledger.lost_total  # the source has ended
    assert ledger.frames == len(frames)
    assert ledger.emitted == sum(f.meta["packets"] for f in frames) - sum(
        1 for f in frames if f.meta["shared_first"]
    )
