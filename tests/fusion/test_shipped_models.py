"""The shipped ``.onnx`` files are the builders' models, byte for byte, and load without onnx."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import fusion.workers._models as models
from fusion.errors import UsageError
from fusion.workers import _model_builders

SETS = [(name, args) for name, sets in models.SHIPPED.items() for args in sets]


@pytest.mark.parametrize(("name", "arguments"), SETS, ids=[f"{n}{a}" for n, a in SETS])
def test_a_shipped_model_is_its_builders_bytes(name: str, arguments: dict[str, object]) -> None:
    defaults = {
        k: p.default for k, p in inspect.signature(getattr(models, name)).parameters.items()
    }
    assert all(defaults[k] != v for k, v in arguments.items())  # else never looked up
    built = getattr(_model_builders, name)(**arguments)
    assert models.shipped_file(name, arguments).read_bytes() == built
    assert getattr(models, name)(**arguments) == built


def test_every_shipped_file_is_listed() -> None:
    listed = {models.shipped_file(n, a).name for n, a in SETS}
    assert {p.name for p in models.MODEL_FILES.glob("*.onnx")} == listed


def test_other_arguments_are_built_and_run() -> None:
    session = ort.InferenceSession(models.scale_model(3, 0.5), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"x": np.ones((2, 3), np.float32)})
    assert out.tolist() == [[0.5] * 3] * 2


def test_without_onnx_shipped_models_load_and_others_say_what_to_install(
    tmp_path: Path,
) -> None:
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "__init__.py").write_text("raise ImportError('onnx blocked')\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from fusion.workers import _models as models\n"
        "assert len(models.bev_occupancy(points=2048)) > 0\n"
        "try:\n    models.scale_model(3)\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        "print('onnx' in sys.modules and sys.modules['onnx'] is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    first, second = done.stdout.splitlines()
    assert first.startswith(f"{UsageError.__name__} scale_model(features=3) is not shipped")
    assert "pip install onnx" in first
    assert second == "False"
