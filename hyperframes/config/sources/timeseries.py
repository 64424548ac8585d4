"""``type = "timeseries_csv"`` and ``"timeseries_udp"``: samples of a CSV file, or live
from UDP datagrams (:class:`adapters.TimeSeriesSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source

RECORD_GATHER_MS = 50.0
"""A UDP time series' gather in a ``record`` nothing watches live: the frames only go
to disk (in chunks of a second), so waking 20 times a second instead of 100 costs
nothing a user sees and about half the CPU per frame at 1 kHz (BENCHMARKS.md)."""

Kind = Literal["timeseries", "imu", "gnss", "can"]
TimeUnit = Literal["s", "ms", "us", "ns"]


class TimeSeriesCsvConfig(SourceOptions):
    type: Literal["timeseries_csv"]
    path: str
    time_column: str = "t"
    time_unit: TimeUnit = "s"
    columns: list[str] | None = None
    """none: all"""
    kind: Kind = "timeseries"

    see: ClassVar[str] = "timeseries.md"
    target: ClassVar[str | None] = "adapters._timeseries:TimeSeriesSource.from_csv"

    def build(self, context: BuildContext) -> Source:
        from adapters import TimeSeriesSource

        return TimeSeriesSource.from_csv(name=self.name, **self.kwargs())


class TimeSeriesUdpConfig(SourceOptions):
    """Live samples from UDP datagrams (:meth:`adapters.TimeSeriesSource.from_udp`)."""

    type: Literal["timeseries_udp"]
    port: int = Field(ge=0, le=65535)
    host: str = "127.0.0.1"
    format: Literal["jsonl", "msgpack"] = "jsonl"
    time_field: str | None = "t"
    """the field holding each sample's stamp; `""`: the arrival time"""
    time_unit: TimeUnit = "ns"
    fields: list[str] | None = None
    """none: inferred"""
    kind: Kind = "timeseries"
    rate_hz: float | None = Field(None, gt=0)
    block: int = Field(1, ge=1)
    """rows per frame"""
    jump_threshold_s: float = Field(1.0, gt=0)
    sender: UdpSender = None
    """none: the first sender heard; `"10.0.0.5"` or `"10.0.0.5:5000"`"""
    sender_timeout_s: float | None = Field(0.5, gt=0)
    """silence before another sender is followed (without `sender`)"""
    recv_buffer: int | None = Field(None, gt=0)
    """none: the system's; bytes"""
    gather_ms: float | None = Field(None, ge=0, le=1000)
    """none: 10, or 50 in a `record` with no `--serve` nor `--to-ros2`, where frames only go
    to disk: a fast stream waits until the next multiple of this on the clock between reads,
    each datagram keeping its kernel receive time, so receivers and the hub's deadline wake
    together; 0: read each at once"""

    see: ClassVar[str] = "timeseries.md"
    target: ClassVar[str | None] = "adapters._timeseries:TimeSeriesSource.from_udp"
    arguments: ClassVar[dict[str, str | None]] = {
        "time_field": None,
        "jump_threshold_s": "jump_threshold",
        "sender_timeout_s": "sender_timeout",
        "gather_ms": None,
    }

    def build(self, context: BuildContext) -> Source:
        from adapters import TimeSeriesSource

        gather = self.gather_ms if self.gather_ms is not None else context.gather_ms
        kwargs: dict[str, Any] = self.kwargs()
        if gather is not None:
            kwargs["gather"] = gather / 1e3
        return TimeSeriesSource.from_udp(
            name=self.name, time_field=self.time_field or None, **kwargs
        )
