"""VelodyneSource offline: frames from real pcaps, bad packets, hour roll-over, pacing."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import anyio
import numpy as np
import pytest
from lidar_testdata import MONTEREY, VLP16, data_packets, pcap_stats, write_pcap

from adapters import VelodyneSource
from adapters.errors import SourceOpenError
from adapters.lidar import VELODYNE_DTYPE, WRAP_PERIOD_NS, PcapReader
from fusion._frames import Frame
from fusion._timing import VirtualClock, use_clock

HOUR_NS = 3_600_000_000_000


async def collect(source: VelodyneSource) -> list[Frame]:
    async with source:
        return [frame async for frame in source.frames()]


async def test_pcap_source_yields_one_frame_per_rotation() -> None:
    stats = pcap_stats(MONTEREY.name)
    frames = await collect(VelodyneSource(pcap=MONTEREY, model="HDL-32E"))
    assert [len(f.data) for f in frames] == stats["veloview_style_points_per_frame"]
    assert [f.seq for f in frames] == list(range(19))
    assert all(f.data.dtype == VELODYNE_DTYPE for f in frames)
    assert all(f.sensor == "lidar" and f.t == f.t_sensor for f in frames)
    assert frames[0].t_sensor == stats["device_ts_first_us_past_hour"] * 1000
    assert all(b.t_sensor > a.t_sensor for a, b in itertools.pairwise(frames))
    # t_arrival is the capture (host) clock: 0.919 s ahead of the sensor's UTC clock
    delay = [f.t_arrival - f.t_sensor - 1355263200 * 10**9 for f in frames[1:]]  # type: ignore[operator]
    assert all(0.919e9 < d < 0.919e9 + 0.1e9 for d in delay)
    assert [f.meta["partial"] for f in frames] == [True] + [False] * 17 + [True]


async def test_pcap_source_counts_position_packets_as_ignored_not_errors() -> None:
    source = VelodyneSource(pcap=VLP16, model="VLP-16", partial_sweeps=False)
    frames = await collect(source)
    assert len(frames) == 50  # 52 VeloView frames minus the partial first and last
    stats = source.statistics()
    assert stats["packets"] == pcap_stats(VLP16.name)["data_packets"]
    assert stats["ignored_datagrams"] == pcap_stats(VLP16.name)["position_packets"]
    assert stats["errors"] == {}
    assert stats["rejected"] == {}
    assert source.spec.meta["wrap_period_ns"] == WRAP_PERIOD_NS == HOUR_NS
    assert source.spec.meta["model"] == "VLP-16"


async def test_malformed_packets_are_dropped_counted_and_do_not_change_sweeps(
    tmp_path: Path,
) -> None:
    packets = data_packets(VLP16)[:300]
    bad_flag = bytearray(packets[10][1])
    bad_flag[300:302] = b"\x00\x00"  # block 3's flag
    records = [(t, 2368, p) for t, p in packets]
    records.insert(11, (packets[10][0], 2368, bytes(bad_flag)))
    records.insert(50, (packets[49][0], 2368, packets[49][1][:1000]))
    records.insert(90, (packets[89][0], 2368, b"\x00" * 1206))
    write_pcap(tmp_path / "bad.pcap", records)
    write_pcap(tmp_path / "good.pcap", [(t, 2368, p) for t, p in packets])

    source = VelodyneSource(pcap=tmp_path / "bad.pcap", model="VLP-16")
    frames = await collect(source)
    good = await collect(VelodyneSource(pcap=tmp_path / "good.pcap", model="VLP-16"))
    assert source.errors == {"bad_block_flag": 2, "bad_length": 1}
    assert [f.t_sensor for f in frames] == [f.t_sensor for f in good]
    for a, b in zip(frames, good, strict=True):
        np.testing.assert_array_equal(a.data, b.data)
    assert source.last_error is not None
    assert source.last_error.startswith(f"{tmp_path / 'bad.pcap'}: record at byte ")
    assert source.last_error.endswith(
        "packet 90: block 0 flag is 0x0000 at byte 0, expected 0xEEFF (bytes FF EE)"
    )


async def test_a_return_mode_switch_mid_stream_ends_the_sweep_and_decodes_both(
    tmp_path: Path,
) -> None:
    packets = data_packets(VLP16)[:400]
    # packets 200.. claim "last return": same bytes, another mode: the sweep in progress ends
    records = [(t, 2368, p[:1204] + b"\x38" + p[1205:] if i >= 200 else p)
               for i, (t, p) in enumerate(packets)]  # fmt: skip
    write_pcap(tmp_path / "switch.pcap", records)
    source = VelodyneSource(pcap=tmp_path / "switch.pcap", model="VLP-16")
    frames = await collect(source)
    assert source.errors == {}
    returns = [set(np.unique(f.data["return"]).tolist()) for f in frames]
    assert returns[0] == {1}
    assert returns[-1] == {2}
    cut = next(i for i, r in enumerate(returns) if r == {2})
    assert frames[cut - 1].meta["partial"]
    assert frames[cut].meta["partial"]
    assert sum(len(f.data) for f in frames) == sum(
        int(np.count_nonzero(np.frombuffer(p, np.uint8)[:1200].reshape(12, 100)[:, 4:]
                             .reshape(12, 32, 3)[:, :, :2].copy().view("<u2")))
        for _t, p in packets
    )  # fmt: skip
    ledger = source.ledgers()["lidar"]
    assert ledger.received == ledger.emitted == 400
    assert ledger.lost_total == 0


async def test_hour_roll_over_keeps_sensor_time_increasing(tmp_path: Path) -> None:
    packets = data_packets(VLP16)[:400]
    first = struct.unpack_from("<I", packets[0][1], 1200)[0]
    shift = 3_600_000_000 - 250_000 - first  # the hour rolls over 0.25 s into the capture
    records = []
    for t, payload in packets:
        stamp = (struct.unpack_from("<I", payload, 1200)[0] + shift) % 3_600_000_000
        records.append((t, 2368, payload[:1200] + struct.pack("<I", stamp) + payload[1204:]))
    write_pcap(tmp_path / "rollover.pcap", records)
    frames = await collect(VelodyneSource(pcap=tmp_path / "rollover.pcap", model="VLP-16"))
    stamps = [f.t_sensor for f in frames]
    assert stamps == sorted(stamps)
    assert stamps[0] < HOUR_NS < stamps[-1]
    periods = np.diff(stamps[1:-1])
    assert periods.max() < 0.06e9  # no sweep jumps by an hour
    based = await collect(
        VelodyneSource(pcap=tmp_path / "rollover.pcap", model="VLP-16", hour_base_ns=5 * HOUR_NS)
    )
    assert [f.t_sensor - 5 * HOUR_NS for f in based] == stamps


async def test_speed_paces_frames_at_capture_timing_on_the_virtual_clock() -> None:
    clock = VirtualClock()
    with use_clock(clock), anyio.fail_after(30):
        async with clock.autojump():
            frames = await collect(VelodyneSource(pcap=MONTEREY, model="HDL-32E", speed=2.0))
    span = frames[-1].t_arrival - frames[0].t_arrival  # type: ignore[operator]
    assert clock.now() == pytest.approx(span / 2, abs=1000)


def test_model_defaults_to_auto_and_unknown_models_are_named() -> None:
    assert VelodyneSource(pcap=VLP16).declared is None
    assert VelodyneSource(pcap=VLP16).spec.meta["model"] == "auto"
    with pytest.raises(ValueError, match=r"unknown Velodyne model 'VLP-64'; known: VLP-16"):
        VelodyneSource(pcap=VLP16, model="VLP-64")
    with pytest.raises(SourceOpenError, match=r"pcap file '.*nope\.pcap' does not exist"):
        VelodyneSource(pcap="nope.pcap", model="VLP-16")
    assert VelodyneSource(model="vlp16").port == 2368


def test_pcap_reader_refuses_non_pcap_files(tmp_path: Path) -> None:
    (tmp_path / "b.pcap").write_bytes(b"hello world, not a capture")
    with pytest.raises(SourceOpenError, match=r"not a pcap file \(byte 0: expected a pcap magic"):
        PcapReader(tmp_path / "b.pcap")


def test_pcap_reader_stops_cleanly_at_a_truncated_record(tmp_path: Path) -> None:
    raw = MONTEREY.read_bytes()
    (tmp_path / "cut.pcap").write_bytes(raw[:100_000])
    with PcapReader(tmp_path / "cut.pcap") as reader:
        datagrams = list(reader)
    assert reader.skipped == {"truncated_file": 1}
    assert 0 < len(datagrams) < 100
