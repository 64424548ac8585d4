"""``type = "replay"``: a ``.hfr`` recording played again (:class:`recordings.Replay`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class ReplayConfig(SourceOptions):
    type: Literal["replay"]
    path: str
    """a `.hfr`"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""

    target: ClassVar[str | None] = "recordings:Replay"
    recorded_stamps: ClassVar[bool] = True

    def open_ended(self) -> bool:
        return True  # its sensors are the recording's

    def build(self, context: BuildContext) -> Source:
        from recordings import Replay

        return Replay(**self.kwargs())
