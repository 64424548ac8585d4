"""The "auto" compression policy (recordings/hfr/_effort.py) on real payloads.

Which level a chunk got is checked against zstandard itself: compressing the same
raw chunk at a level is deterministic, so the stored size names the level.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from adapters.lidar._pcap import read_udp
from fusion._frames import Frame
from fusion.errors import ConfigError
from recordings import Recorder, open_recording
from recordings.hfr._builder import ChunkBuilder
from recordings.hfr._chunk_encode import encode_chunk
from recordings.hfr._chunk_reader import decode_chunk, decompress_chunk
from recordings.hfr._effort import HIGH, LOW, MIN_GAIN, RAW_SAVING, AutoEffort, check_level, decide
from recordings.hfr._format import Compression

DATA = Path(__file__).resolve().parents[2] / "../shared/data"
VLP16 = DATA / "lidar/vlp-16-test-90deg-1-50-frames.pcap"
HEVC = DATA / "real/video/androidx_mv_with_2_top_shots.mp4"


def zstd_size(raw: bytes, level: int) -> int:
    return len(zstandard.ZstdCompressor(level=level, write_content_size=True).compress(raw))


def encode(frames: list[Frame], policy: AutoEffort) -> tuple[int, Compression, bytes, bytes]:
    """``(stored bytes, compression, raw chunk, stored payload)`` of one chunk of ``frames``."""
    builder = ChunkBuilder()
    for f in frames:
        builder.add(f)
    sealed = builder.seal()
    raw = b"".join(bytes(p) for p in sealed.parts)
    meta, parts, _ = encode_chunk(sealed, policy)
    payload = b"".join(bytes(p) for p in parts[2:])
    chunk = decode_chunk(decompress_chunk(payload, meta), meta)
    got = [f.data for f in chunk.frames(None, None, None)]
    assert all(np.array_equal(a, f.data) for a, f in zip(got, frames, strict=True))
    return len(payload), meta.compression, raw, payload


def lidar_frames() -> list[Frame]:
    """1,600 real VLP-16 data packets (1,206 bytes each, about 1.9 MB)."""
    packets = [d.payload for d in read_udp(VLP16) if len(d.payload) == 1206][:1600]
    assert len(packets) == 1600
    return [
        Frame("lidar", i, i * 1_330_000, np.frombuffer(p, np.uint8)) for i, p in enumerate(packets)
    ]


def test_real_lidar_packets_are_compressed_at_level_3() -> None:
    policy = AutoEffort()
    stored, compression, raw, _ = encode(lidar_frames(), policy)
    assert compression == Compression.ZSTD
    assert stored == zstd_size(raw, HIGH) < zstd_size(raw, LOW)
    _, low, high = policy.probes[-1]
    assert high <= low * (1 - MIN_GAIN)


def test_noisy_camera_frames_are_compressed_at_level_1() -> None:
    rng = np.random.default_rng(5)
    yy, xx = np.mgrid[0:480, 0:640]
    scene = np.stack([xx * 0.3, yy * 0.4, (xx + yy) * 0.15], axis=-1)
    frames = [
        Frame(
            "cam",
            i,
            i * 33_000_000,
            np.clip(scene + rng.normal(0, 3, scene.shape), 0, 255).astype(np.uint8),
        )
        for i in range(2)
    ]
    stored, compression, raw, _ = encode(frames, AutoEffort())
    assert compression == Compression.ZSTD
    assert stored == zstd_size(raw, LOW)
    # What level 3 would have saved here: about 1 % for twice the CPU.
    assert zstd_size(raw, HIGH) > 0.97 * stored


def test_real_video_packets_are_stored_as_they_are(tmp_path: Path) -> None:
    with av.open(str(HEVC)) as container:
        packets = [bytes(p) for p in container.demux(video=0) if p.size]
    frames = [
        Frame("video", i, i * 33_000_000, np.frombuffer(p, np.uint8)) for i, p in enumerate(packets)
    ]
    stored, compression, raw, payload = encode(frames[:40], AutoEffort())
    assert compression == Compression.NONE
    assert stored == len(raw)
    assert payload == raw
    assert zstd_size(raw, LOW) > len(raw) * (1 - RAW_SAVING)  # zstd agrees: nothing to gain

    path = tmp_path / "video.hfr"
    with Recorder(path, wall_clock=False) as rec:  # the default is "auto"
        for f in frames:
            rec.write(f)
    with open_recording(path) as log:
        back = [bytes(f.data) for f in log.frames()]
        assert log.verify() == []
        assert all(c.compression == Compression.NONE for c in log.chunks)
    assert back == packets


def test_an_explicit_level_is_kept(tmp_path: Path) -> None:
    builder = ChunkBuilder()
    for f in lidar_frames()[:400]:
        builder.add(f)
    sealed = builder.seal()
    raw = b"".join(bytes(p) for p in sealed.parts)
    _, parts, _ = encode_chunk(sealed, 1)
    assert sum(len(p) for p in parts[2:]) == zstd_size(raw, 1)


@pytest.mark.parametrize("bad", ["fast", 23, -8, True, 3.0, None])
def test_bad_levels_are_refused(bad: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="compression_level"):
        check_level(bad)
    with pytest.raises(ConfigError, match="compression_level"):
        Recorder(tmp_path / "x.hfr", compression_level=bad)  # type: ignore[arg-type]


@given(st.integers(1, 1 << 20), st.floats(0, 1.2), st.floats(0, 1.2))
def test_decide_stores_raw_only_what_level_1_cannot_shrink(sample: int, a: float, b: float) -> None:
    low, high = int(sample * a), int(sample * a * b)
    verdict = decide(sample, low, high)
    if low >= sample * (1 - RAW_SAVING):
        assert verdict is None
    elif high <= low * (1 - MIN_GAIN):
        assert verdict == HIGH
    else:
        assert verdict == LOW
