"""``type = "bag"``: topics of a ROS 1 or ROS 2 bag, one sensor per topic
(:class:`adapters.BagSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class BagConfig(SourceOptions):
    """Topics of a ROS 1 or ROS 2 bag (:class:`adapters.BagSource`), one sensor per topic.

    ``topics`` maps topic -> sensor name (``{ "/camera/image_raw" = "cam" }``);
    ``name`` names the source only (default ``"bag"``)."""

    type: Literal["bag"]
    name: str = Field("bag", min_length=1)
    path: str
    """ROS 1 `.bag`, ROS 2 `.db3`/`.mcap` or bag folder"""
    topics: dict[str, str] | list[str] | None = None
    """none: every readable topic; `{ "/topic" = "sensor" }`, or a list of topics"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    decode_images: bool = True

    summary: ClassVar[str] = (
        '`name` names the source only (`"bag"`); the sensors are the topics\' names, and the '
        "bag's stamps are kept."
    )
    target: ClassVar[str | None] = "adapters.bags:BagSource"
    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True
    recorded_stamps: ClassVar[bool] = True

    def sensor_names(self) -> list[str]:
        if isinstance(self.topics, dict):
            return list(self.topics.values())
        if isinstance(self.topics, list):
            from adapters.bags import sensor_name

            return [sensor_name(t) for t in self.topics]
        return []

    def open_ended(self) -> bool:
        return self.topics is None  # every readable topic: known once the bag is read

    def build(self, context: BuildContext) -> Source:
        from adapters.bags import BagSource

        return BagSource(**self.kwargs())
