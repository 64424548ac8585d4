"""The compiled Ouster decoder (adapters.lidar._ouster_kernel) against the numpy one, on
the real capture's packets in any order, with columns sent twice, dropped or invalid
(the numpy decoder is itself checked against ouster-sdk's XYZLut in
test_ouster_source.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from ouster_testdata import OUSTER_JSON, VALID_POINTS, lidar_packets

from adapters.lidar._ouster import load_metadata
from adapters.lidar._ouster_fast import decode_packets
from adapters.lidar._ouster_packets import Decoded, OusterScan, PointMaker, ScanAssembler

_INFO = load_metadata(OUSTER_JSON)
_PACKETS = [payload for _, payload in lidar_packets()]
_COLUMN = 16 + 32 * 12 + 4  # LEGACY column: header, 32 pixels, status (last 4 bytes)


def _both(payloads: list[bytes]) -> tuple[Decoded, Decoded]:
    assembler = ScanAssembler(_INFO, on_reject=lambda *_: None)
    assert assembler.decoder == "numba"
    points = PointMaker(_INFO)
    compiled = assembler.decode(OusterScan(0, None, len(payloads), True, payloads), points)
    assert assembler.layout is not None
    columns = decode_packets(assembler.layout, payloads, assembler.columns)
    if not len(columns.ids):
        return compiled, Decoded(columns.ids, 0, None)
    return compiled, Decoded(columns.ids, *points(columns))


def _same(a: Decoded, b: Decoded) -> None:
    np.testing.assert_array_equal(a.ids, b.ids)
    assert a.t_sensor == b.t_sensor
    assert (a.points is None) == (b.points is None)
    if a.points is not None and b.points is not None:
        assert a.points.dtype == b.points.dtype
        assert a.points.tobytes() == b.points.tobytes()  # every field, bit for bit


def test_the_whole_scan_decodes_bit_for_bit_as_numpy_does() -> None:
    compiled, numpy = _both(_PACKETS)
    _same(compiled, numpy)
    assert compiled.points is not None
    assert len(compiled.points) == VALID_POINTS
    assert len(compiled.ids) == 1024


def _invalid(payload: bytes, columns: list[int]) -> bytes:
    """The packet with these columns' status (valid bit) cleared."""
    raw = bytearray(payload)
    for c in columns:
        raw[(c + 1) * _COLUMN - 4] &= 0xFE
    return bytes(raw)


@settings(max_examples=40, deadline=None)
@given(
    picks=st.lists(st.integers(0, 63), min_size=1, max_size=90),
    invalid=st.lists(st.tuples(st.integers(0, 89), st.integers(0, 15)), max_size=12),
)
def test_any_order_duplicates_gaps_and_invalid_columns_decode_as_numpy_does(
    picks: list[int], invalid: list[tuple[int, int]]
) -> None:
    payloads = [_PACKETS[i] for i in picks]
    bad: dict[int, list[int]] = {}
    for packet, column in invalid:
        if packet < len(payloads):
            bad.setdefault(packet, []).append(column)
    for packet, columns in bad.items():
        payloads[packet] = _invalid(payloads[packet], columns)
    _same(*_both(payloads))


def test_a_scan_without_a_valid_column_has_no_points() -> None:
    compiled, numpy = _both([_invalid(_PACKETS[3], list(range(16)))])
    _same(compiled, numpy)
    assert compiled.points is None
    assert len(compiled.ids) == 0
