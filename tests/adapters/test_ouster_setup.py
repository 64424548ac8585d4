"""The per-metadata set-up cache (adapters.lidar._ouster_setup): a source made again from
the same metadata bytes reuses the layout and tables, and still decodes the same points,
counts the same ledger and names the same mismatches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from ouster_testdata import OUSTER_JSON, OUSTER_PCAP, VALID_POINTS

from adapters import OusterSource
from adapters.errors import DecodeError
from adapters.lidar import _ouster_setup as ouster_setup
from adapters.lidar._ouster import load_metadata


def test_the_same_bytes_share_one_entry_and_the_cache_is_bounded() -> None:
    ouster_setup.clear_cache()
    raw = OUSTER_JSON.read_bytes()
    info = load_metadata(OUSTER_JSON)
    first = ouster_setup.prepare(raw, info)
    assert ouster_setup.prepare(raw, info) is first
    assert first.layout is not None
    assert first.layout.usable
    assert not first.direction.flags.writeable
    assert not first.offset.flags.writeable
    # other bytes (the same sensor, another file) are another entry; the oldest goes first
    others = [
        ouster_setup.prepare(raw + b" " * (k + 1), info) for k in range(ouster_setup.CACHE_SIZE)
    ]
    assert all(other is not first for other in others)
    assert ouster_setup.prepare(raw + b" ", info) is others[0]
    assert ouster_setup.prepare(raw, info) is not first  # evicted, made again
    ouster_setup.clear_cache()
    assert ouster_setup.prepare(raw + b" ", info) is not others[0]


async def _scan(metadata: Path) -> tuple[np.ndarray, dict[str, object]]:
    async with OusterSource(OUSTER_PCAP, metadata=metadata) as source:
        frames = [frame async for frame in source.frames() if frame.sensor == "lidar"]
    assert len(frames) == 1
    return frames[0].data, source.ledgers()["lidar"].as_dict()


async def test_a_source_made_from_the_cache_decodes_as_a_cold_one() -> None:
    ouster_setup.clear_cache()
    cold, cold_ledger = await _scan(OUSTER_JSON)
    warm, warm_ledger = await _scan(OUSTER_JSON)
    assert len(cold) == VALID_POINTS
    assert np.array_equal(cold.view(np.uint8), warm.view(np.uint8))
    assert cold_ledger == warm_ledger


async def test_a_mismatch_is_named_with_the_cache_warm_as_cold(tmp_path: Path) -> None:
    meta = json.loads(OUSTER_JSON.read_text())
    meta["lidar_mode"] = "512x10"
    meta["data_format"].update(columns_per_frame=512, column_window=[0, 511])
    text = json.dumps(meta)
    half = tmp_path / "half.json"
    half.write_text(text)
    ouster_setup.clear_cache()
    for _ in range(2):  # cold, then from the cache
        source = OusterSource(OUSTER_PCAP, metadata=half)
        with pytest.raises(DecodeError, match=r"512x10 has 512 columns \(lidar mode mismatch\)"):
            async with source:
                _ = [frame async for frame in source.frames()]
        assert dict(source.ledgers()["lidar"].lost) == {"undecodable": 8}
