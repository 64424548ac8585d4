"""``type = "radar"``: an automotive radar, Continental ARS548 or ARS408
(:class:`adapters.RadarSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class RadarConfig(SourceOptions):
    """An automotive radar (:class:`adapters.RadarSource`), two sensors ``<name>_detections``
    and ``<name>_objects``. The Continental ARS548 (``model = "ars548"``): exactly one of
    ``pcap``, ``bag`` (nebula's packets, on ``topic``) or ``port`` (live UDP, ``group`` a
    multicast group to join). The Continental ARS408 (``model = "ars408"``, over CAN):
    exactly one of ``log`` (a CAN log python-can reads) or ``interface`` (a python-can
    bus, with ``channel``, ``bitrate``, ``bus_options``)."""

    type: Literal["radar"]
    model: Literal["ars548", "ars408"] = "ars548"
    """the Continental ARS548 over UDP, or the ARS408 over CAN"""
    log: str | None = None
    """ARS408: a CAN log python-can reads (candump `-l`, ASC, BLF, TRC ...)"""
    interface: str | None = None
    """ARS408: a python-can bus (`"socketcan"`, `"udp_multicast"` ...)"""
    channel: str | int | None = None
    """ARS408: the bus's channel"""
    bitrate: int | None = Field(None, gt=0)
    """ARS408"""
    bus_options: dict[str, Any] = Field(default_factory=dict)
    """ARS408: further `can.Bus` arguments, as for `"can"`"""
    pcap: str | None = None
    """ARS548: a pcap/pcapng capture of its datagrams to `data_port`"""
    bag: str | None = None
    """ARS548: a ROS 1/2 bag of nebula's `nebula_msgs/msg/NebulaPackets`"""
    topic: str | None = None
    """none: the bag's only such topic"""
    port: int | None = Field(None, ge=0, le=65535)
    """ARS548: live UDP on `host`"""
    host: str = "0.0.0.0"
    group: str | None = None
    """a multicast group to join (the sensor sends to `"224.0.2.2"`)"""
    data_port: int = Field(42102, ge=1, le=65535)
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    sender: UdpSender = None
    """none: the first sender heard; the only sender taken"""
    recv_buffer: int = Field(8 * 1024 * 1024, gt=0)

    summary: ClassVar[str] = (
        "Two sensors `<name>_detections` and `<name>_objects`. The ARS548 takes exactly one "
        'of `pcap`, `bag` or `port`; the ARS408 (`model = "ars408"`: clusters in '
        "`<name>_detections`, objects in `<name>_objects`) exactly one of `log` or `interface`."
    )
    see: ClassVar[str] = "radar.md#continental-ars408-over-can"
    target: ClassVar[str | None] = "adapters.radar:RadarSource"
    every_sensor: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_input(self) -> RadarConfig:
        if self.model == "ars408":
            given = [k for k in ("log", "interface") if getattr(self, k) is not None]
            stray = [k for k in ("pcap", "bag", "port") if getattr(self, k) is not None]
            if len(given) != 1 or stray:
                raise ValueError(
                    "an ARS408 takes exactly one of 'log' (a CAN log) or 'interface' (a "
                    f"python-can bus), found {given + stray or 'none'}"
                )
            return self
        if self.log is not None or self.interface is not None:
            raise ValueError("'log' and 'interface' are for model = \"ars408\" (CAN)")
        given = [k for k in ("pcap", "bag", "port") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'pcap' (a capture), 'bag' (nebula's packets) or 'port' "
                f"(live UDP), found {given or 'none'}"
            )
        return self

    def sensor_names(self) -> list[str]:
        """The detections' and the objects' sensors."""
        return [f"{self.name}_detections", f"{self.name}_objects"]

    def build(self, context: BuildContext) -> Source:
        from adapters.radar import RadarSource

        return RadarSource(name=self.name, **self.kwargs())
