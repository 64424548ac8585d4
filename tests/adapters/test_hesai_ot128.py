"""PandarOT128 against tier4/nebula's own compiled decoder (no public OT128 capture exists).

nebula's OT128 test bag is stored outside its git tree and no other public OT128
capture was found, so packets are built to nebula's ``Packet128E4X`` layout
(:func:`tests.adapters.hesai_synthetic.ot128_packets`, field by field from its
structs) and decoded twice: by :class:`adapters.HesaiSource` with nebula's real
OT128 angle file (``Pandar128E4X.csv``, packaged as the model's default) and by
nebula's ``HesaiDecoder<Pandar128E4X>`` compiled from its headers
(``tests/peers/nebula_hesai``). Single and dual return, standard and
high-resolution mode (per-block azimuth states): every complete sweep has the
same point count, channels, reflectivities and firing-time offsets exactly, and
x/y/z within 1e-5 m.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from adapters import HesaiSource
from adapters.lidar._hesai_models import MODELS, identify
from tests.adapters.hesai_synthetic import ot128_packets
from tests.adapters.hesai_testdata import write_pcap
from tests.peers.nebula_hesai.nebula_peer import Scan, run_peer

CSV = Path(str(resources.files("adapters.lidar") / "hesai_calibration" / "Pandar128E4X.csv"))
RANGES = (0.3, 200.0)


async def _frames(source: HesaiSource) -> list[Any]:
    return [f async for f in source.frames()]


def _first_point_ns(scan: Scan) -> int:
    return round(scan.stamp_s * 1e9) + int(scan.points["time_stamp"].min())


@pytest.mark.parametrize(
    ("dual", "hires"),
    [(False, False), (True, False), (False, True)],
    ids=["single", "dual", "hires"],
)
def test_ot128_equals_nebulas_decoder(dual: bool, hires: bool, tmp_path: Path) -> None:
    packets = ot128_packets(4600 if dual else 2400, dual=dual, hires=hires, seed=5, start_az=18000)
    pcap = tmp_path / "ot128.pcap"
    write_pcap(pcap, [(1_679_653_308 * 10**9 + i * 100_000, p) for i, p in enumerate(packets)])
    source = HesaiSource(pcap, min_range=RANGES[0], max_range=RANGES[1])
    ours = anyio.run(_frames, source)
    assert source.model is MODELS["PandarOT128"]
    assert source.spec.meta["angles"] == "built-in Pandar128E4X.csv"
    scans = run_peer("ot128", CSV, packets, cut=0.0, fov=(0, 360), ranges=RANGES)
    complete = [f for f in ours if not f.meta["partial"]]
    compared = 0
    for frame in complete:  # nebula's scan of the same first firing time (stamp + offset)
        (scan,) = [s for s in scans if abs(_first_point_ns(s) - frame.t_sensor) < 1_000]
        pts, ref = frame.data, scan.points
        assert len(pts) == len(ref)
        assert (pts["channel"] == ref["channel"]).all()
        assert (pts["intensity"] == ref["intensity"]).all()
        rel = ref["time_stamp"].astype(np.int64) - int(ref["time_stamp"].min())
        assert (pts["t_offset"] == rel).all()
        for axis in "xyz":
            assert np.abs(pts[axis] - ref[axis]).max() <= 1e-5
        compared += 1
    assert compared == 2
    stats = source.ledger().statistics()
    assert stats.received == stats.emitted == len(packets)
    assert ours[1].data["return"].max() == (2 if dual else 1)


def test_ot128_identified() -> None:
    (packet,) = ot128_packets(1, dual=False)
    model, said = identify(packet)
    assert model is MODELS["PandarOT128"]
    assert said == "protocol 1.4, 128 lasers, 2 blocks: PandarOT128"
