"""Every Velodyne model against velodyne_decoder, point for point, with the same
calibration: real captures where public ones exist (HDL-32E, VLP-16, VLP-32C, VLS-128,
VLP-16 dual return), packets built to the manuals for the rest (Puck Hi-Res, Alpha
Prime, VLS-128 dual return, HDL-64E S2 and S3 in both return modes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lidar_testdata import MONTEREY, VLP16, data_packets
from velodyne_oracle import (
    HDL64_XML,
    VLP16_DUAL,
    VLP32C,
    VLS128,
    Packets,
    compare,
    hdl64e_packets,
    ours,
    stamps_us,
    theirs,
    vls128_dual_from_single,
    with_footer,
)

from adapters.lidar import SweepAssembler, read_calibration
from adapters.lidar._velodyne_decode import decode_sweeps
from adapters.lidar._velodyne_models import BOTH, LAST, STRONGEST, ModelDetector, get_model

vd = pytest.importorskip("velodyne_decoder", reason="oracle: pip install velodyne-decoder")


def fov_jump_packets(packets: Packets) -> list[int]:
    """Packets whose block azimuths jump (a limited field of view): velodyne_decoder
    interpolates across the jump with the packet's average rate, we do not."""
    jumps = []
    for i, (_t, p) in enumerate(packets):
        azimuth = np.frombuffer(p[:1200], np.uint8).reshape(12, 100)[:, 2:4].copy().view("<u2")
        if (np.diff(azimuth[:, 0].astype(int)) % 36000).max() > 1000:
            jumps.append(i)
    return jumps


def restamped(packets: Packets, every_us: float) -> Packets:
    first = int(stamps_us(packets[:1])[0])
    return [(t, with_footer(p, stamp=first + round(i * every_us))) for i, (t, p) in
            enumerate(packets)]  # fmt: skip


def case(name: str) -> tuple[Packets, str, Any, int]:
    """(packets, our model, velodyne_decoder's model, points velodyne_decoder's own
    interpolation places elsewhere: its first VLS packet has no rate, FOV jumps)."""
    if name == "HDL-32E":
        return data_packets(MONTEREY), "HDL-32E", vd.Model.HDL32E, 0
    if name == "VLP-16":  # early firmware: tell velodyne_decoder the product byte it expects
        return [(t, with_footer(p, product=0x22)) for t, p in data_packets(VLP16)], name, \
            vd.Model.VLP16, 0  # fmt: skip
    if name == "Puck-Hi-Res":  # the VLP-16 packet format, product byte 0x24
        return [(t, with_footer(p, product=0x24)) for t, p in data_packets(VLP16)], name, \
            vd.Model.PuckHiRes, 0  # fmt: skip
    if name == "VLP-16 dual":
        return data_packets(VLP16_DUAL), "VLP-16", vd.Model.VLP16, 0
    if name == "VLP-32C":
        packets = data_packets(VLP32C)
        return packets, name, vd.Model.VLP32C, 32 * 12 * len(fov_jump_packets(packets))
    if name == "VLS-128":
        return data_packets(VLS128), name, vd.Model.AlphaPrime, 384
    if name == "Alpha-Prime":  # the same packets at an Alpha Prime's 173.3 µs cadence
        return restamped(data_packets(VLS128), 20 * 2.89 * 3), name, vd.Model.AlphaPrime, 384
    if name == "VLS-128 dual":
        packets = vls128_dual_from_single(data_packets(VLS128)[:300])
        return packets, "VLS-128", vd.Model.AlphaPrime, 3 * 256
    raise AssertionError(name)


CASES = ["HDL-32E", "VLP-16", "Puck-Hi-Res", "VLP-16 dual", "VLP-32C", "VLS-128",
         "Alpha-Prime", "VLS-128 dual"]  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_each_model_decodes_as_velodyne_decoder_does(name: str) -> None:
    packets, model_name, vd_model, elsewhere = case(name)
    detector = ModelDetector()
    for _t, p in packets[:16]:
        detector.add(p)
    assert detector.evidence().model is not None
    assert detector.evidence().model.name == model_name
    model = get_model(model_name)
    points, times = ours(packets, model)
    reference = theirs(packets, model, vd_model)
    assert len(points) == len(reference) > 10_000
    diff = compare(points, times, reference)
    # the same returns of the same lasers at the same ranges and heights
    assert diff["horizontal_m"].max() < 1e-4
    assert diff["z_m"].max() < 1e-5
    assert diff["intensity"].max() == 0
    # azimuth: both round to 0.01°; velodyne_decoder interpolates with a packet's
    # average rate, we with the gap to the next column: two units apart at most ...
    off = diff["azimuth_deg"] > 0.0201
    # ... except where its interpolation has nothing to go on (see case())
    assert int(off.sum()) <= elsewhere + len(points) // 1000
    late = diff["t_ns"] > 200_000  # velodyne_decoder fixes VLS timing after a packet
    assert diff["time_us"][late].max() < 1.0
    # the same sweeps whether packets come one at a time (live) or in batches (pcap)
    whole = [
        (s.first_block, s.end_block, s.partial, len(s.packets)) for s in sweeps(packets, model, 0)
    ]
    for batch in (1, 37):
        assert [(s.first_block, s.end_block, s.partial, len(s.packets))
                for s in sweeps(packets, model, batch)] == whole  # fmt: skip


def sweeps(packets: Packets, model: Any, batch: int) -> list[Any]:
    assembler = SweepAssembler(model)
    payloads = [p for _t, p in packets]
    out = []
    if batch == 0:
        out = assembler.push_many(payloads)
    elif batch == 1:
        for payload in payloads:
            out += assembler.push(payload)
    else:
        for i in range(0, len(payloads), batch):
            out += assembler.push_many(payloads[i : i + batch])
    assert sum(s.units for s in out + assembler.flush()) == len(packets)
    return out


def test_dual_return_capture_keeps_both_echoes() -> None:
    packets = data_packets(VLP16_DUAL)
    points, _ = ours(packets, get_model("VLP-16"))
    kinds = {k: int((points["return"] == k).sum()) for k in (STRONGEST, LAST, BOTH)}
    assert all(kinds.values())  # two echoes of some firings, one of others
    # each firing gives one point per echo: never more than two per laser and time
    rows = np.frombuffer(b"".join(p for _t, p in packets), np.uint8).reshape(-1, 1206)
    blocks = rows[:, :1200].reshape(-1, 12, 100)
    raw = blocks[:, :, 4:].reshape(-1, 12, 32, 3)[..., :2].copy().view("<u2")[..., 0]
    last, strongest = raw[:, 0::2], raw[:, 1::2]
    expected = np.count_nonzero(last) + np.count_nonzero(strongest[strongest != last])
    assert len(points) == expected


@pytest.mark.parametrize(
    ("s3", "dual"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["S2", "S3", "S2-dual", "S3-dual"],
)
def test_hdl64e_packets_built_to_the_manual_decode_as_velodyne_decoder_does(
    s3: bool, dual: bool
) -> None:
    packets = hdl64e_packets(200, s3=s3, dual=dual)
    detector = ModelDetector()
    for _t, p in packets[:16]:
        detector.add(p)
    found = detector.evidence().model
    assert found is not None
    assert found.name == ("HDL-64E-S3" if s3 else "HDL-64E-S2")
    model = found.with_calibration(read_calibration(HDL64_XML))
    assert model.calibration.advanced  # distance, offset and intensity corrections
    points, times = ours(packets, model)
    vd_model = vd.Model.HDL64E_S3 if s3 else vd.Model.HDL64E_S2
    reference = theirs(packets, model, vd_model)
    assert len(points) == len(reference) > 10_000
    diff = compare(points, times, reference)
    assert np.percentile(diff["azimuth_deg"], 99.9) <= 0.0201
    assert diff["azimuth_deg"].max() <= 0.0301
    # the two-point correction depends on the azimuth: a 0.01° step moves it < 1 mm
    assert diff["horizontal_m"].max() < 2e-3
    assert diff["z_m"].max() < 1e-3
    assert diff["intensity"].max() < 1e-3
    assert diff["time_us"].max() < 1.0
    if dual:
        assert set(np.unique(points["return"]).tolist()) == {STRONGEST, LAST, BOTH}


@pytest.mark.parametrize("name", ["HDL-32E", "VLP-16 dual", "VLP-32C", "VLS-128 dual"])
def test_decoding_sweeps_together_gives_each_sweep_its_own_points(name: str) -> None:
    packets, model_name, _vd_model, _ = case(name)
    model = get_model(model_name)
    assembler = SweepAssembler(model)
    found = assembler.push_many([p for _t, p in packets]) + assembler.flush()
    together = decode_sweeps(found, model)
    assert len(together) == len(found)
    for sweep, points in zip(found, together, strict=True):
        np.testing.assert_array_equal(points, sweep.decode(model))
