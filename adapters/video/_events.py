"""What the decoder thread tells the event loop, item by item, in stream order.

Frames are the droppable bulk; the other items are control messages that the
prefetch queue always accepts, so error counts and gap accounting survive a
full queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.errors import DecodeError
from adapters.video._hwaccel import HWAccelReport
from adapters.video._probe import VideoInfo
from fusion import Discontinuity


class FrameLost(DecodeError):
    """A packet or frame of a video stream was skipped; ``pts`` and ``reason`` say which and why.

    Reasons: ``"undecodable"`` (went into the decoder, no frame came out),
    ``"corrupt_frame"``
    (decoded but flagged corrupt), ``"convert_error"`` (pixel conversion
    failed), ``"overflow"`` (a live frame evicted from a full prefetch queue).
    """

    def __init__(
        self,
        reason: str,
        detail: str,
        *,
        pts: int | None,
        t_sensor: int | None,
        sensor: str | None = None,
        seq: int | None = None,
    ) -> None:
        self.reason = reason
        self.pts = pts
        self.t_sensor = t_sensor
        where = "frame without PTS" if pts is None else f"PTS {pts}"
        if t_sensor is not None:
            where += f" (t_sensor {t_sensor} ns)"
        super().__init__(f"{where} skipped: {detail}", sensor=sensor, seq=seq)


@dataclass(slots=True)
class Decoded:
    """A decoded, converted frame."""

    t_sensor: int
    t_arrival: int | None
    data: Any
    meta: dict[str, Any]
    t_read: int | None = None
    """When the packet was read (``t_arrival`` before an opening burst was re-paced)."""


@dataclass(slots=True)
class Skipped:
    """A frame that will not arrive (its seq is consumed so the gap is visible)."""

    error: FrameLost


@dataclass(slots=True)
class DecoderError:
    """The decoder rejected a packet. Not a lost frame by itself: with frame
    threading the error can belong to an earlier packet, so losses are
    reported by the ledger (as :class:`Skipped`), and this is only counted."""

    pts: int | None
    """PTS of the packet being sent when the error surfaced."""
    message: str


@dataclass(slots=True)
class Opened:
    """The input is open (again, after a reconnect) and decoding."""

    info: VideoInfo
    hwaccel: HWAccelReport
    connection: int
    """0 for the first open, then one more per reconnect."""


@dataclass(slots=True)
class Disconnected:
    """A live input stopped delivering; the decoder is about to reconnect."""

    reason: str
    t_last_arrival: int | None
    """Arrival time of the last frame before the drop."""


@dataclass(slots=True)
class OpenFailed:
    """A live input could not be opened (refused, timed out); the decoder retries."""

    reason: str
    attempt: int
    """0 for the first failure of a run of failures, then one more per retry."""
    retry_in_s: float | None
    """When the next try starts; ``None`` when the decoder gives up."""


@dataclass(slots=True)
class Reconnected:
    """The first frame after a reconnect arrived ``gap_ns`` after the last one before it."""

    attempts: int
    gap_ns: int | None


@dataclass(slots=True)
class Discontinued:
    """The stream's timestamps jumped (a new segment) or it was silent for a while."""

    change: Discontinuity
    segment: int
    """The segment the next frame belongs to (0 for the first)."""


@dataclass(slots=True)
class Failed:
    """The decoder cannot go on; the consumer raises ``error``."""

    error: BaseException


Event = (
    Decoded
    | DecoderError
    | Skipped
    | Opened
    | OpenFailed
    | Disconnected
    | Reconnected
    | Discontinued
    | Failed
)
