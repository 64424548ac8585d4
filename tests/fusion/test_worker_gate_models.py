"""ChangeGate on a synthetic clip with known events, and the ONNX model builders."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame, FrameFormatError, FrameGroup
from fusion.workers import ChangeGate, ImagePreprocess
from fusion.workers._models import bev_occupancy, sobel_edges, tiny_cnn

MS = 1_000_000


def clip_with_events(n: int = 300, seed: int = 1) -> tuple[list[Frame], set[int]]:
    """A static noisy scene; a box appears, moves, and leaves at known frames.

    Returns the frames and the indices where the content changed (ground truth).
    """
    rng = np.random.default_rng(seed)
    background = rng.integers(40, 200, (90, 160, 3), dtype=np.uint8)
    boxes = {  # frame index where the box moves to (row, col); None: gone
        40: (10, 10),
        41: (12, 14),
        42: (14, 18),
        120: (50, 100),
        200: None,
        260: (30, 60),
    }
    frames, changed = [], set()
    box = None
    for i in range(n):
        if i in boxes:
            box = boxes[i]
            changed.add(i)
        img = background.copy()
        if box is not None:
            img[box[0] : box[0] + 30, box[1] : box[1] + 40] = 255
        # Sensor noise on every frame: not a change.
        noise = rng.integers(-3, 4, img.shape)
        img = np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)
        frames.append(Frame("cam", i, i * 33 * MS, img))
    return frames, changed


def test_gate_catches_every_changed_frame_and_skips_most_static_ones() -> None:
    frames, changed = clip_with_events()
    gate = ChangeGate(0.02, keyframe_every=60, keyframe_interval=None)
    decisions = [gate.check(f) for f in frames]
    ran = {i for i, d in enumerate(decisions) if d.run}
    recall = len(changed & ran) / len(changed)
    assert recall == 1.0
    stats = gate.statistics()
    assert stats.saved > 0.9
    assert stats.run == len(ran)
    # keyframes: the 60-frame rule fires in the long static stretches
    assert stats.keyframes >= 1
    assert {d.reason for d in decisions} == {"first", "changed", "static", "keyframe"}


def test_keyframe_is_forced_every_n_frames_and_every_t_of_frame_time() -> None:
    still = np.zeros((36, 64), np.uint8)
    by_count = ChangeGate(keyframe_every=5, keyframe_interval=None)
    runs = [by_count.check(Frame("cam", i, i * MS, still)).run for i in range(11)]
    assert runs == [True, False, False, False, False, True, False, False, False, False, True]
    by_time = ChangeGate(keyframe_every=None, keyframe_interval=100 * MS)
    runs = [by_time.check(Frame("cam", i, i * 40 * MS, still)).run for i in range(6)]
    assert runs == [True, False, False, True, False, False]


def test_gate_reads_the_named_sensor_of_a_group_and_rejects_non_images() -> None:
    img = np.zeros((36, 64, 3), np.uint8)
    group = FrameGroup(
        0, {"lidar": Frame("lidar", 0, 0, np.zeros((10, 3))), "cam": Frame("cam", 0, 0, img)}
    )
    assert ChangeGate(sensor="cam").check(group).reason == "first"
    with pytest.raises(FrameFormatError, match=r"sensor 'cam' seq 3: expected an image"):
        ChangeGate().check(Frame("cam", 3, 0, np.zeros(5)))


def test_image_preprocess_resizes_and_normalises_into_reused_buffers() -> None:
    pre = ImagePreprocess((4, 6), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), max_batch=2, buffers=2)
    img = np.zeros((8, 12, 3), np.uint8)
    img[:, 6:] = 255
    a = pre([Frame("cam", 0, 0, img), Frame("cam", 1, 0, img)])
    assert a.shape == (2, 3, 4, 6)
    assert a.dtype == np.float32
    np.testing.assert_allclose(a[0, 0, 0], [-1, -1, -1, 1, 1, 1])
    b = pre([Frame("cam", 2, 0, img)])
    c = pre([Frame("cam", 3, 0, img)])
    assert not np.shares_memory(a, b)
    assert np.shares_memory(a, c)  # the ring of two came round


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 90),
    w=st.integers(1, 90),
    out_h=st.integers(1, 40),
    out_w=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_flat_index_gather_matches_row_column_sampling(
    h: int, w: int, out_h: int, out_w: int, seed: int
) -> None:
    # The fast path (np.take with flat byte offsets, HWC -> CHW in one gather)
    # must pick exactly the pixels the row/column sampling of resize() picks;
    # a strided view and a non-uint8 image take the slow path to the same answer.
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, 2 * w, 3), dtype=np.uint8)
    pre = ImagePreprocess(
        (out_h, out_w), interpolation="nearest", mean=(0, 0, 0), std=(1 / 255,) * 3, max_batch=3
    )
    strided = img[:, ::2]
    contiguous = np.ascontiguousarray(strided)
    wide = contiguous.astype(np.int32)
    got = pre(
        [Frame("cam", 0, 0, contiguous), Frame("cam", 1, 0, strided), Frame("cam", 2, 0, wide)]
    )
    expected = pre.resize(contiguous).transpose(2, 0, 1).astype(np.float32)
    for i in range(3):
        np.testing.assert_array_equal(got[i], expected)


def test_image_preprocess_names_the_frame_that_is_not_an_image() -> None:
    pre = ImagePreprocess((4, 4))
    with pytest.raises(FrameFormatError, match=r"sensor 'cam' seq 7"):
        pre([Frame("cam", 6, 0, np.zeros((8, 8, 3), np.uint8)), Frame("cam", 7, 0, np.zeros(3))])


def run(model: bytes, **feeds: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def test_sobel_model_finds_a_vertical_edge() -> None:
    img = np.zeros((1, 3, 8, 8), np.float32)
    img[..., 4:] = 1.0
    (edges,) = run(sobel_edges(), image=img)
    assert edges.shape == (1, 1, 8, 8)
    row = edges[0, 0, 4]
    assert row[3] == row[4] == pytest.approx(4.0, rel=1e-5)
    assert row[1] == 0.0


def test_bev_occupancy_marks_the_cells_that_hold_points() -> None:
    points = np.array([[[0.1, 0.1, 0.0], [-15.9, -15.9, 1.0], [100.0, 0.0, 0.0]]], np.float32)
    (occ,) = run(bev_occupancy(grid=32, extent=16.0), points=points)
    assert occ.shape == (1, 32, 32)
    assert sorted(map(tuple, np.argwhere(occ[0]))) == [(0, 0), (16, 16)]  # out of range: dropped


def test_tiny_cnn_is_deterministic_and_batch_independent() -> None:
    x = np.random.default_rng(0).random((3, 3, 224, 224), dtype=np.float32)
    (batched,) = run(tiny_cnn(), image=x)
    (single,) = run(tiny_cnn(), image=x[1:2])
    assert batched.shape == (3, 10)
    np.testing.assert_allclose(batched[1], single[0], rtol=1e-4, atol=1e-5)
