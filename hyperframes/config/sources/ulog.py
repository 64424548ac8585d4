"""``type = "ulog"``: a PX4 flight log, one sensor per topic (:class:`adapters.UlogSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class UlogConfig(SourceOptions):
    """A PX4 flight log (:class:`adapters.UlogSource`), one sensor per topic
    (``<name>.<topic>``); ``topics`` keeps a subset (a name or ``name.<multi_id>``);
    ``name`` names the source only (default ``"ulog"``)."""

    type: Literal["ulog"]
    name: str = Field("ulog", min_length=1)
    path: str
    """a PX4 ULog `.ulg`"""
    topics: list[str] | None = None
    """none: all; a topic name or `name.<multi_id>`: one sensor `<name>.<topic>` per instance"""
    utc: bool = False
    """`t_sensor` on the autopilot's boot clock; true: in UTC, the GPS anchor added"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    max_bytes: int = Field(4 << 30, gt=0)
    """pyulog reads a log whole"""

    summary: ClassVar[str] = '`name` names the source only (`"ulog"`).'
    see: ClassVar[str] = "ulog.md"
    target: ClassVar[str | None] = "adapters.ulog:UlogSource"
    every_sensor: ClassVar[bool] = True

    def sensor_names(self) -> list[str]:
        """The chosen topics' sensors, read from the log's header (every topic's if
        none is chosen and the log cannot be read here)."""
        from adapters.ulog import read_ulog, ulog_sensor

        try:
            content = read_ulog(self.path, self.topics, sensor=self.name, max_bytes=self.max_bytes)
        except Exception:  # the source itself says why when it is built
            return []
        return [ulog_sensor(self.name, t) for t in content.topics]

    def build(self, context: BuildContext) -> Source:
        from adapters.ulog import UlogSource

        return UlogSource(name=self.name, **self.kwargs())
