"""Decompression bombs in a real bag (issue 35): the real fiducials bag (one 1280x960 JPEG
CompressedImage, 15 CameraInfo) with 12 more images after its JPEG, PNGs of 8192x8192
RGBA zeros (255 kB each, 256 MiB decoded) and the real JPEG with its frame header forged
to 30000x30000. Each costs only that message: a counted loss (``undecodable``) with one
line naming the sensor, the seq and the size, and nothing is decoded; the real JPEG and
every CameraInfo still arrive. Journeys: ``replay`` and ``record`` as processes under a
2 GiB address-space limit (decoding the 12 bombs held 3 GB before)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapters import BagSource
from tests.interop.hostile_bags import (
    BOMB_SIDE,
    FIDUCIALS,
    FORGED_JPEG_SIDE,
    IMAGE_TOPIC,
    write_image_bombs,
)

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "250"}
MEMORY = 2 << 30

pytestmark = pytest.mark.skipif(not FIDUCIALS.exists(), reason="needs ../shared/data")


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_image_bombs(tmp_path_factory.mktemp("bombs") / "bombs.bag")


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperframes", *args],
        cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=limited,
    )  # fmt: skip


def test_the_bag_holds_the_bombs_it_claims(bombs: Path) -> None:
    """The premise, checked with rosbags and Pillow: 12 more images, each small, each
    claiming far more pixels than the limit."""
    import io

    from PIL import Image
    from rosbags.rosbag1 import Reader
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    Image.MAX_IMAGE_PIXELS = None  # read the header only, as the check does
    sizes = []
    with Reader(bombs) as reader:
        for conn, _, raw in reader.messages():
            if conn.topic == IMAGE_TOPIC:
                msg: Any = ts.deserialize_ros1(raw, conn.msgtype)
                data = bytes(msg.data)
                assert len(data) < 600_000
                sizes.append(Image.open(io.BytesIO(data)).size)
    bomb, forged = (BOMB_SIDE, BOMB_SIDE), (FORGED_JPEG_SIDE, FORGED_JPEG_SIDE)
    assert sizes == [(1280, 960)] + [bomb, forged] * 6


async def test_each_bomb_is_one_counted_loss_and_the_rest_arrives(bombs: Path) -> None:
    topics = {IMAGE_TOPIC: "cam", "/raspicam_node/camera_info": "info"}
    async with BagSource(bombs, topics) as source:
        frames = [frame async for frame in source.frames()]
    cams = [f for f in frames if f.sensor == "cam"]
    assert len(cams) == 1
    assert cams[0].data.shape == (960, 1280, 3)
    assert cams[0].data.dtype == np.uint8
    assert len([f for f in frames if f.sensor == "info"]) == 15
    ledger = source.ledgers()["cam"]
    assert ledger.received == 13
    assert dict(ledger.lost) == {"undecodable": 12}
    messages = list(source.error_messages["undecodable"])
    assert any(
        f"'png' image: a PNG of {BOMB_SIDE}x{BOMB_SIDE} pixels (256 MiB decoded" in m
        for m in messages
    )
    assert any(f"a JPEG of {FORGED_JPEG_SIDE}x{FORGED_JPEG_SIDE} pixels" in m for m in messages)
    assert all(m.startswith("sensor 'cam' seq ") for m in messages)


def test_replay_names_each_bomb_in_one_line_and_counts_it(bombs: Path, tmp_path: Path) -> None:
    proc = cli("replay", str(bombs), "--fast", cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text  # input was lost: the loss exit code
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if "skipped 1 (undecodable)" in ln]
    assert len(lines) >= 2, text
    for line in lines:
        assert "sensor 'raspicam_node_image_compressed' seq " in line
        assert "over the limit of 40 megapixels and 256 MiB; not decoded" in line
    assert "lost 12 of 13 messages (undecodable 12)" in text
    assert "replayed 16 frames" in text


def test_record_keeps_the_real_image_and_the_ledger(bombs: Path, tmp_path: Path) -> None:
    config = tmp_path / "bag.toml"
    config.write_text(
        f'[[sources]]\ntype = "bag"\npath = "{bombs}"\n'
        f'topics = {{ "{IMAGE_TOPIC}" = "cam", "/raspicam_node/camera_info" = "info" }}\n\n'
        '[sync]\npolicy = "nearest"\nreference = "info"\nsensors = ["info"]\ntolerance_ms = 20\n'
    )
    out = tmp_path / "bag.hfr"
    proc = cli("record", str(config), "--fast", "-o", str(out), cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    assert "lost: cam: lost 12 of 13 messages (undecodable 12)" in text, text
    from recordings import open_recording

    with open_recording(out) as log:
        counts = {name: s.count for name, s in log.summary().sensors.items()}
        assert counts == {"cam": 1, "info": 15}
        (cam,) = list(log.frames(sensors=["cam"]))
        assert cam.data.shape == (960, 1280, 3)
        assert dict(log.ledgers["cam"].source.lost) == {"undecodable": 12}
