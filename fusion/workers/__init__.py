"""Batch inference: ONNX Runtime sessions, dynamic batching, ordering, frame skipping.

See :class:`BatchWorker` for the pipeline; :mod:`fusion.workers._models` builds
the small ONNX models used by tests, examples and benchmarks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from fusion.workers._batcher import Batch, BatcherStatistics, DynamicBatcher
    from fusion.workers._gate import ChangeGate, GateDecision, GateStatistics
    from fusion.workers._models import bev_occupancy, sobel_edges
    from fusion.workers._multistream import MuxStatistics, StreamMux
    from fusion.workers._preprocess import ImagePreprocess, group_input
    from fusion.workers._reorder import ReorderBuffer
    from fusion.workers._resize_plan import apply_resize_plan, image_input_of, plan_resize
    from fusion.workers._results import WorkerResult, WorkerStatistics
    from fusion.workers._sessions import (
        ModelSession,
        ProviderFailure,
        free_cores,
        nvidia_gpu_present,
        probe_provider,
    )
    from fusion.workers._worker import BatchWorker


__all__ = [
    "Batch",
    "BatchWorker",
    "BatcherStatistics",
    "ChangeGate",
    "DynamicBatcher",
    "GateDecision",
    "GateStatistics",
    "ImagePreprocess",
    "ModelSession",
    "MuxStatistics",
    "ProviderFailure",
    "ReorderBuffer",
    "StreamMux",
    "WorkerResult",
    "WorkerStatistics",
    "apply_resize_plan",
    "bev_occupancy",
    "free_cores",
    "group_input",
    "image_input_of",
    "nvidia_gpu_present",
    "plan_resize",
    "probe_provider",
    "sobel_edges",
]

_HOMES = {
    "apply_resize_plan": "fusion.workers._resize_plan",
    "bev_occupancy": "fusion.workers._models",
    "free_cores": "fusion.workers._sessions",
    "group_input": "fusion.workers._preprocess",
    "image_input_of": "fusion.workers._resize_plan",
    "nvidia_gpu_present": "fusion.workers._sessions",
    "plan_resize": "fusion.workers._resize_plan",
    "probe_provider": "fusion.workers._sessions",
    "sobel_edges": "fusion.workers._models",
    "Batch": "fusion.workers._batcher",
    "BatchWorker": "fusion.workers._worker",
    "BatcherStatistics": "fusion.workers._batcher",
    "ChangeGate": "fusion.workers._gate",
    "DynamicBatcher": "fusion.workers._batcher",
    "GateDecision": "fusion.workers._gate",
    "GateStatistics": "fusion.workers._gate",
    "ImagePreprocess": "fusion.workers._preprocess",
    "ModelSession": "fusion.workers._sessions",
    "MuxStatistics": "fusion.workers._multistream",
    "ProviderFailure": "fusion.workers._sessions",
    "ReorderBuffer": "fusion.workers._reorder",
    "StreamMux": "fusion.workers._multistream",
    "WorkerResult": "fusion.workers._results",
    "WorkerStatistics": "fusion.workers._results",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
