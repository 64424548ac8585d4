"""hyperframes core: frames, clocks, channels, sync policies, the hub, workers."""

from fusion._exports import rewrite_module
from fusion.channels import ChannelReceiver, ChannelSender, ChannelStatistics, open_channel
from fusion.clock import ClockModel, FixedOffset, Identity, OnlineClock
from fusion.errors import (
    ConfigError,
    CorruptChunk,
    DeadlineExpired,
    DecodeError,
    FrameFormatError,
    HyperframesError,
    LimitExceeded,
    RecorderClosed,
    RecordingError,
    SensorTimeout,
    SourceError,
    SourceOpenError,
    TruncatedRecording,
    UnsupportedVersion,
    UsageError,
    WorkerError,
    frame_context,
)
from fusion.frames import Frame, FrameGroup, SensorSpec
from fusion.hub import HubStatistics, LatencySummary, SensorStatistics, SyncHub
from fusion.pipeline import Pipeline, PipelineStatistics, SensorStage, StageStatistics
from fusion.policies import ApproximateTime, ExactTime, Nearest, PolicyStatistics
from fusion.timing import Clock, MonotonicClock, VirtualClock, current_clock, run_sync, use_clock
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
    "CorruptChunk",
    "DeadlineExpired",
    "DecodeError",
    "ExactTime",
    "FixedOffset",
    "Frame",
    "FrameFormatError",
    "FrameGroup",
    "HubStatistics",
    "HyperframesError",
    "Identity",
    "LatencySummary",
    "LimitExceeded",
    "MonotonicClock",
    "Nearest",
    "OnlineClock",
    "Pipeline",
    "PipelineStatistics",
    "PolicyStatistics",
    "RecorderClosed",
    "RecordingError",
    "SensorSpec",
    "SensorStage",
    "SensorStatistics",
    "SensorTimeout",
    "SourceError",
    "SourceOpenError",
    "StageStatistics",
    "SyncHub",
    "TruncatedRecording",
    "UnsupportedVersion",
    "UsageError",
    "VirtualClock",
    "WorkerError",
    "WorkerResult",
    "WorkerStatistics",
    "current_clock",
    "frame_context",
    "open_channel",
    "run_sync",
    "use_clock",
]

rewrite_module(globals(), __name__)
