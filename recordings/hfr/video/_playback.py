"""Reading encoded video back out of a frame log: decode, seek, restore the original frames.

:class:`VideoReader` wraps an open :class:`~recordings.Recording` and yields
frames as they were recorded, with each encoded video sensor's packets
decoded back to arrays; :class:`VideoReplay` is the same as a paced
:class:`~fusion._source.Source` (what ``hyperframes replay`` uses when a file
holds encoded video). :func:`describe_tracks` is what ``hyperframes info``
shows for each video sensor.

Theory of operation. Records are read in file order; each becomes a *slot*
in an output queue: a plain frame fills its slot at once, a packet opens a
slot that the sensor's next decoded frame fills (decoded frames come out in
PTS order, so each sensor's frames stay in order even when the file holds
its packets in decode order). A frame takes back the ``seq``, ``t``,
``t_sensor``, ``t_arrival`` and ``meta`` of the packet with its PTS. The
queue is released from its head as slots fill, so the decoder's delay costs a
few frames of lookahead, not a reordering.

Seeking to ``start``: each video sensor starts at its last key frame at or
before ``start`` (found through the ``#keyframes`` markers and the chunk time
index, reading a widening window back from ``start``); the frames decoded
before ``start`` are dropped. ``end`` reads ``lookahead_ns`` further for the
packets a B-frame stream still needs.

Rotation and packets without a frame follow :class:`~adapters.video.VideoSource`:
a copied stream's display matrix is in its track parameters, and a frame the
source delivered upright (``meta["rotated"]``) is turned the same way here; a
packet stored as a reference only (``shows`` False: edit-list pre-roll, hidden
VP9 frame) is decoded but expects no frame, so it is never a loss.

Damage: a packet that does not decode, a frame the decoder flags corrupt, or
packets missing from the file (a damaged chunk, seen as a gap in the packet
numbers ``n``) cost only the frames concerned: after a gap the sensor waits
for its next key frame. Every lost frame is counted in :attr:`VideoReader.errors`
by reason (``"undecodable"``, ``"corrupt_frame"``, ``"missing_packets"``,
``"no_reference"``) with the latest message in :attr:`VideoReader.last_error`.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter, deque
from collections.abc import AsyncIterator, Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import av
import av.error
import numpy as np

from adapters.video import Orientation, from_matrix
from fusion import Frame, Pacer, Source
from fusion.errors import ConfigError
from recordings.hfr._reader import Recording, open_recording
from recordings.hfr.video._packets import (
    META_KEY,
    TrackParams,
    keyframe_sensor,
    strip_meta,
    video_sensors,
)

DEFAULT_LOOKAHEAD_NS = 1_000_000_000
_MAX_PENDING = 64
"""Packets a decoder may hold without output before the oldest counts as lost."""


class _Slot:
    __slots__ = ("dead", "frame", "sensor")

    def __init__(self, sensor: str, frame: Frame | None = None) -> None:
        self.sensor = sensor
        self.frame = frame
        self.dead = False


class _Track:
    """Decoder state of one video sensor."""

    def __init__(self, reader: VideoReader, sensor: str, threads: int) -> None:
        self.reader = reader
        self.sensor = sensor
        self.threads = threads
        self.ctx: Any = None
        self.params: TrackParams | None = None
        self.expect_n: int | None = None
        self.need_key = True
        self.pending: dict[int, tuple[Frame, bool]] = {}  # pts -> (packet record, wanted)
        self.slots: deque[_Slot] = deque()  # this sensor's open slots, oldest first
        self.seq_pts = 0
        self.turn: Orientation | None = None

    def feed(self, record: Frame, video: dict[str, Any], wanted: bool) -> _Slot | None:
        n = video.get("n")
        if self.expect_n is not None and isinstance(n, int) and n != self.expect_n:
            missing = n - self.expect_n
            if missing > 0:
                self.reader._lose(
                    "missing_packets",
                    self.sensor,
                    record.seq,
                    f"{missing} packet(s) before this one are missing from the file; "
                    "waiting for the next key frame",
                    count=missing,
                )
                self.need_key = True
        if isinstance(n, int):
            self.expect_n = n + 1
        key = bool(video.get("key"))
        if self.need_key and not key:
            if wanted:
                self.reader._lose(
                    "no_reference",
                    self.sensor,
                    record.seq,
                    "its reference frames are missing (no key frame since the gap)",
                )
            return None
        if key:
            try:
                params = TrackParams.from_wire(video["params"])
            except (KeyError, TypeError, ValueError) as err:
                self.reader._lose(
                    "undecodable", self.sensor, record.seq, f"key packet without params ({err})"
                )
                return None
            if self.ctx is None or params != self.params:
                self.close_decoder()
                self.open(params)
            self.need_key = False
        if video.get("shows") is False:
            self._reference(record, video)
            return None
        slot = _Slot(self.sensor) if wanted else None
        if slot is not None:
            self.slots.append(slot)
        pts = video.get("pts")
        if not isinstance(pts, int):  # no PTS: number it ourselves, in feed order
            pts = -(1 << 62) + self.seq_pts
            self.seq_pts += 1
        self.pending[pts] = (record, wanted)
        self._decode(record, pts, video.get("dts"))
        while len(self.pending) > _MAX_PENDING + self.threads:
            self._lose_pending(min(self.pending), "no frame came out of it")
        return slot

    def _reference(self, record: Frame, video: dict[str, Any]) -> None:
        """Decode a packet that shows no frame by design (pre-roll, hidden VP9 frame):
        no slot, nothing expected, so nothing to lose. (PyAV cannot set the discard
        flag on a packet, so a pre-roll frame may come out: it matches no pending
        PTS and is ignored.)"""
        self._decode(record, video.get("pts"), video.get("dts"))

    def _decode(self, record: Frame, pts: Any, dts: Any) -> None:
        """Send one recorded packet to the decoder; a decoder error is counted, not raised."""
        packet = av.Packet(bytes(record.data))
        packet.pts = pts if isinstance(pts, int) else None
        packet.dts = dts if isinstance(dts, int) else None
        try:
            frames = self.ctx.decode(packet)
        except (av.error.FFmpegError, ValueError) as err:
            self.reader.decoder_errors += 1
            self.reader.last_error = f"sensor {self.sensor!r}: decoder error at PTS {pts}: {err}"
            frames = []
        for frame in frames:
            self.out(frame)

    def open(self, params: TrackParams) -> None:
        ctx: Any = av.CodecContext.create(params.codec, "r")
        ctx.width, ctx.height = params.width, params.height
        if params.extradata:
            ctx.extradata = params.extradata
        ctx.thread_type = "AUTO"
        ctx.thread_count = self.threads
        self.ctx = ctx
        self.params = params
        turn = from_matrix(params.display_matrix)
        self.turn = None if turn.identity or not turn.exact else turn

    def close_decoder(self) -> None:
        """Drain the decoder (end, or new parameters); what never came out is lost."""
        if self.ctx is not None:
            try:
                frames = self.ctx.decode(None)
            except (av.error.FFmpegError, ValueError):
                frames = []
            for frame in frames:
                self.out(frame)
            self.ctx = None
        for pts in sorted(self.pending):
            self._lose_pending(pts, "no frame came out of it (end of stream)")

    def out(self, decoded: Any) -> None:
        """A decoded frame: earlier PTS still pending are lost; then fill the next slot."""
        item = self.pending.pop(decoded.pts, None)
        if item is None:
            return  # not a packet we fed
        for pts in sorted(p for p in self.pending if p < decoded.pts):
            self._lose_pending(pts, "no frame came out of it")
        record, wanted = item
        if not wanted:
            return
        if decoded.is_corrupt:
            self._fill_dead(record, "corrupt_frame", "the decoder flagged it corrupt")
            return
        assert self.params is not None
        try:
            data = decoded.to_ndarray(format=self.params.format)
        except (av.error.FFmpegError, ValueError) as err:
            self._fill_dead(record, "undecodable", f"pixel conversion failed: {err}")
            return
        if self.turn is not None and record.meta.get("rotated"):
            data = np.ascontiguousarray(self.turn.apply(data))  # as the source delivered it
        frame = Frame(
            self.sensor,
            record.seq,
            record.t,
            data,
            record.t_sensor,
            record.t_arrival,
            strip_meta(record.meta),
        )
        if self.slots:
            self.slots.popleft().frame = frame

    def _lose_pending(self, pts: int, detail: str) -> None:
        item = self.pending.pop(pts, None)
        self.need_key = True
        if item is not None and item[1]:
            self._fill_dead(item[0], "undecodable", f"PTS {pts}: {detail}")

    def _fill_dead(self, record: Frame, reason: str, detail: str) -> None:
        self.reader._lose(reason, self.sensor, record.seq, detail)
        # Later frames may predict from the lost one: wait for a key frame.
        self.need_key = True
        if self.slots:
            self.slots.popleft().dead = True

    def finish(self) -> None:
        self.close_decoder()
        while self.slots:
            self.slots.popleft().dead = True


class VideoReader:
    """Frames of an open recording with encoded video sensors decoded back to arrays.

    ``log`` is a :class:`~recordings.Recording` (this object does not close
    it). ``threads``: FFmpeg decoder threads per sensor (0 = automatic).
    """

    def __init__(
        self, log: Any, *, threads: int = 0, lookahead_ns: int = DEFAULT_LOOKAHEAD_NS
    ) -> None:
        self.log = log
        self.threads = threads
        self.lookahead_ns = lookahead_ns
        summary = log.summary()
        self.video = video_sensors(list(summary.sensors))
        """Sensors stored as encoded video."""
        self.markers = {keyframe_sensor(s) for s in self.video}
        self.sensors = [s for s in summary.sensors if s not in self.markers]
        """Sensors as a replay yields them (markers hidden)."""
        self._t_start: int | None = summary.t_start
        self.errors: Counter[str] = Counter()
        """Frames lost, by reason."""
        self.last_error: str | None = None
        self.decoder_errors = 0
        """Errors the decoders raised (the frames they cost are in ``errors``)."""

    def _lose(self, reason: str, sensor: str, seq: int, detail: str, count: int = 1) -> None:
        self.errors[reason] += count
        self.last_error = f"sensor {sensor!r} seq {seq}: {detail}"

    def keyframe_before(self, sensor: str, t: int) -> int | None:
        """``t`` of ``sensor``'s last key frame at or before ``t`` (None: none before)."""
        marker = keyframe_sensor(sensor)
        window = DEFAULT_LOOKAHEAD_NS
        first = self._t_start if self._t_start is not None else t
        while True:
            lo = t - window
            found = None
            for frame in self.log.frames(sensors=[marker], start=lo, end=t + 1):
                if found is None or frame.t >= found:
                    found = frame.t
            if found is not None or lo <= first:
                return found
            window *= 4

    def frames(
        self,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> Generator[Frame, None, None]:
        """Frames with ``start <= t < end`` (ns, half-open) of ``sensors``, decoded, in order."""
        wanted = set(self.sensors if sensors is None else sensors)
        unknown = wanted - set(self.sensors)
        if unknown:
            raise ValueError(
                f"recording '{self.log.path}' has no sensor {', '.join(map(repr, sorted(unknown)))}"
            )
        tracks = {s: _Track(self, s, self.threads) for s in self.video if s in wanted}
        read_start = start
        if start is not None:
            for sensor in tracks:
                kt = self.keyframe_before(sensor, start)
                if kt is None:
                    read_start = None
                    break
                read_start = min(read_start, kt) if read_start is not None else kt
        read_end = None if end is None else end + self.lookahead_ns
        queue: deque[_Slot] = deque()
        damage_seen = len(self.log.damage)
        for record in self.log.frames(sensors=sorted(wanted), start=read_start, end=read_end):
            inside = (start is None or record.t >= start) and (end is None or record.t < end)
            track = tracks.get(record.sensor)
            video = record.meta.get(META_KEY) if track is not None else None
            if track is None or not isinstance(video, dict):
                if inside:
                    queue.append(_Slot(record.sensor, record))
            else:
                slot = track.feed(record, video, inside)
                if slot is not None:
                    queue.append(slot)
            if len(self.log.damage) != damage_seen:
                for err in self.log.damage[damage_seen:]:
                    self.errors["damaged"] += 1
                    self.last_error = str(err)
                damage_seen = len(self.log.damage)
            while queue and (queue[0].frame is not None or queue[0].dead):
                slot = queue.popleft()
                if slot.frame is not None:
                    yield slot.frame
        for track in tracks.values():
            track.finish()
        for slot in queue:
            if slot.frame is not None:
                yield slot.frame


class VideoReplay(Source):
    """A recording with encoded video sensors as a :class:`~fusion._source.Source`.

    Like :class:`~recordings.Replay` (same ``speed``, ``sensors``, ``start``
    and ``end``; pacing on ``t_arrival`` by the runtime clock), with video
    sensors decoded back to the arrays that were recorded, and the
    ``#keyframes`` marker sensors hidden. Lost frames are counted in
    :attr:`errors` by reason. ``path`` may be an open
    :class:`~recordings.Recording`, which the replay then owns and closes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Recording,
        speed: float | None = 1.0,
        *,
        sensors: Iterable[str] | None = None,
        start: int | None = None,
        end: int | None = None,
        threads: int = 0,
        batch: int = 16,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ConfigError(f"speed must be > 0 or None (as fast as possible), got {speed}")
        self._log: Any = path if isinstance(path, Recording) else open_recording(path)
        path = self._log.path
        try:
            self.reader = VideoReader(self._log, threads=threads)
            names = self.reader.sensors if sensors is None else list(sensors)
            unknown = [s for s in names if s not in self.reader.sensors]
            if unknown:
                raise ConfigError(
                    f"recording '{path}' has no sensor {', '.join(map(repr, unknown))}; "
                    f"it has {', '.join(map(repr, self.reader.sensors)) or 'none'}"
                )
            if not names:
                raise ConfigError(f"recording '{path}' has no sensors to replay")
        except BaseException:
            self._log.close()
            raise
        summary = self._log.summary()
        specs = tuple(replace(summary.sensors[n].spec, clock=None, overflow="block") for n in names)
        super().__init__(specs=specs)
        self.path = os.fspath(path)
        self.speed = speed
        self._names = names
        self._start = start
        self._end = end
        self._batch = max(1, batch)

    @property
    def video_sensors(self) -> list[str]:
        return [s for s in self.reader.video if s in self._names]

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield the selected frames in recorded order, decoded, paced by the current clock."""
        pacer = Pacer(self.speed)
        it = self.reader.frames(self._names, self._start, self._end)
        try:
            while True:
                batch = await self.run_blocking(_take, it, self._batch)
                self._sync_errors()
                if not batch:
                    return
                for frame in batch:
                    await pacer.wait(frame.t if frame.t_arrival is None else frame.t_arrival)
                    self._next_seq[frame.sensor] = self._next_seq.get(frame.sensor, 0) + 1
                    yield frame
        finally:
            it.close()

    def _sync_errors(self) -> None:
        for reason, n in self.reader.errors.items():
            if self.errors[reason] != n:
                self.errors[reason] = n
        self.last_error = self.reader.last_error

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await super().aclose()

    def __repr__(self) -> str:
        return f"VideoReplay('{self.path}', speed={self.speed}, video={self.video_sensors})"


def _take(it: Iterator[Frame], n: int) -> list[Frame]:
    out = []
    for frame in it:
        out.append(frame)
        if len(out) >= n:
            break
    return out


# -- what info shows -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrackSummary:
    """An encoded video sensor of a recording, as ``hyperframes info`` shows it."""

    sensor: str
    codec: str
    encoder: str
    width: int
    height: int
    pix_fmt: str
    format: str
    packets: int
    keyframes: int
    encoded_bytes: int
    raw_bytes: int
    """Bytes of the same frames as arrays."""
    rate_hz: float | None
    rotation: int | None = None
    """Display matrix rotation of a copied stream (degrees, as ffprobe); None without."""

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.encoded_bytes if self.encoded_bytes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "codec": self.codec,
            "encoder": self.encoder,
            "width": self.width,
            "height": self.height,
            "pix_fmt": self.pix_fmt,
            "format": self.format,
            "packets": self.packets,
            "keyframes": self.keyframes,
            "encoded_bytes": self.encoded_bytes,
            "raw_bytes": self.raw_bytes,
            "ratio": self.ratio,
            "rate_hz": self.rate_hz,
            "rotation": self.rotation,
        }


def describe_tracks(log: Any) -> dict[str, TrackSummary]:
    """Per encoded video sensor of ``log``: codec, size, rate, bytes and ratio (one pass)."""
    summary = log.summary()
    details = log.frame_details()
    out = {}
    for sensor in video_sensors(list(summary.sensors)):
        counted = None
        if details is not None and sensor in details.sensors:
            counted = _count_from_details(details, sensor)
        if counted is None:
            counted = _count_packets(log, sensor)
        params, packets, keys, encoded, raw = counted
        if params is None:
            continue
        s = summary.sensors[sensor]
        span = (s.t_end - s.t_start) if s.t_start is not None and s.t_end is not None else 0
        out[sensor] = TrackSummary(
            sensor=sensor,
            codec=params.codec,
            encoder=params.encoder,
            width=params.width,
            height=params.height,
            pix_fmt=params.pix_fmt,
            format=params.format,
            packets=packets,
            keyframes=keys,
            encoded_bytes=encoded,
            raw_bytes=raw,
            rate_hz=(s.count - 1) / span * 1e9 if span > 0 and s.count > 1 else None,
            rotation=None
            if params.display_matrix is None
            else from_matrix(params.display_matrix).rotation,
        )
    return out


def _count_packets(log: Any, sensor: str) -> tuple[TrackParams | None, int, int, int, int]:
    """``(params, packets, key frames, encoded bytes, raw bytes)`` of a track, reading
    every packet."""
    params: TrackParams | None = None
    packets = keys = encoded = raw = 0
    for record in log.frames(sensors=[sensor]):
        video = record.meta.get(META_KEY)
        if not isinstance(video, dict):
            continue
        packets += 1
        encoded += len(record.data) if isinstance(record.data, bytes) else 0
        if video.get("key"):
            keys += 1
            with contextlib.suppress(KeyError, TypeError, ValueError):
                params = TrackParams.from_wire(video["params"])
        if params is not None:
            raw += params.raw_frame_bytes
    return params, packets, keys, encoded, raw


def _count_from_details(
    details: Any, sensor: str
) -> tuple[TrackParams | None, int, int, int, int] | None:
    """What :func:`_count_packets` gives, from the frame details (format 1.6) without
    reading a packet; ``None`` when they cannot say."""
    from recordings.hfr._details import BYTES, KEY, VIDEO

    notes = details.notes(sensor)
    if notes.over:
        return None
    try:
        _, flags, size = details.of(sensor)
    except ValueError:
        return None
    rows = np.flatnonzero(flags & VIDEO)
    encoded = int(size[rows][(flags[rows] & BYTES) != 0].sum())  # a packet not bytes counts 0
    params: TrackParams | None = None
    raw = 0
    bounds = [row for row, _ in notes.params] + [len(flags)]
    for (row, wire), end in zip(notes.params, bounds[1:], strict=True):
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            params = TrackParams.from_wire(wire)
        if params is not None:
            lo, hi = np.searchsorted(rows, [row, end])
            raw += int(hi - lo) * params.raw_frame_bytes
    return params, len(rows), int(np.count_nonzero(flags & KEY)), encoded, raw


def has_encoded_video(path: str | os.PathLike[str]) -> bool:
    """Whether the recording at ``path`` holds encoded video sensors (reads the index only)."""
    with open_recording(path) as log:
        return bool(video_sensors(list(log.summary().sensors)))
