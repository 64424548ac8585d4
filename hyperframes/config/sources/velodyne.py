"""``type = "velodyne"``: a Velodyne LiDAR, a capture or live UDP
(:class:`adapters.lidar.VelodyneSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class VelodyneConfig(SourceOptions):
    type: Literal["velodyne"]
    model: str = "auto"
    """told from the packets; or `"VLP-16"`, `"Puck-Hi-Res"`, `"HDL-32E"`, `"VLP-32C"`,
    `"HDL-64E-S2"`, `"HDL-64E-S3"`, `"VLS-128"`, `"Alpha-Prime"`, checked against the packets"""
    calibration: str | None = None
    """the unit's `db.xml` or ROS YAML; required for an HDL-64E"""
    pcap: str | None = None
    """a capture file"""
    port: int | None = Field(None, ge=0, le=65535)
    """live UDP"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)
    """live: the socket's receive buffer in bytes (the effective size is logged)"""
    sender: UdpSender = None
    """none: the first sender heard, live or in the pcap; `"10.0.0.5"` or `"10.0.0.5:2368"`;
    others are `foreign_sender`"""

    summary: ClassVar[str] = "Exactly one of `pcap` or `port`."
    see: ClassVar[str] = "lidar.md"
    target: ClassVar[str | None] = "adapters.lidar:VelodyneSource"

    @model_validator(mode="after")
    def _one_input(self) -> VelodyneConfig:
        if (self.pcap is None) == (self.port is None):
            raise ValueError("give exactly one of 'pcap' (a file) or 'port' (live UDP)")
        return self

    def build(self, context: BuildContext) -> Source:
        from adapters.lidar import VelodyneSource

        return VelodyneSource(name=self.name, **self.kwargs())
