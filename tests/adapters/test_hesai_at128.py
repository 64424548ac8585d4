"""PandarAT128 against tier4/nebula's own compiled decoder (no public AT128 capture exists).

nebula's AT128 test bag is stored outside its git tree and no other public AT128
capture was found, so packets are built to nebula's ``PacketAT128E2X`` layout
(:mod:`tests.adapters.hesai_synthetic`) and decoded twice: by
:class:`adapters.HesaiSource` with the real AT128 correction file nebula ships
(``PandarAT128.dat``, packaged as the model's default) and by nebula's
``HesaiDecoder<PandarAT128>`` compiled from its headers
(``tests/peers/nebula_hesai``) with its test's configuration (cut 150°, FoV
30-150°, 1-180 m). Every complete sweep: the same point count, channels,
reflectivities and firing-time offsets exactly, x/y/z within 1e-4 m.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import HesaiSource
from adapters.errors import DecodeError
from adapters.lidar._hesai_correction import HesaiCorrection, parse_correction
from adapters.lidar._hesai_models import MODELS, default_angles, identify
from tests.adapters.hesai_synthetic import at128_packets
from tests.adapters.hesai_testdata import write_pcap
from tests.peers.nebula_hesai.nebula_peer import run_peer

DAT = Path(str(resources.files("adapters.lidar") / "hesai_calibration" / "PandarAT128.dat"))


async def _frames(source: HesaiSource) -> list[Any]:
    return [f async for f in source.frames()]


def _compare(ours: list[Any], scans: list[Any]) -> int:
    """Our complete sweeps against nebula's scans of the same count; how many compared."""
    compared = 0
    for frame in ours:
        if frame.meta["partial"]:
            continue
        (ref,) = [s.points for s in scans if len(s.points) == len(frame.data)]
        pts = frame.data
        assert (pts["channel"] == ref["channel"]).all()
        assert (pts["intensity"] == ref["intensity"]).all()
        rel = ref["time_stamp"].astype(np.int64) - int(ref["time_stamp"].min())
        assert (pts["t_offset"] == rel).all()
        for axis in "xyz":
            assert np.abs(pts[axis] - ref[axis]).max() < 1e-4
        compared += 1
    return compared


@pytest.mark.parametrize("dual", [True, False])
def test_at128_equals_nebulas_decoder(dual: bool, tmp_path: Path) -> None:
    packets = at128_packets(7300 if dual else 3700, dual=dual, seed=7)
    pcap = tmp_path / "at128.pcap"
    write_pcap(pcap, [(1_679_653_308 * 10**9 + i * 80_000, p) for i, p in enumerate(packets)])
    source = HesaiSource(pcap, min_range=1.0, max_range=180.0)
    ours = anyio.run(_frames, source)
    assert source.model is MODELS["PandarAT128"]
    assert source.spec.meta["angles"] == "built-in PandarAT128.dat"
    assert source.spec.meta["fov_deg"] == (30, 150)
    scans = run_peer("at128", DAT, packets, cut=150.0, fov=(30, 150), ranges=(1.0, 180.0))
    assert len(scans) >= 3
    assert _compare(ours, scans) >= 2
    stats = source.ledger().statistics()
    assert stats.received == stats.emitted == len(packets)
    assert ours[1].data["return"].max() == (2 if dual else 1)


def test_at128_kernel_equals_numpy() -> None:
    packets = at128_packets(2000, dual=True, seed=3)
    from adapters.lidar._hesai_decode import HesaiDecoder
    from adapters.lidar._hesai_packets import prepare

    model = MODELS["PandarAT128"]
    out = []
    for kernel in (True, False):
        decoder = HesaiDecoder(model, default_angles(model), kernel=kernel)
        batch, rejected = prepare(model, packets)
        assert not rejected
        out.append(decoder.push(batch, [None] * len(batch.raw)) + decoder.flush())
    assert [len(s.points) for s in out[0]] == [len(s.points) for s in out[1]]
    for a, b in zip(*out, strict=True):
        assert (a.points == b.points).all()


def test_at128_packaged_dat_is_nebulas() -> None:
    """The packaged correction parses as nebula's struct says (3 fields of 120°, 128 channels)."""
    corr = default_angles(MODELS["PandarAT128"])
    assert isinstance(corr, HesaiCorrection)
    assert corr.channels == 128
    assert corr.fields == 3
    starts = corr.start / 25600
    assert np.allclose(np.diff(starts), 119.9, atol=0.1)


def test_at128_csv_refused_with_reason(tmp_path: Path) -> None:
    csv = tmp_path / "a.csv"
    csv.write_text("Laser id,Elevation,Azimuth\n" + "".join(f"{i},0,0\n" for i in range(1, 129)))
    pcap = tmp_path / "at128.pcap"
    write_pcap(pcap, [(10**18 + i, p) for i, p in enumerate(at128_packets(5, dual=False))])
    source = HesaiSource(pcap, calibration=csv)
    with pytest.raises(DecodeError, match=r"PandarAT128 takes a \.dat correction"):
        anyio.run(_frames, source)
    assert source.ledger().statistics().lost == {"unsupported_model": 5}


def test_at128_azimuth_in_no_field_is_bad_azimuth(tmp_path: Path) -> None:
    data = bytearray(DAT.read_bytes())
    # shrink field 0 to 23.3..100 degrees: block azimuths 100..143 fall in none
    data[16 + 12 : 16 + 16] = (100 * 25600 // 2).to_bytes(4, "little")
    corr = parse_correction(bytes(data), "narrow.dat")
    packets = at128_packets(3000, dual=False, seed=5)
    pcap = tmp_path / "at128.pcap"
    write_pcap(pcap, [(10**18 + i * 80_000, p) for i, p in enumerate(packets)])
    source = HesaiSource(pcap, calibration=corr)
    anyio.run(_frames, source)
    lost = source.ledger().statistics().lost
    assert set(lost) == {"bad_azimuth"}
    assert lost["bad_azimuth"] > 100
    assert "in no mirror field of the correction" in (source.last_error or "")


def test_at128_identified() -> None:
    (packet,) = at128_packets(1, dual=False)
    model, said = identify(packet)
    assert model is MODELS["PandarAT128"]
    assert said == "protocol 4.3, 128 lasers, 2 blocks: PandarAT128"


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=47200), cut=st.integers(0, 47200), flip=st.integers(0, 255))
def test_correction_parser_refuses_or_parses(data: bytes, cut: int, flip: int) -> None:
    """Random bytes, a cut real file, a flipped header byte: parsed or a DecodeError, no other."""
    real = bytearray(DAT.read_bytes())
    real[min(cut, len(real) - 1) % 16] = flip
    for blob in (data, bytes(real[:cut]), bytes(real)):
        try:
            corr = parse_correction(blob, "x.dat")
        except DecodeError as err:
            message = str(err)
            corr = None
        if corr is None:
            assert message.startswith("x.dat: ")
        else:
            assert 0 < corr.channels <= 128
            assert len(corr.azimuth_adjust) == corr.channels * 180 + 1
