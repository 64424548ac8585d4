"""hyperframes core: frames, clocks, channels, sync policies, the hub, sources, workers.

The bottom floor: it imports nothing else of ours. The batch-worker names
load on first use (PEP 562) and onnxruntime only with the first model, so
``import fusion`` stays cheap. So do the async names (channels, the hub, the
pipeline, ``Source``, the clocks of ``fusion._timing``): they pull in anyio
and asyncio, which a command reading a file's stamps never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports, rewrite_module
from fusion._frames import Frame, FrameGroup, SensorSpec
from fusion._ledger import InputLedger, LedgerStatistics
from fusion._wallclock import WallAnchor, WallClock, reference_to_utc, sample_anchor
from fusion.clock import ClockModel, FixedOffset, Identity, OnlineClock
from fusion.errors import (
    ConfigError,
    DeadlineExpired,
    FrameFormatError,
    HyperframesError,
    SourceError,
    UsageError,
    WorkerError,
    frame_context,
)
from fusion.policies import ApproximateTime, ExactTime, Nearest, PolicyStatistics, SyncPolicy

if TYPE_CHECKING:
    from fusion._buffers import aligned_empty
    from fusion._channels import ChannelReceiver, ChannelSender, ChannelStatistics, open_channel
    from fusion._clock_envelope import LowerEnvelope
    from fusion._continuity import Continuity, Discontinuity, OpeningBurst, StreamWatch
    from fusion._frames import Overflow, SensorKind
    from fusion._hub import HubStatistics, LatencySummary, SensorStatistics, SyncHub
    from fusion._metrics import prometheus_text
    from fusion._pipeline import Pipeline, PipelineStatistics, SensorStage, Stage, StageStatistics
    from fusion._source import Source
    from fusion._timing import (
        Clock,
        MonotonicClock,
        Pacer,
        VirtualClock,
        current_clock,
        run_sync,
        use_clock,
    )
    from fusion.workers import BatchWorker, ChangeGate, WorkerResult, WorkerStatistics

__all__ = [
    "ApproximateTime",
    "BatchWorker",
    "ChangeGate",
    "ChannelReceiver",
    "ChannelSender",
    "ChannelStatistics",
    "Clock",
    "ClockModel",
    "ConfigError",
    "Continuity",
    "DeadlineExpired",
    "Discontinuity",
    "ExactTime",
    "FixedOffset",
    "Frame",
    "FrameFormatError",
    "FrameGroup",
    "HubStatistics",
    "HyperframesError",
    "Identity",
    "InputLedger",
    "LatencySummary",
    "LedgerStatistics",
    "LowerEnvelope",
    "MonotonicClock",
    "Nearest",
    "OnlineClock",
    "OpeningBurst",
    "Overflow",
    "Pacer",
    "Pipeline",
    "PipelineStatistics",
    "PolicyStatistics",
    "SensorKind",
    "SensorSpec",
    "SensorStage",
    "SensorStatistics",
    "Source",
    "SourceError",
    "Stage",
    "StageStatistics",
    "StreamWatch",
    "SyncHub",
    "SyncPolicy",
    "UsageError",
    "VirtualClock",
    "WallAnchor",
    "WallClock",
    "WorkerError",
    "WorkerResult",
    "WorkerStatistics",
    "aligned_empty",
    "current_clock",
    "frame_context",
    "open_channel",
    "prometheus_text",
    "reference_to_utc",
    "run_sync",
    "sample_anchor",
    "use_clock",
]

rewrite_module(globals(), __name__)

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Continuity": "fusion._continuity",
        "Discontinuity": "fusion._continuity",
        "LowerEnvelope": "fusion._clock_envelope",
        "OpeningBurst": "fusion._continuity",
        "Overflow": "fusion._frames",
        "Pacer": "fusion._timing",
        "SensorKind": "fusion._frames",
        "Stage": "fusion._pipeline",
        "StreamWatch": "fusion._continuity",
        "aligned_empty": "fusion._buffers",
        "prometheus_text": "fusion._metrics",
        **dict.fromkeys(
            ("ChannelReceiver", "ChannelSender", "ChannelStatistics", "open_channel"),
            "fusion._channels",
        ),
        **dict.fromkeys(
            ("HubStatistics", "LatencySummary", "SensorStatistics", "SyncHub"), "fusion._hub"
        ),
        **dict.fromkeys(
            ("Pipeline", "PipelineStatistics", "SensorStage", "StageStatistics"),
            "fusion._pipeline",
        ),
        "Source": "fusion._source",
        **dict.fromkeys(
            ("Clock", "MonotonicClock", "VirtualClock", "current_clock", "run_sync", "use_clock"),
            "fusion._timing",
        ),
        "BatchWorker": "fusion.workers._worker",
        "ChangeGate": "fusion.workers._gate",
        "WorkerResult": "fusion.workers._results",
        "WorkerStatistics": "fusion.workers._results",
    },
)
