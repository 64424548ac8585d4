"""``type = "ros2"``: live ROS 2 topics over DDS, one sensor per topic
(:class:`adapters.Ros2Source`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import StrictModel
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class Ros2QosConfig(StrictModel):
    """A ROS 2 topic's QoS (keys not given keep the sensor-data profile's)."""

    reliability: Literal["best_effort", "reliable"] = "best_effort"
    durability: Literal["volatile", "transient_local"] = "volatile"
    depth: int = Field(5, ge=1)


class Ros2Config(SourceOptions):
    """Live ROS 2 topics over DDS (:class:`adapters.Ros2Source`), one sensor per topic.

    ``topics`` maps topic -> sensor name (``{ "/imu/data" = "imu" }``);
    ``types`` gives a topic's ROS 2 type when no publisher may announce it at
    start; ``qos`` a topic's QoS table; ``config`` a Cyclone DDS XML config
    (or ``file://`` URI; default ``CYCLONEDDS_URI``); ``loopback = true``
    keeps DDS on 127.0.0.1 (multicast off, unicast discovery).
    ``name`` names the source only (default ``"ros2"``)."""

    type: Literal["ros2"]
    name: str = Field("ros2", min_length=1)
    topics: dict[str, str] | list[str] = Field(min_length=1)
    """`{ "/topic" = "sensor" }`, or a list of topics"""
    domain_id: int = Field(0, ge=0, le=232)
    """ROS 2's `ROS_DOMAIN_ID`"""
    types: dict[str, str] = Field(default_factory=dict)
    """`{ "/topic" = "sensor_msgs/msg/Imu" }`; a topic not listed takes the type its
    publishers announce"""
    qos: dict[str, Ros2QosConfig] = Field(default_factory=dict)
    """per topic: `{ reliability = "best_effort", durability = "volatile", depth = 5 }`, each
    key optional; `"reliable"`, `"transient_local"`"""
    config: str | None = None
    """none: `CYCLONEDDS_URI`; a Cyclone DDS XML or a `file://` URI"""
    loopback: bool = False
    """true keeps DDS on 127.0.0.1, no multicast (not with `config`)"""
    ros_distro: str | None = None
    """none: rosbags' newest LTS"""
    discover_s: float = Field(5.0, ge=0)
    """how long to wait for the publishers to announce the types"""
    decode_images: bool = True
    gap_s: float = Field(1.0, gt=0)
    """a silence this long is a gap on the next frame"""

    summary: ClassVar[str] = (
        '`name` names the source only (`"ros2"`); the sensors are the topics\' names.'
    )
    see: ClassVar[str] = "ros2.md"
    target: ClassVar[str | None] = "adapters.ros:Ros2Source"
    arguments: ClassVar[dict[str, str | None]] = {"qos": None, "config": None, "loopback": None}
    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_config(self) -> Ros2Config:
        if self.loopback and self.config is not None:
            raise ValueError("give 'config' or 'loopback = true', not both")
        return self

    def sensor_names(self) -> list[str]:
        if isinstance(self.topics, dict):
            return list(self.topics.values())
        from adapters.bags import sensor_name

        return [sensor_name(t) for t in self.topics]

    def build(self, context: BuildContext) -> Source:
        from adapters.ros import Ros2Source, TopicQos, loopback_config

        return Ros2Source(
            config=loopback_config() if self.loopback else self.config,
            qos={t: TopicQos(q.reliability, q.durability, q.depth) for t, q in self.qos.items()},
            **self.kwargs(),
        )
