"""``type = "synthetic_camera"``, ``"synthetic_lidar"``, ``"synthetic_imu"``: generated sensors
(:mod:`adapters.synthetic`) with a clock model of their own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from hyperframes.config._base import MS
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source

_TIMING = ("offset_ms", "skew_ppm", "delay_ms", "jitter_ms", "drop_prob")


class SyntheticConfig(SourceOptions):
    type: Literal["synthetic_camera", "synthetic_lidar", "synthetic_imu"]
    # A period of 1 ns to 11 days: 1e308 Hz made frames for ever, 1e-300 Hz a NaN period.
    rate_hz: float | None = Field(None, ge=1e-6, le=1e9)
    """none: 30 (camera), 10 (lidar), 200 (imu) Hz"""
    duration_s: float | None = Field(10.0, gt=0)
    seed: int = Field(0, ge=0)  # numpy's generators take no negative seed
    offset_ms: float = 0.0
    """the sensor's clock minus true time"""
    skew_ppm: float = Field(0.0, ge=-1e6, le=1e6)  # a clock at most twice as fast, or stopped
    """the sensor's clock rate error (positive: runs fast)"""
    delay_ms: float = Field(1.0, ge=0)
    """the least transport delay"""
    jitter_ms: float = Field(0.0, ge=0)
    """mean of the exponential extra delay"""
    drop_prob: float = Field(0.0, ge=0, le=1)
    """the chance that a frame is lost on the way"""
    realtime: bool = True
    """paced on the runtime clock"""

    target: ClassVar[str | None] = "adapters.synthetic:SyntheticSensor"
    arguments: ClassVar[dict[str, str | None]] = dict.fromkeys(("rate_hz", *_TIMING))

    def build(self, context: BuildContext) -> Source:
        from adapters.synthetic import SensorTiming, SyntheticCamera, SyntheticImu, SyntheticLidar

        cls = {
            "synthetic_camera": SyntheticCamera,
            "synthetic_lidar": SyntheticLidar,
            "synthetic_imu": SyntheticImu,
        }[self.type]
        timing = SensorTiming(
            offset_ns=int(self.offset_ms * MS),
            skew_ppm=self.skew_ppm,
            delay_ns=int(self.delay_ms * MS),
            jitter_mean_ns=int(self.jitter_ms * MS),
            drop_prob=self.drop_prob,
        )
        rate: dict[str, Any] = {} if self.rate_hz is None else {"rate_hz": self.rate_hz}
        source: Source = cls(
            self.name, timing=timing, optional=self.optional, **rate, **self.kwargs()
        )
        return source
