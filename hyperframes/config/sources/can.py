"""``type = "can"``: a CAN bus, a log or a live interface (:class:`adapters.CanSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class CanConfig(SourceOptions):
    """A CAN bus (:class:`adapters.CanSource`): exactly one of ``path`` (a log python-can
    reads) or ``interface`` (a python-can interface, with ``channel``), decoded with
    ``database`` (DBC, KCD, ARXML, SYM) when given."""

    type: Literal["can"]
    path: str | None = None
    """a CAN log python-can reads: candump `-l` `.log`, `.asc`, `.blf`, `.trc`, `.csv`,
    `.mf4`, optionally `.gz`"""
    interface: str | None = None
    """a python-can interface: `"socketcan"`, `"pcan"`, `"kvaser"`, `"vector"`,
    `"udp_multicast"`, `"socketcand"`, `"virtual"` ..."""
    channel: str | int | None = None
    """the interface's channel"""
    bitrate: int | None = Field(None, gt=0)
    fd: bool = False
    bus_options: dict[str, Any] = Field(default_factory=dict)
    """further `can.Bus` arguments of the interface, `{ port = 43113 }`"""
    database: str | None = None
    """a DBC, KCD, ARXML or SYM file: one sensor `<name>.<Message>` of decoded signals per
    message"""
    ids: list[int] = Field(default_factory=list)
    """ids that get a sensor `<name>.0x<ID>` of their own"""
    unknown: Literal["raw", "count"] = "raw"
    """ids the database does not know: `"raw"` stay raw on `<name>`, `"count"` are counted as
    `unknown_id`"""
    raw: bool = True
    """every frame also raw on `<name>`"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    block: int = Field(1, ge=1)
    """a frame per CAN frame; N: up to N rows of a sensor a frame, the fast path for long logs"""

    summary: ClassVar[str] = "Exactly one of `path` or `interface`."
    see: ClassVar[str] = "can.md"
    target: ClassVar[str | None] = "adapters.can:CanSource"
    every_sensor: ClassVar[bool] = True

    @model_validator(mode="after")
    def _one_input(self) -> CanConfig:
        if (self.path is None) == (self.interface is None):
            raise ValueError("give exactly one of 'path' (a CAN log) or 'interface' (a live bus)")
        return self

    def sensor_names(self) -> list[str]:
        """The raw sensor, the per-id ones and (with a database) one per message."""
        from adapters.can import CanDecoder

        database = self.database
        return [s for s, _ in CanDecoder(self.name, database=database, ids=self.ids).sensors()]

    def build(self, context: BuildContext) -> Source:
        from adapters.can import CanSource

        return CanSource(name=self.name, **self.kwargs())
