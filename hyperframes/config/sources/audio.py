"""``type = "audio"``: audio of a file, stream or capture device (:class:`adapters.AudioSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion.source import Source


class AudioConfig(SourceOptions):
    """Audio of a file, stream or capture device (:class:`adapters.AudioSource`): frames of
    ``frame_ms`` of float32 PCM samples (channels x samples)."""

    type: Literal["audio"]
    url: str
    """a file, a video's audio track, `udp://`/`rtp://`/`rtsp://`/`tcp://`/`srt://`/`http(s)://`
    streams, an SDP file, a capture device with `input_format`"""
    stream: int = Field(0, ge=0)
    """which audio stream of the input (a video file's audio track: 0)"""
    frame_ms: float = Field(20.0, gt=0, le=60_000)
    """each frame's length"""
    frame_samples: int | None = Field(None, ge=1, le=10_000_000)
    """none: from `frame_ms`"""
    rate: int | None = Field(None, ge=1, le=1_536_000)
    """none: the stream's own; else resampled to this rate (Hz)"""
    layout: str | None = None
    """none: the stream's own; else a channel layout (`"mono"`, `"stereo"` ...)"""
    input_format: str | None = None
    """FFmpeg's input format: `"alsa"`, `"pulse"`, `"avfoundation"`, `"dshow"` for a capture
    device; `"sdp"` for an RTP session description"""
    options: dict[str, str] = {}
    """FFmpeg input options"""
    live: bool | None = None
    """none: from the URL"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    open_timeout_s: float | None = Field(10.0, gt=0)
    read_timeout_s: float | None = Field(5.0, gt=0)

    see: ClassVar[str] = "audio.md"
    target: ClassVar[str | None] = "adapters.audio:AudioSource"
    arguments: ClassVar[dict[str, str | None]] = {
        "open_timeout_s": "open_timeout",
        "read_timeout_s": "read_timeout",
    }

    @field_validator("options", mode="before")
    @classmethod
    def _options_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):  # FFmpeg takes text
            return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        return value

    def build(self, context: BuildContext) -> Source:
        from adapters.audio import AudioSource

        return AudioSource(name=self.name, **self.kwargs())
