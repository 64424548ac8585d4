"""``type = "audio"``: audio of a file, stream or capture device (:class:`adapters.AudioSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class AudioConfig(SourceOptions):
    """Audio of a file, stream or capture device (:class:`adapters.AudioSource`): frames of
    ``frame_ms`` of float32 PCM samples (channels x samples)."""

    type: Literal["audio"]
    url: str | None = None
    """`device` names the input; else a file, a video's audio track, a stream
    (`udp://`, `rtp://`, `rtsp://`, `tcp://`, `srt://`, `http(s)://`), an `.sdp` file (RTP),
    a capture device with `input_format`"""
    device: str | None = None
    """`url` names the input; else a capture device as input and device: `"alsa:hw:0"`,
    `"pulse:default"`, `"avfoundation::0"`, `"dshow:audio=Microphone"`, `"lavfi:sine=f=440"`"""
    transport: Literal["tcp", "udp", "udp_multicast", "http", "https"] | None = None
    """FFmpeg's choice (UDP, then TCP); else RTSP's transport (`rtsp_transport`)"""
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
    """a live input silent this long: reconnected (network) or ended"""
    reconnect: bool | None = None
    """none: live network inputs (`udp`, `rtp`, `rtsp`, SDP ...) reopen when they go quiet;
    files and devices end"""
    max_reconnects: int | None = Field(None, ge=0)
    """for ever; else failed reopen attempts in a row before giving up"""
    backoff_max_s: float = Field(2.0, gt=0)
    """the longest wait between reopen attempts (they start at 0.1 s and double)"""

    see: ClassVar[str] = "audio.md"
    target: ClassVar[str | None] = "adapters.audio:AudioSource"
    arguments: ClassVar[dict[str, str | None]] = {
        "open_timeout_s": "open_timeout",
        "read_timeout_s": "read_timeout",
        "backoff_max_s": None,
    }

    @model_validator(mode="after")
    def _url_or_device(self) -> AudioConfig:
        if (self.url is None) == (self.device is None):
            raise ValueError("give either url or device (as 'alsa:hw:0'), not both or neither")
        return self

    @field_validator("options", mode="before")
    @classmethod
    def _options_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):  # FFmpeg takes text
            return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        return value

    def build(self, context: BuildContext) -> Source:
        from adapters.audio import AudioSource

        return AudioSource(
            name=self.name,
            backoff=(min(0.1, self.backoff_max_s), self.backoff_max_s),
            **self.kwargs(),
        )
