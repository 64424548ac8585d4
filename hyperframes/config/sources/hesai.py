"""``type = "hesai"``: a Hesai LiDAR, a pcap, a bag of packets or live UDP
(:class:`adapters.lidar._hesai.HesaiSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class HesaiConfig(SourceOptions):
    """A Hesai LiDAR (:class:`adapters.HesaiSource`): a pcap, a bag of packets or live UDP."""

    type: Literal["hesai"]
    model: str = "auto"
    """told from the packet header; or `"Pandar40P"`, `"Pandar64"`, `"PandarQT64"`,
    `"PandarQT128"`, `"PandarXT16"`, `"PandarXT32"`, `"PandarXT32M"`, `"PandarOT128"`,
    `"PandarAT128"`"""
    calibration: str | None = None
    """none: the model's built-in default angles; else the unit's angle CSV (AT128: its `.dat`),
    or `"sensor"`: asked of the sensor over PTC (TCP) when the stream starts"""
    ptc_host: str | None = None
    """none: `sender`'s address; `calibration = "sensor"`: the sensor's address"""
    ptc_port: int = Field(9347, gt=0, le=65535)
    """`calibration = "sensor"`: the sensor's PTC port"""
    ptc_timeout: float = Field(5.0, gt=0, le=60)
    """`calibration = "sensor"`: seconds for the whole request"""
    calibration_fallback: bool = False
    """`calibration = "sensor"`: the built-in angles when the sensor does not give its own
    (a warning, counted `calibration_fallback`), not a failed source"""
    pcap: str | None = None
    """a capture"""
    bag: str | None = None
    """a ROS bag of packets"""
    topic: str | None = None
    """the bag's topic, when several hold packets"""
    port: int | None = Field(None, ge=0, le=65535)
    """live UDP"""
    data_port: int = Field(2368, ge=0, le=65535)
    """a pcap's data port"""
    cut_angle: float | None = Field(None, ge=0, lt=360)
    """the model's (AT128 150, else 0): degrees where a sweep starts"""
    fov: tuple[int, int] | None = None
    """the model's (AT128 [30, 150], else all): degrees of azimuth kept, both ends"""
    min_range: float | None = Field(None, ge=0)
    """none: the sensor's; metres"""
    max_range: float | None = Field(None, gt=0)
    """none: the sensor's; metres"""
    dual_return_distance_threshold: float = Field(0.1, ge=0)
    """metres"""
    check_crc: bool = True
    partial_sweeps: bool = True
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)
    """live: the socket's receive buffer in bytes"""
    sender: UdpSender = None
    """none: the first sender heard"""

    summary: ClassVar[str] = "Exactly one of `pcap`, `bag` or `port`."
    see: ClassVar[str] = "lidar.md#hesai-hesaisource"
    target: ClassVar[str | None] = "adapters.lidar._hesai:HesaiSource"

    @model_validator(mode="after")
    def _one_input(self) -> HesaiConfig:
        if sum(x is not None for x in (self.pcap, self.bag, self.port)) != 1:
            raise ValueError("give exactly one of 'pcap', 'bag' (files) or 'port' (live UDP)")
        return self

    def build(self, context: BuildContext) -> Source:
        from adapters.lidar import HesaiSource

        return HesaiSource(name=self.name, **self.kwargs())
