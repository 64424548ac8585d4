"""The builders behind :mod:`fusion.workers._models`: each model assembled with ``onnx``.

Only building a model with arguments no shipped file holds (and the test that
keeps the shipped files equal to these builders) imports this module, and with
it ``onnx``; the shipped models load without it.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
FAIL_MARKER = -999.0
"""A value that makes :func:`failing_model` fail the whole batch it appears in."""


def _finish(graph: onnx.GraphProto) -> bytes:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="hyperframes.models",
    )
    # IR 8 is read by every onnxruntime since 1.14; the default (newest) IR may not be.
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def _const(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def scale_model(features: int = 4, factor: float = 2.0) -> bytes:
    """``y = x * factor`` with ``x``, ``y`` of shape ``[N, features]`` float32."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "factor"], ["y"])],
        "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", features])],
        initializer=[_const("factor", np.array(factor, np.float32))],
    )
    return _finish(graph)


def failing_model(features: int = 4, marker: float = FAIL_MARKER) -> bytes:
    """``y = 2 x`` on ``[N, features]`` that fails any batch containing ``marker``.

    The failure is real, raised by onnxruntime at run time: the output is
    reshaped to ``[N + flag, features]`` where ``flag`` is 1 if any element
    equals ``marker``, and a reshape that changes the element count is an error.
    """
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["doubled"]),
        helper.make_node("Equal", ["x", "marker"], ["hit"]),
        helper.make_node("Cast", ["hit"], ["hit_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMax", ["hit_f"], ["any_f"], keepdims=0),
        helper.make_node("Cast", ["any_f"], ["flag"], to=TensorProto.INT64),
        helper.make_node("Mul", ["flag", "row_only"], ["bump"]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Add", ["shape", "bump"], ["bad_shape"]),
        helper.make_node("Reshape", ["doubled", "bad_shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "failing",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", features])],
        initializer=[
            _const("two", np.array(2.0, np.float32)),
            _const("marker", np.array(marker, np.float32)),
            _const("row_only", np.array([1, 0], np.int64)),
        ],
    )
    return _finish(graph)


_SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)


def sobel_edges(height: int | str = "H", width: int | str = "W") -> bytes:
    """Edge magnitude of RGB images: ``image [N, 3, H, W]`` -> ``edges [N, 1, H, W]``.

    Grayscale by a 1x1 convolution with the BT.601 luma weights, then the two
    Sobel kernels and ``sqrt(gx^2 + gy^2)``. ``height``/``width`` may be fixed
    ints or symbolic names.
    """
    gray_w = np.array([0.299, 0.587, 0.114], np.float32).reshape(1, 3, 1, 1)
    sobel = np.stack([_SOBEL_X, _SOBEL_X.T])[:, None, :, :].astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["image", "gray_w"], ["gray"]),
        helper.make_node("Conv", ["gray", "sobel"], ["grad"], pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["grad", "grad"], ["grad2"]),
        helper.make_node("ReduceSum", ["grad2", "channel_axis"], ["mag2"], keepdims=1),
        helper.make_node("Sqrt", ["mag2"], ["edges"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sobel_edges",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, height, width])],
        [helper.make_tensor_value_info("edges", TensorProto.FLOAT, ["N", 1, height, width])],
        initializer=[
            _const("gray_w", gray_w),
            _const("sobel", sobel),
            _const("channel_axis", np.array([1], np.int64)),
        ],
    )
    return _finish(graph)


def tiny_cnn(size: int = 224, classes: int = 10, seed: int = 0) -> bytes:
    """A small image classifier: ``image [N, 3, size, size]`` -> ``logits [N, classes]``.

    Three 3x3 stride-2 convolutions (3->16->32->64 channels) with ReLU, global
    average pooling and a linear layer; He-initialised weights from ``seed``.
    About 0.2 GFLOP per 224x224 image: heavy enough that batching and
    threading decisions show in a benchmark, light enough for a CPU.
    """
    return _conv_stack(size, [(3, 16, 2), (16, 32, 2), (32, 64, 2)], classes, seed, "tiny_cnn")


def mid_cnn(size: int = 224, classes: int = 10, seed: int = 0) -> bytes:
    """A mid-size image classifier, about 0.3 GMAC per 224x224 image.

    ``image [N, 3, size, size]`` -> ``logits [N, classes]``: 3x3 convolutions
    with ReLU, 3->32 (stride 2), 32->64 (stride 2), 64->64, 64->128 (stride 2),
    128->256 (stride 2), global average pooling and a linear layer. At 224x224
    that is 10.8 + 57.8 + 115.6 + 57.8 + 57.8 = 300 M multiply-adds: the
    model of the "video -> model" benchmark, where the model, not the plumbing,
    takes most of the CPU (several ms per image on one core).
    """
    return _conv_stack(
        size,
        [(3, 32, 2), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 256, 2)],
        classes,
        seed,
        "mid_cnn",
    )


def _conv_stack(
    size: int, layers: list[tuple[int, int, int]], classes: int, seed: int, name: str
) -> bytes:
    """3x3 conv + ReLU layers ``(in, out, stride)``, global pooling, a linear layer."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    prev = "image"
    for i, (cin, cout, stride) in enumerate(layers):
        w = rng.normal(0, np.sqrt(2.0 / (cin * 9)), (cout, cin, 3, 3)).astype(np.float32)
        inits += [_const(f"w{i}", w), _const(f"b{i}", np.zeros(cout, np.float32))]
        nodes.append(
            helper.make_node(
                "Conv",
                [prev, f"w{i}", f"b{i}"],
                [f"c{i}"],
                strides=[stride, stride],
                pads=[1, 1, 1, 1],
            )
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        prev = f"r{i}"
    last = layers[-1][1]
    fc_w = rng.normal(0, np.sqrt(1.0 / last), (last, classes)).astype(np.float32)
    inits += [_const("fc_w", fc_w), _const("fc_b", np.zeros(classes, np.float32))]
    nodes += [
        helper.make_node("GlobalAveragePool", [prev], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        initializer=inits,
    )
    return _finish(graph)


def bev_occupancy(grid: int = 32, extent: float = 16.0, points: int | str = "P") -> bytes:
    """Bird's-eye-view occupancy: ``points [N, P, 3]`` -> ``occupancy [N, grid, grid]``.

    The square ``[-extent, extent)`` metres in x and y is cut into ``grid`` x
    ``grid`` cells; a cell is 1.0 if any point falls in it. Points outside the
    square land in a spill cell that is sliced off. Vectorised with ``OneHot``
    and ``ReduceMax``, so it suits point clouds of a few thousand points.
    """
    cells = grid * grid
    res = 2.0 * extent / grid
    nodes = [
        helper.make_node("Slice", ["points", "xy_start", "xy_end", "last_axis"], ["xy"]),
        helper.make_node("Add", ["xy", "extent"], ["shifted"]),
        helper.make_node("Div", ["shifted", "res"], ["scaled"]),
        helper.make_node("Floor", ["scaled"], ["floored"]),
        helper.make_node("Cast", ["floored"], ["ij"], to=TensorProto.INT64),
        # valid where 0 <= i, j < grid (both coordinates)
        helper.make_node("GreaterOrEqual", ["ij", "zero"], ["ge0"]),
        helper.make_node("Less", ["ij", "grid"], ["ltg"]),
        helper.make_node("And", ["ge0", "ltg"], ["ok2"]),
        helper.make_node("Cast", ["ok2"], ["ok2_i"], to=TensorProto.INT64),
        helper.make_node("ReduceMin", ["ok2_i"], ["ok_i"], axes=[-1], keepdims=0),
        helper.make_node("Cast", ["ok_i"], ["ok"], to=TensorProto.BOOL),
        helper.make_node("Mul", ["ij", "strides"], ["ij_flat"]),
        helper.make_node("ReduceSum", ["ij_flat", "last_axis"], ["idx"], keepdims=0),
        helper.make_node("Where", ["ok", "idx", "spill"], ["cell"]),
        helper.make_node("OneHot", ["cell", "depth", "onehot_values"], ["hot"], axis=-1),
        helper.make_node("ReduceMax", ["hot"], ["occ_flat"], axes=[1], keepdims=0),
        helper.make_node("Slice", ["occ_flat", "zero1", "cells", "last_axis"], ["occ_cells"]),
        helper.make_node("Reshape", ["occ_cells", "grid_shape"], ["occupancy"]),
    ]
    graph = helper.make_graph(
        nodes,
        "bev_occupancy",
        [helper.make_tensor_value_info("points", TensorProto.FLOAT, ["N", points, 3])],
        [helper.make_tensor_value_info("occupancy", TensorProto.FLOAT, ["N", grid, grid])],
        initializer=[
            _const("xy_start", np.array([0], np.int64)),
            _const("xy_end", np.array([2], np.int64)),
            _const("last_axis", np.array([-1], np.int64)),
            _const("extent", np.array(extent, np.float32)),
            _const("res", np.array(res, np.float32)),
            _const("zero", np.array(0, np.int64)),
            _const("zero1", np.array([0], np.int64)),
            _const("grid", np.array(grid, np.int64)),
            # x is the column (stride 1), y the row (stride grid)
            _const("strides", np.array([1, grid], np.int64)),
            _const("spill", np.array(cells, np.int64)),
            _const("depth", np.array(cells + 1, np.int64)),
            _const("cells", np.array([cells], np.int64)),
            _const("onehot_values", np.array([0.0, 1.0], np.float32)),
            _const("grid_shape", np.array([0, grid, grid], np.int64)),
        ],
    )
    return _finish(graph)
