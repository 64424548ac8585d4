"""Batch inference: ONNX Runtime sessions, dynamic batching, ordering, frame skipping.

See :class:`BatchWorker` for the pipeline; :mod:`fusion.workers.models` builds
the small ONNX models used by tests, examples and benchmarks.
"""

from fusion.workers.batcher import Batch, BatcherStatistics, DynamicBatcher
from fusion.workers.gate import ChangeGate, GateDecision, GateStatistics
from fusion.workers.multistream import MuxStatistics, StreamMux
from fusion.workers.preprocess import ImagePreprocess
from fusion.workers.reorder import ReorderBuffer
from fusion.workers.results import WorkerResult, WorkerStatistics
from fusion.workers.sessions import ModelSession, ProviderFailure
from fusion.workers.worker import BatchWorker

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
]
