"""``VideoRecorder``: a recorder that stores chosen camera sensors as encoded video.

Raw camera pixels barely compress with zstd (a noisy image shrinks about
1.2x), so a :class:`VideoRecorder` wraps a :class:`~recordings.Recorder` and,
for the sensors named in ``video``, writes encoded packets instead of arrays
(the layout is in :mod:`recordings.hfr.video._packets`); every other frame is
recorded as it is. It has the recorder's sink interface (``write``, ``await
send``, ``close``/``aclose``, ``statistics()``, ``paths``), so it goes where a
``Recorder`` goes: ``Pipeline(..., recorder=VideoRecorder(...))`` or
``[recorder] video = { cam = "h264" }`` in a pipeline config.

Theory of operation. ``send()`` copies a video frame's pixels (a source may
reuse its buffers) and queues every frame, in arrival order, on a bounded
queue; one worker thread encodes (PyAV releases the GIL; x264 runs its own
threads) and hands records to the inner recorder in the order
:class:`~recordings.hfr.video._packets.PacketOrder` decides. A full queue makes
``send()`` wait in a worker thread: backpressure, nothing dropped. A frame
that cannot be encoded (odd size for yuv420p, not uint8 pixels) is recorded
raw and counted in ``unencoded``, never lost. ``copy`` sensors need frames
from a :class:`~adapters.video.VideoSource` with ``keep_packets=True``; their
packets are stored as they came from the demuxer.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio.lowlevel
import numpy as np

from fusion import Frame, LedgerStatistics, SensorSpec, run_sync
from recordings.errors import RecorderClosed
from recordings.hfr._closing import Closeable
from recordings.hfr.video._encoder import EncoderUnavailable, FrameEncoder, VideoCodec, parse_codec
from recordings.hfr.video._packets import Packet, PacketOrder, TrackParams, strip_meta

log = logging.getLogger("recordings.hfr.video")

PACKETS_META = "packets"
"""``meta`` key where ``VideoSource(keep_packets=True)`` puts a frame's demuxed packets."""
CODEC_META = "codec"
"""``meta`` key where ``VideoSource(keep_packets=True)`` puts the stream's decoder parameters."""


@dataclass(frozen=True, slots=True)
class TrackStatistics:
    """How one video sensor was recorded."""

    codec: str
    frames: int
    """Video frames accepted."""
    packets: int
    keyframes: int
    encoded_bytes: int
    """Bytes of the packets written."""
    raw_bytes: int
    """Bytes the same frames take as arrays."""
    unencoded: int
    """Frames recorded raw (the encoder refused them) or without a packet."""
    orphans: int
    """Copied packets dropped because their frame never arrived."""
    encode_s: float
    """Thread time spent encoding."""
    last_error: str | None = None

    @property
    def ratio(self) -> float:
        """Raw pixel bytes over encoded bytes."""
        return self.raw_bytes / self.encoded_bytes if self.encoded_bytes else 0.0


class VideoRecorder(Closeable):
    """Records frames like :class:`~recordings.Recorder`, with ``video`` sensors encoded.

    ``VideoRecorder("s.hfr", video={"cam": "h264"}, sensors=specs, **recorder_options)``
    opens its own recorder; ``VideoRecorder(recorder, video=...)`` wraps one.
    ``video`` maps sensor names to a codec choice (see
    :func:`~recordings.hfr.video._encoder.parse_codec`). ``queue_frames`` bounds the
    frames waiting for the encoder thread.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | Any,
        *,
        video: Mapping[str, str | VideoCodec],
        sensors: Iterable[SensorSpec] = (),
        queue_frames: int = 32,
        **recorder_options: Any,
    ) -> None:
        from recordings import Recorder

        self.codecs = {name: parse_codec(c, sensor=name) for name, c in video.items()}
        specs = {s.name: s for s in sensors}
        self._rates = {name: specs[name].rate_hz if name in specs else None for name in video}
        specs = {
            name: replace(s, meta={**s.meta, "video": str(self.codecs[name])})
            if name in self.codecs
            else s
            for name, s in specs.items()
        }
        if isinstance(target, (str, os.PathLike)):
            self.recorder = Recorder(target, sensors=specs.values(), **recorder_options)
        else:
            if recorder_options:
                raise TypeError("recorder options go to the Recorder you pass, not here")
            self.recorder = target
            for spec in specs.values():
                self.recorder.declare(spec)
        self._queue: queue.Queue[Frame | None] = queue.Queue(max(1, queue_frames))
        self._order = PacketOrder()
        self._encoders: dict[str, FrameEncoder] = {}
        self._last_error: dict[str, str] = {}  # sensor -> why its last frame went raw
        self._frames: dict[str, int] = {}
        self._video_frames: dict[str, int] = {}
        self._raw_bytes: dict[str, int] = {}
        self._unencoded: dict[str, int] = {}
        self._encode_ns: dict[str, int] = {}
        self._ordinal: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closing = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="hfr-video-encode", daemon=True)
        self._thread.start()

    # -- accepting frames ---------------------------------------------------------------

    def write(self, frame: Frame) -> None:
        """Queue ``frame`` (sync); blocks while the encoder thread is ``queue_frames`` behind."""
        self._queue.put(self._accept(frame))

    async def send(self, frame: Frame) -> None:
        """Queue ``frame`` (async); always checkpoints, waits off the loop when full."""
        await anyio.lowlevel.checkpoint()
        item = self._accept(frame)
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            await run_sync(self._queue.put, item)

    def _accept(self, frame: Frame) -> Frame:
        with self._lock:
            if self._error is not None:
                raise RecorderClosed(
                    f"video recorder for '{self.recorder.path}' failed and accepts no more "
                    f"frames: {self._error}"
                ) from self._error
            if self._closing:
                raise RecorderClosed(f"video recorder for '{self.recorder.path}' is closed")
            self._frames[frame.sensor] = self._frames.get(frame.sensor, 0) + 1
        if frame.sensor in self.codecs and isinstance(frame.data, np.ndarray):
            # The source may reuse its buffer before the encoder thread gets to it.
            frame = Frame(
                frame.sensor,
                frame.seq,
                frame.t,
                frame.data.copy(),
                frame.t_sensor,
                frame.t_arrival,
                frame.meta,
            )
        return frame

    # -- the encoder thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                frame = self._queue.get()
                if frame is None:
                    break
                self._write(self._take(frame))
            for sensor, encoder in self._encoders.items():
                self._write(self._order.add_packets(sensor, encoder.flush()))
            self._write(self._order.finish())
        except BaseException as err:
            with self._lock:
                self._error = err
            while True:  # unblock senders
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break

    def _write(self, records: list[Frame]) -> None:
        for record in records:
            self.recorder.write(record)

    def _take(self, frame: Frame) -> list[Frame]:
        sensor = frame.sensor
        codec = self.codecs.get(sensor)
        if codec is None:
            return self._order.add_frame(frame)
        if codec.name == "copy":
            return self._take_copied(frame)
        encoder = self._encoders.get(sensor)
        if encoder is None:
            encoder = self._encoders[sensor] = FrameEncoder(sensor, codec, self._rates.get(sensor))
        key = self._ordinal.get(sensor, 0)
        self._ordinal[sensor] = key + 1
        started = time.perf_counter_ns()
        try:
            packets = encoder.encode(frame.data, key)
        except EncoderUnavailable as err:
            self._count_unencoded(sensor, str(err))
            return self._order.add_frame(frame)
        finally:
            self._encode_ns[sensor] = self._encode_ns.get(sensor, 0) + (
                time.perf_counter_ns() - started
            )
        self._count_video(sensor, encoder.params)
        return self._order.add_video(sensor, key, frame, packets)

    def _take_copied(self, frame: Frame) -> list[Frame]:
        sensor = frame.sensor
        raw_packets = frame.meta.get(PACKETS_META)
        codec = frame.meta.get(CODEC_META)
        pts = frame.meta.get("pts")
        if raw_packets is None or codec is None:
            self._count_unencoded(
                sensor,
                "'copy' needs frames from VideoSource(keep_packets=True); "
                "this frame has no packets, recorded raw",
            )
            return self._order.add_frame(frame)
        params = TrackParams.from_wire({**codec, "encoder": "copy"})
        connection = frame.meta.get("connection", 0)
        packets = [
            Packet(
                bytes(data),
                p_pts,
                p_dts,
                bool(key),
                (connection, p_pts),
                params,
                discard=bool(flags[0]) if flags else False,
                shows=bool(flags[1]) if len(flags) > 1 else True,
            )
            for data, p_pts, p_dts, key, *flags in raw_packets
        ]
        meta = {
            k: v for k, v in strip_meta(frame.meta).items() if k not in (PACKETS_META, CODEC_META)
        }
        original = Frame(sensor, frame.seq, frame.t, None, frame.t_sensor, frame.t_arrival, meta)
        self._count_video(sensor, params)
        return self._order.add_video(sensor, (connection, pts), original, packets)

    def _count_video(self, sensor: str, params: TrackParams | None) -> None:
        self._video_frames[sensor] = self._video_frames.get(sensor, 0) + 1
        if params is not None:
            self._raw_bytes[sensor] = self._raw_bytes.get(sensor, 0) + params.raw_frame_bytes

    def _count_unencoded(self, sensor: str, reason: str) -> None:
        if sensor not in self._last_error:
            log.warning("video sensor %r: %s (recorded raw)", sensor, reason)
        self._unencoded[sensor] = self._unencoded.get(sensor, 0) + 1
        self._last_error[sensor] = reason

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Encode what is queued, flush the encoders, close the recorder; safe to call twice."""
        if self._closed:
            return
        with self._lock:
            already = self._closing
            self._closing = True
        if not already:
            self._queue.put(None)
        self._thread.join()
        self._closed = True
        try:
            self.recorder.close()
        finally:
            if self._error is not None:
                raise RecorderClosed(
                    f"video recorder for '{self.recorder.path}' failed: {self._error}"
                ) from self._error

    # -- observing ----------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return Path(self.recorder.path)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(self.recorder.paths)

    @property
    def closed(self) -> bool:
        return self._closed

    def record_ledgers(
        self,
        ledgers: Mapping[str, LedgerStatistics],
        dropped: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Store the sources' ledgers in the inner recorder's footer."""
        self.recorder.record_ledgers(ledgers, dropped)

    def statistics(self) -> Any:
        """The inner recorder's statistics, with ``frames`` counting frames accepted here."""
        inner = self.recorder.statistics()
        with self._lock:
            frames = dict(self._frames)
        return replace(inner, frames=sum(frames.values()), frames_by_sensor=frames)

    def video_statistics(self) -> dict[str, TrackStatistics]:
        """Per video sensor: packets, key frames, bytes, ratio, encode time, fallbacks.

        Exact once closed; while running, counts lag the encoder thread a little.
        """
        order = self._order
        out = {}
        for sensor, codec in self.codecs.items():
            unencoded = self._unencoded.get(sensor, 0) + order.unencoded.get(sensor, 0)
            out[sensor] = TrackStatistics(
                codec=str(codec),
                frames=self._video_frames.get(sensor, 0),
                packets=order.packets.get(sensor, 0),
                keyframes=order.keyframes.get(sensor, 0),
                encoded_bytes=order.encoded_bytes.get(sensor, 0),
                raw_bytes=self._raw_bytes.get(sensor, 0),
                unencoded=unencoded,
                orphans=order.orphans.get(sensor, 0),
                encode_s=self._encode_ns.get(sensor, 0) / 1e9,
                last_error=self._last_error.get(sensor),
            )
        return out

    def __repr__(self) -> str:
        codecs = ", ".join(f"{k}={v}" for k, v in self.codecs.items())
        return f"VideoRecorder('{self.recorder.path}', video={{{codecs}}})"
