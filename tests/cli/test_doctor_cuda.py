"""``hyperframes doctor`` on the CUDA provider: it works, or the line names what is missing."""

from __future__ import annotations

import json
import re

import pytest

from hyperframes.cli import main


def test_doctor_names_the_library_the_cuda_provider_cannot_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        pytest.skip("this onnxruntime has no CUDA provider (not onnxruntime-gpu)")
    assert main(["doctor", "--json"]) == 0
    checks = {(c["area"], c["item"]): c for c in json.loads(capsys.readouterr().out)}
    cuda = checks[("onnxruntime", "CUDAExecutionProvider")]
    if cuda["status"] == "ok":
        return  # a GPU machine with its libraries: nothing is missing
    assert cuda["status"] == "no"
    assert cuda["detail"], "a provider that does not work says why"
    if "does not load" in cuda["detail"]:
        # e.g. "libcublasLt.so.13: cannot open ... (libcublasLt.so.13 is cuBLAS (CUDA); ...)"
        named = re.search(r"\((lib[\w+-]+\.so[\d.]*) is ([^;]+);", cuda["detail"])
        assert named, cuda["detail"]
        assert named.group(1) in cuda["detail"].split(" (")[0]  # the one the loader missed
        assert "docs/workers.md" in cuda["detail"] or "NVIDIA driver" in cuda["detail"]
