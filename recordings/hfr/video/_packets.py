"""Encoded video in a frame log: the record layout and the write order (sans-I/O).

A video sensor ``cam`` recorded as encoded video is stored with the ordinary
frame-log records, no format change:

* one record per **packet** on sensor ``cam``: ``data`` is the packet's bytes;
  ``seq``, ``t``, ``t_sensor`` and ``t_arrival`` are those of the frame the
  packet encodes (matched by PTS, so B-frame reordering is handled), and
  ``meta`` is that frame's meta plus :data:`META_KEY`, a small map: ``n`` (the
  packet's number in the track, consecutive, so a replay sees missing packets),
  ``pts``, ``dts``, ``key`` and, on key packets, ``params`` (codec, size,
  pixel formats, extradata, the display matrix of a copied stream: everything
  a decoder needs to start there); a packet that gives no frame by design
  (``shows`` False: edit-list pre-roll, also ``discard``, or a hidden VP9
  frame) is stored with the seq and times of the next frame, as a reference;
* one tiny **marker** record per key packet on sensor ``cam#keyframes``
  (:func:`keyframe_sensor`) at the key frame's ``t``, so the recording's own
  chunk time index finds the key frame before any instant without reading
  the packets.

Write order. Packets are written in decode order (a decoder needs them so),
interleaved with the other sensors' frames in the order the frames arrived:
:class:`PacketOrder` holds frames that arrived after a video frame whose
packet is not out yet (encoder delay, reordering) and releases everything in
order as packets come out. Without B-frames, which is how the encoders here
are set up, the file order is exactly the arrival order. A packet whose frame
is never seen (a copied packet that did not decode at the source) is dropped
as soon as a later frame is seen (frames come out in PTS order), or after
:attr:`PacketOrder.max_wait` entries, and counted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from fusion import Frame

META_KEY = "hf.video"
"""Key of the packet map in a packet record's ``meta``."""

KEYFRAME_SUFFIX = "#keyframes"

FORMAT_CHANNELS = {"rgb24": 3, "bgr24": 3, "gray": 1}
"""Array formats a track can be decoded back to, and their channels (for raw size)."""


def keyframe_sensor(sensor: str) -> str:
    """Name of the sensor holding ``sensor``'s key frame markers."""
    return sensor + KEYFRAME_SUFFIX


def video_sensors(sensor_names: Any) -> list[str]:
    """The sensors of a recording (names) stored as encoded video: those with markers."""
    names = set(sensor_names)
    return [s for s in sensor_names if keyframe_sensor(s) in names]


@dataclass(frozen=True, slots=True)
class TrackParams:
    """What a decoder needs to start at a key packet, and what to give back."""

    codec: str
    """FFmpeg decoder name (``h264``, ``hevc``, ``ffv1``...)."""
    width: int
    height: int
    pix_fmt: str
    """Coded pixel format (``yuv420p``, ``bgr0``...)."""
    format: str
    """Array format frames are decoded back to (``rgb24``, ``bgr24``, ``gray``)."""
    extradata: bytes | None = None
    encoder: str = ""
    """How the packets were made: the encoder's name, or ``copy`` (the source's own)."""
    display_matrix: tuple[int, ...] | None = None
    """The source stream's display matrix (``copy`` only: re-encoded frames are already
    upright). A replay turns frames whose meta says ``rotated`` the same way."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "codec": self.codec,
            "width": self.width,
            "height": self.height,
            "pix_fmt": self.pix_fmt,
            "format": self.format,
            "extradata": self.extradata,
            "encoder": self.encoder,
        }
        if self.display_matrix is not None:
            wire["display_matrix"] = list(self.display_matrix)
        return wire

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> TrackParams:
        extradata = d.get("extradata")
        return cls(
            codec=str(d["codec"]),
            width=int(d["width"]),
            height=int(d["height"]),
            pix_fmt=str(d["pix_fmt"]),
            format=str(d["format"]),
            extradata=bytes(extradata) if extradata else None,
            encoder=str(d.get("encoder", "")),
            display_matrix=_matrix(d.get("display_matrix")),
        )

    @property
    def raw_frame_bytes(self) -> int:
        """Bytes of one decoded frame as an array: the 'raw pixels' of the ratio."""
        return self.width * self.height * FORMAT_CHANNELS.get(self.format, 3)


def _matrix(value: Any) -> tuple[int, ...] | None:
    """A display matrix read from a file: nine ints, else None."""
    ok = isinstance(value, (list, tuple)) and len(value) == 9
    if ok and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


@dataclass(frozen=True, slots=True)
class Packet:
    """One encoded packet, in decode order; ``frame_key`` names the frame it encodes."""

    data: bytes
    pts: int | None
    dts: int | None
    key: bool
    frame_key: Hashable
    params: TrackParams
    discard: bool = False
    """The container marked it discard (edit-list pre-roll): decoded, never shown."""
    shows: bool = True
    """False for packets that give no frame by design (discard, hidden VP9 frames): they
    are written with the next frame's record instead of being dropped as orphans."""


def strip_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A packet record's meta without the packet map: the original frame's meta."""
    return {k: v for k, v in meta.items() if k != META_KEY}


@dataclass(slots=True)
class _Entry:
    frame: Frame | None  # a plain frame, or None for a video frame
    sensor: str
    key: Hashable


class _Track:
    __slots__ = ("frames", "marker_seq", "n", "out", "written")

    def __init__(self) -> None:
        self.out: deque[Packet] = deque()  # emitted by the encoder, not written yet
        self.frames: dict[Hashable, Frame] = {}  # frames taken in, by key, not yet written
        self.written: set[Hashable] = set()  # keys written ahead of their entry's turn
        self.n = 0
        self.marker_seq = 0


class PacketOrder:
    """Turns frames and packets into records in the order they must be written.

    ``add_frame(frame)`` for a frame stored as it is; ``add_video(sensor,
    key, frame, packets)`` for a video frame (``key`` names it, ``packets``
    are whatever its encoder or source emitted with it, for any frames).
    Both return the records now ready, in order. ``finish()`` returns the
    rest. Counters: :attr:`orphans` (packets dropped because their frame was
    never seen), :attr:`unencoded` (video frames that got no packet).
    """

    def __init__(self, *, max_wait: int = 256) -> None:
        self.max_wait = max_wait
        self._entries: deque[_Entry] = deque()
        self._tracks: dict[str, _Track] = {}
        self.orphans: dict[str, int] = {}
        self.unencoded: dict[str, int] = {}
        self.packets: dict[str, int] = {}
        self.keyframes: dict[str, int] = {}
        self.encoded_bytes: dict[str, int] = {}

    def add_frame(self, frame: Frame) -> list[Frame]:
        self._entries.append(_Entry(frame, frame.sensor, None))
        return self._drain(final=False)

    def add_video(
        self, sensor: str, key: Hashable, frame: Frame, packets: list[Packet]
    ) -> list[Frame]:
        track = self._tracks.get(sensor)
        if track is None:
            track = self._tracks[sensor] = _Track()
        track.frames[key] = frame
        track.out.extend(packets)
        self._entries.append(_Entry(None, sensor, key))
        return self._drain(final=False)

    def add_packets(self, sensor: str, packets: list[Packet]) -> list[Frame]:
        """Packets emitted without a new frame (an encoder flushed at a size change)."""
        track = self._tracks.setdefault(sensor, _Track())
        track.out.extend(packets)
        return self._drain(final=False)

    def finish(self) -> list[Frame]:
        """Everything left, after the last packets were added (encoders flushed)."""
        return self._drain(final=True)

    @property
    def waiting(self) -> int:
        """Entries held back, waiting for a packet."""
        return len(self._entries)

    def _drain(self, final: bool) -> list[Frame]:
        out: list[Frame] = []
        entries = self._entries
        while entries:
            head = entries[0]
            if head.frame is not None:
                out.append(head.frame)
                entries.popleft()
                continue
            track = self._tracks[head.sensor]
            if head.key in track.written:
                track.written.discard(head.key)
                entries.popleft()
                continue
            forced = final or len(entries) > self.max_wait
            if not self._write_through(head, track, out, forced):
                return out  # wait for more packets
            entries.popleft()
        return out

    def _write_through(self, head: _Entry, track: _Track, out: list[Frame], forced: bool) -> bool:
        """Write ``track``'s packets up to the one of ``head``; False to wait."""
        if not forced and not any(p.frame_key == head.key for p in track.out):
            return False
        while track.out:
            packet = track.out[0]
            if not packet.shows:
                # A reference-only packet rides with the next frame written.
                carrier = track.frames.get(head.key)
                track.out.popleft()
                if carrier is None:
                    self.orphans[head.sensor] = self.orphans.get(head.sensor, 0) + 1
                else:
                    self._emit(head.sensor, track, packet, carrier, out)
                continue
            frame = track.frames.pop(packet.frame_key, None)
            if frame is None:
                if not forced and not _before(packet.frame_key, head.key):
                    return False  # its frame comes later (B-frame order): wait for it
                # Its frame was lost at the source (output is in PTS order).
                track.out.popleft()
                self.orphans[head.sensor] = self.orphans.get(head.sensor, 0) + 1
                continue
            track.out.popleft()
            self._emit(head.sensor, track, packet, frame, out)
            if packet.frame_key == head.key:
                return True
            track.written.add(packet.frame_key)
        # No packet for this frame (forced): it is not recorded.
        if track.frames.pop(head.key, None) is not None:
            self.unencoded[head.sensor] = self.unencoded.get(head.sensor, 0) + 1
        return True

    def _emit(
        self, sensor: str, track: _Track, packet: Packet, frame: Frame, out: list[Frame]
    ) -> None:
        video: dict[str, Any] = {
            "n": track.n,
            "pts": packet.pts,
            "dts": packet.dts,
            "key": packet.key,
        }
        if packet.key:
            video["params"] = packet.params.to_wire()
        if not packet.shows:
            video["shows"] = False
        if packet.discard:
            video["discard"] = True
        track.n += 1
        meta = dict(frame.meta)
        meta[META_KEY] = video
        out.append(
            Frame(sensor, frame.seq, frame.t, packet.data, frame.t_sensor, frame.t_arrival, meta)
        )
        self.packets[sensor] = self.packets.get(sensor, 0) + 1
        self.encoded_bytes[sensor] = self.encoded_bytes.get(sensor, 0) + len(packet.data)
        if packet.key:
            out.append(
                Frame(
                    keyframe_sensor(sensor),
                    track.marker_seq,
                    frame.t,
                    None,
                    frame.t_sensor,
                    frame.t_arrival,
                    {"n": video["n"], "seq": frame.seq},
                )
            )
            track.marker_seq += 1
            self.keyframes[sensor] = self.keyframes.get(sensor, 0) + 1


def _before(a: Hashable, b: Hashable) -> bool:
    """Whether frame key ``a`` orders before ``b`` (keys without an order: yes)."""
    try:
        return bool(a < b)  # type: ignore[operator]
    except TypeError:
        return True
