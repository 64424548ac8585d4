"""Small ONNX models for tests, examples, the demo and benchmarks.

Each model is assembled from a few operators and deterministic weights by a
builder (``fusion.workers._model_builders``, which needs ``onnx``). The models
the demo, the examples and the configuration's ``builtin:NAME`` use ship as
``.onnx`` files beside this module (``model_files/``), so running them needs no
``onnx``; a test keeps every shipped file byte-equal to its builder. Any other
arguments are built on the fly and need ``onnx`` (``pip install onnx``, or the
``test`` extra). Each function returns the serialized model (``bytes``), which
:class:`BatchWorker` takes as readily as a path; write it to a file to inspect
it with Netron.

* :func:`sobel_edges` - an edge detector (grayscale + two 3x3 Sobel convolutions);
* :func:`tiny_cnn` - a three-layer strided CNN classifier at 224x224, the
  benchmark's stand-in for a real vision model;
* :func:`mid_cnn` - a ~0.3 GMAC CNN classifier at 224x224;
* :func:`bev_occupancy` - a point cloud to bird's-eye-view occupancy grid;
* :func:`scale_model` - ``y = x * factor`` on ``[N, F]``, the simplest batchable model;
* :func:`failing_model` - ``y = 2 x`` that raises inside onnxruntime whenever
  any element of the batch equals :data:`FAIL_MARKER`, to test error isolation.

Every model has a dynamic batch axis ``N``. A user's own model drops in by path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fusion.errors import UsageError

FAIL_MARKER = -999.0
"""A value that makes :func:`failing_model` fail the whole batch it appears in."""

MODEL_FILES = Path(__file__).resolve().parent / "model_files"
"""Where the shipped ``.onnx`` files are (one per name and argument set)."""

SHIPPED: dict[str, tuple[dict[str, Any], ...]] = {
    "scale_model": ({},),
    "failing_model": ({},),
    "sobel_edges": ({},),
    "tiny_cnn": ({},),
    "mid_cnn": ({},),
    "bev_occupancy": ({}, {"points": 2048}, {"extent": 20.0}),
}
"""The argument sets (beyond the defaults) whose models ship as files."""


def shipped_file(name: str, arguments: dict[str, Any]) -> Path:
    """The file a model ``name`` built with ``arguments`` (non-default only) ships as."""
    suffix = "".join(f"-{key}={arguments[key]}" for key in sorted(arguments))
    return MODEL_FILES / f"{name}{suffix}.onnx"


def _model(name: str, signature: Callable[..., bytes], *args: Any, **kwargs: Any) -> bytes:
    bound = inspect.signature(signature).bind(*args, **kwargs)
    defaults = {key: p.default for key, p in inspect.signature(signature).parameters.items()}
    given = {k: v for k, v in bound.arguments.items() if v != defaults[k]}
    if given in SHIPPED[name]:
        return shipped_file(name, given).read_bytes()
    try:
        from fusion.workers import _model_builders
    except ImportError as err:
        raise UsageError(
            f"{name}({', '.join(f'{k}={v!r}' for k, v in given.items())}) is not shipped "
            f"as a file and building it needs onnx ({err}): pip install onnx"
        ) from err
    builder: Callable[..., bytes] = getattr(_model_builders, name)
    return builder(*args, **kwargs)


def scale_model(features: int = 4, factor: float = 2.0) -> bytes:
    """``y = x * factor`` with ``x``, ``y`` of shape ``[N, features]`` float32."""
    return _model("scale_model", scale_model, features, factor)


def failing_model(features: int = 4, marker: float = FAIL_MARKER) -> bytes:
    """``y = 2 x`` on ``[N, features]`` that fails any batch containing ``marker``.

    The failure is real, raised by onnxruntime at run time: the output is
    reshaped to ``[N + flag, features]`` where ``flag`` is 1 if any element
    equals ``marker``, and a reshape that changes the element count is an error.
    """
    return _model("failing_model", failing_model, features, marker)


def sobel_edges(height: int | str = "H", width: int | str = "W") -> bytes:
    """Edge magnitude of RGB images: ``image [N, 3, H, W]`` -> ``edges [N, 1, H, W]``.

    Grayscale by a 1x1 convolution with the BT.601 luma weights, then the two
    3x3 Sobel kernels; ``height``/``width`` fix the spatial size or leave it dynamic.
    """
    return _model("sobel_edges", sobel_edges, height, width)


def tiny_cnn(size: int = 224, classes: int = 10, seed: int = 0) -> bytes:
    """A small image classifier: ``image [N, 3, size, size]`` -> ``logits [N, classes]``.

    Three 3x3 stride-2 convolutions (3->16->32->64 channels) with ReLU, global
    average pooling and a linear layer; weights drawn from ``seed``.
    """
    return _model("tiny_cnn", tiny_cnn, size, classes, seed)


def mid_cnn(size: int = 224, classes: int = 10, seed: int = 0) -> bytes:
    """A mid-size image classifier, about 0.3 GMAC per 224x224 image.

    ``image [N, 3, size, size]`` -> ``logits [N, classes]``; weights drawn from ``seed``.
    """
    return _model("mid_cnn", mid_cnn, size, classes, seed)


def bev_occupancy(grid: int = 32, extent: float = 16.0, points: int | str = "P") -> bytes:
    """Bird's-eye-view occupancy: ``points [N, P, 3]`` -> ``occupancy [N, grid, grid]``.

    The square ``[-extent, extent)`` metres in x and y is cut into ``grid`` x
    ``grid`` cells; a cell is 1 where at least one point falls in it.
    """
    return _model("bev_occupancy", bev_occupancy, grid, extent, points)
