"""``type = "ouster"``: an Ouster LiDAR and its IMU, a capture, an OSF file or live UDP
(:class:`adapters.lidar.OusterSource`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class OusterConfig(SourceOptions):
    type: Literal["ouster"]
    metadata: str | None = None
    """the sensor's metadata JSON, legacy or current layout; required unless `osf`"""
    pcap: str | None = None
    """none: live UDP; else a pcap or pcapng capture"""
    osf: str | None = None
    """an Ouster OSF file instead of `metadata`/`pcap` (it holds its sensors' metadata): one
    lidar `<name>`, `<name>_1` ... per lidar stream, `<lidar>_imu` where its scans carry IMU
    samples ([lidar.md](lidar.md#osf-files-oustersourceosf))"""
    lidar_port: int | None = Field(None, ge=0, le=65535)
    """none: the metadata's `udp_port_lidar`, else, reading a capture, the port its
    lidar-sized packets go to, else 7502"""
    imu_port: int | None = Field(None, ge=0, le=65535)
    """none: the same for the IMU; 7503"""
    require_imu: bool = False
    """`<name>_imu` is optional and a run without IMU packets does not fail; also true when
    `[sync]` names `<name>_imu` in `sensors`, `reference` or `windows_ms`"""
    host: UdpSender = None
    """live: only datagrams from this address (others count as `foreign_sender`)"""
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)
    """live: each port's receive buffer in bytes (the effective size is logged)"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    partial_scans: bool = True
    """scans with missing columns too, marked"""

    summary: ClassVar[str] = "Sensors `<name>` and `<name>_imu`."
    see: ClassVar[str] = "lidar.md#ouster-oustersource"
    target: ClassVar[str | None] = "adapters.lidar:OusterSource"
    every_sensor: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_input(self) -> OusterConfig:
        if self.osf is not None and (self.metadata is not None or self.pcap is not None):
            raise ValueError("give 'osf' alone (it holds the metadata), or 'metadata' (and 'pcap')")
        if self.osf is None and self.metadata is None:
            raise ValueError("give 'metadata' (the sensor's JSON) or 'osf' (an OSF file)")
        return self

    def sensor_names(self) -> list[str]:
        """The lidar and its IMU; of an OSF file, its streams' (read from the file)."""
        if self.osf is None:
            return [self.name, f"{self.name}_imu"]
        from adapters.lidar import osf_sensor_names

        try:
            return osf_sensor_names(self.osf, self.name)
        except Exception:  # the source itself says why when it is built
            return [self.name]

    def for_sync(self, asked: Collection[str]) -> OusterConfig:
        """Its IMU must produce frames when ``[sync]`` names ``<name>_imu``."""
        if f"{self.name}_imu" in asked and not self.require_imu:
            return self.model_copy(update={"require_imu": True})
        return self

    def build(self, context: BuildContext) -> Source:
        from adapters.lidar import OusterSource

        return OusterSource(name=self.name, **self.kwargs())
