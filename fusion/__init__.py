"""hyperframes core: frames, clocks, channels, sync policies, the hub, sources, workers.

The bottom floor: it imports nothing else of ours. The batch-worker names
load on first use (PEP 562) and onnxruntime only with the first model, so
``import fusion`` stays cheap. So do the async names (channels, the hub, the
pipeline, ``Source``, the clocks of ``fusion.timing``): they pull in anyio
and asyncio, which a command reading a file's stamps never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports, rewrite_module
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
from fusion.frames import Frame, FrameGroup, SensorSpec
from fusion.ledger import InputLedger, LedgerStatistics
from fusion.policies import ApproximateTime, ExactTime, Nearest, PolicyStatistics, SyncPolicy
from fusion.wallclock import WallAnchor, WallClock, reference_to_utc, sample_anchor

if TYPE_CHECKING:
    from fusion.channels import ChannelReceiver, ChannelSender, ChannelStatistics, open_channel
    from fusion.hub import HubStatistics, LatencySummary, SensorStatistics, SyncHub
    from fusion.pipeline import Pipeline, PipelineStatistics, SensorStage, StageStatistics
    from fusion.source import Source
    from fusion.timing import (
        Clock,
        MonotonicClock,
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
    "DeadlineExpired",
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
    "MonotonicClock",
    "Nearest",
    "OnlineClock",
    "Pipeline",
    "PipelineStatistics",
    "PolicyStatistics",
    "SensorSpec",
    "SensorStage",
    "SensorStatistics",
    "Source",
    "SourceError",
    "StageStatistics",
    "SyncHub",
    "SyncPolicy",
    "UsageError",
    "VirtualClock",
    "WallAnchor",
    "WallClock",
    "WorkerError",
    "WorkerResult",
    "WorkerStatistics",
    "current_clock",
    "frame_context",
    "open_channel",
    "reference_to_utc",
    "run_sync",
    "sample_anchor",
    "use_clock",
]

rewrite_module(globals(), __name__)

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("ChannelReceiver", "ChannelSender", "ChannelStatistics", "open_channel"),
            "fusion.channels",
        ),
        **dict.fromkeys(
            ("HubStatistics", "LatencySummary", "SensorStatistics", "SyncHub"), "fusion.hub"
        ),
        **dict.fromkeys(
            ("Pipeline", "PipelineStatistics", "SensorStage", "StageStatistics"),
            "fusion.pipeline",
        ),
        "Source": "fusion.source",
        **dict.fromkeys(
            ("Clock", "MonotonicClock", "VirtualClock", "current_clock", "run_sync", "use_clock"),
            "fusion.timing",
        ),
        "BatchWorker": "fusion.workers.worker",
        "ChangeGate": "fusion.workers.gate",
        "WorkerResult": "fusion.workers.results",
        "WorkerStatistics": "fusion.workers.results",
    },
)
