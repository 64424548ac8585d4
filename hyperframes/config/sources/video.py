"""``type = "video"``: a video file, stream or capture device (:class:`~adapters.VideoSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import AliasChoices, Field, field_validator

from hyperframes.config._base import _Sized
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class VideoConfig(SourceOptions, _Sized):
    """A video file, stream URL or capture device (:class:`adapters.VideoSource`)."""

    type: Literal["video"]
    url: str
    """a file, `rtsp://`, `udp://`, `tcp://`, `http://`, ..."""
    pixel_format: Literal["rgb24", "bgr24", "gray", "yuv420p"] = "rgb24"
    hwaccel: str | None = None
    """`"auto"`, `"cuda"`, ..."""
    live: bool | None = None
    """none: `udp`, `tcp`, `rtsp`, `rtmp`, `srt`, `http(s)` URLs and capture devices are live"""
    read_timeout_s: float | None = Field(
        None, gt=0, validation_alias=AliasChoices("read_timeout_s", "read_timeout")
    )
    """none: 5 for live inputs"""
    open_timeout_s: float | None = Field(
        10.0, gt=0, validation_alias=AliasChoices("open_timeout_s", "open_timeout")
    )
    jump_threshold_s: float = Field(1.0, gt=0)
    """timestamps jumping more start a new segment"""
    options: dict[str, str] = {}
    """FFmpeg input options (`{ fflags = "nobuffer", probesize = "32768" }`)"""
    input_format: str | None = None
    stream: int = Field(0, ge=0)
    """which video stream of the input"""
    max_reconnects: int | None = Field(None, ge=0)
    """none: for ever"""
    backoff_max_s: float = Field(5.0, gt=0)
    """the longest wait between reconnect attempts (they start at 0.1 s and double)"""

    summary: ClassVar[str] = (
        "`width` and `height` resize in the decoder (both or neither; none: the stream's size)."
    )
    see: ClassVar[str] = "video.md"
    target: ClassVar[str | None] = "adapters.video:VideoSource"
    arguments: ClassVar[dict[str, str | None]] = {
        "read_timeout_s": "read_timeout",
        "open_timeout_s": "open_timeout",
        "jump_threshold_s": "jump_threshold",
        "backoff_max_s": None,
    }

    @field_validator("options", mode="before")
    @classmethod
    def _options_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):  # TOML numbers and booleans are fine: FFmpeg takes text
            return {
                k: (str(v).lower() if isinstance(v, bool) else str(v))
                if isinstance(v, (int, float, bool))
                else v
                for k, v in value.items()
            }
        return value

    def build(self, context: BuildContext) -> Source:
        from adapters.video import VideoSource

        return VideoSource(
            name=self.name,
            backoff=(min(0.1, self.backoff_max_s), self.backoff_max_s),
            keep_packets=self.name in context.copied,
            **self.kwargs(),
        )
