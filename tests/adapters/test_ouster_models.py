"""Every Ouster family, channel count and lidar mode, against ouster-sdk.

Only one real capture is public and small (an OS-1-32, 1024x10, LEGACY profile), so
the other sensors are that capture's metadata turned into an OS0-128, an OS2-32, an
OSDome-128 and an OS1-16 (beam angles, pixel shifts, column count and UDP profile as
such a sensor reports them), a scan of random ranges (a tenth of them no return) and
signal values, and **ouster-sdk's own packet writer** (``frame_to_packets``) for the
bytes. The reference is ouster-sdk twice: its ``FrameBatcher`` (our
``decoder="ouster-sdk"``), which must give the very same array, and its ``XYZLut``
applied to the scan it wrote, which the points' x/y/z must match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lidar_testdata import write_pcap
from ouster_testdata import OUSTER_JSON

from adapters import OusterSource
from fusion._frames import Frame

CASES = [
    ("OS-0-128", 128, "1024x10", "RNG19_RFL8_SIG16_NIR16"),
    ("OS-2-32", 32, "2048x10", "LEGACY"),
    ("OS-Dome-128", 128, "512x20", "RNG19_RFL8_SIG16_NIR16_DUAL"),
    ("OS-1-16", 16, "4096x5", "LEGACY"),
]


def sensor_metadata(prod_line: str, channels: int, mode: str, profile: str) -> dict[str, Any]:
    """The real OS-1-32's metadata (as ouster-sdk writes it) as another sensor's."""
    from ouster.sdk import core

    meta = json.loads(core.SensorInfo(OUSTER_JSON.read_text()).to_json_string())
    rng = np.random.default_rng(channels)
    width, fps = (int(v) for v in mode.split("x"))
    meta["sensor_info"]["prod_line"] = prod_line
    meta["sensor_info"]["initialization_id"] = 4242
    meta["config_params"]["lidar_mode"] = mode
    fmt = meta["lidar_data_format"]
    fmt.update(
        columns_per_frame=width,
        column_window=[0, width - 1],
        fps=fps,
        pixels_per_column=channels,
        udp_profile_lidar=profile,
        # the shifts a sensor reports scale with the column count (none at 512)
        pixel_shift_by_row=[int(s) for s in rng.choice([0, 4, 8, 12], channels) * (width // 1024)],
    )
    fov = {"OS-0": 90.0, "OS-1": 45.0, "OS-2": 22.5, "OS-D": 180.0}[prod_line[:4]]
    beams = meta["beam_intrinsics"]
    beams["beam_altitude_angles"] = [float(a) for a in np.linspace(fov / 2, -fov / 2, channels)]
    beams["beam_azimuth_angles"] = [float(a) for a in rng.uniform(-3.0, 3.0, channels)]
    return meta


def write_capture(tmp: Path, meta: dict[str, Any]) -> tuple[Path, Path, Any]:
    """One scan of random returns, as ouster-sdk packs it, in a pcap; its metadata file."""
    from ouster.sdk import core
    from ouster.sdk.util.parsing import frame_to_packets

    info = core.SensorInfo(json.dumps(meta))
    scan = core.LidarFrame(info)
    rng = np.random.default_rng(1)
    for name in scan.fields:
        values = scan.field(name)
        if name.startswith("RANGE"):
            ranges = rng.integers(300, 60_000, values.shape)  # mm: 0.3-60 m
            ranges[rng.random(values.shape) < 0.1] = 0  # no return
            values[:] = ranges
        else:
            values[:] = rng.integers(0, min(int(np.iinfo(values.dtype).max), 4000), values.shape)
    scan.timestamp[:] = 10**9 + np.arange(scan.w) * (10**8 // scan.w)
    scan.measurement_id[:] = np.arange(scan.w)
    scan.status[:] = 1
    scan.frame_id = 7
    t0 = 1_700_000_000_000_000_000
    records = [
        (t0 + i * 100_000, 7502, bytes(p.buf)) for i, p in enumerate(frame_to_packets(scan, info))
    ]
    pcap, path = tmp / "capture.pcap", tmp / "capture.json"
    write_pcap(pcap, records)
    path.write_text(json.dumps(meta))
    return pcap, path, scan


async def decode(pcap: Path, meta: Path, **options: Any) -> list[Frame]:
    async with OusterSource(pcap, metadata=meta, **options) as source:
        return [frame async for frame in source.frames()]


@pytest.mark.parametrize(("prod_line", "channels", "mode", "profile"), CASES)
async def test_every_family_channel_count_and_mode_decodes_as_ouster_sdk_does(
    tmp_path: Path, prod_line: str, channels: int, mode: str, profile: str
) -> None:
    from ouster.sdk import core

    meta = sensor_metadata(prod_line, channels, mode, profile)
    pcap, path, scan = write_capture(tmp_path, meta)
    (ours,) = await decode(pcap, path)
    (vendor,) = await decode(pcap, path, decoder="ouster-sdk")
    np.testing.assert_array_equal(ours.data, vendor.data)
    points = ours.data
    ranges = np.asarray(scan.field("RANGE"))
    assert len(points) == int((ranges > 0).sum())  # every return, nothing else
    assert points["beam"].max() == channels - 1
    assert points["column"].max() == int(mode.split("x")[0]) - 1
    np.testing.assert_array_equal(points["range"], ranges[points["beam"], points["column"]])
    xyz = core.XYZLut(core.SensorInfo(json.dumps(meta)))(scan)  # metres, (h, w, 3)
    got = np.stack([points["x"], points["y"], points["z"]], axis=-1)
    np.testing.assert_allclose(got, xyz[points["beam"], points["column"]], atol=1e-4)
