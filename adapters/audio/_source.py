"""``AudioSource``: audio of a file, a stream or a capture device as frames of PCM samples.

The decoder thread (:mod:`adapters.audio._decode`) demuxes one audio stream
with PyAV, decodes and resamples it to float32 planar at the chosen rate and
channel layout, and cuts it into frames of a fixed length
(:mod:`adapters.audio._framer`); this module moves those frames to the event
loop and keeps the ledger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio

from adapters.audio._decode import (
    AUDIO_DEVICES,
    AudioOptions,
    Batch,
    Item,
    Loss,
    Opened,
    OpenFailed,
    Reconnected,
    Silence,
    decode,
    is_network,
    is_sdp,
)
from adapters.audio._framer import Discontinuity
from adapters.video import Prefetch, is_live
from fusion import Frame, Overflow, SensorSpec, Source, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, SourceError

log = logging.getLogger("adapters.audio")

NS = 1_000_000_000


def sample_time(index: int, rate: int) -> int:
    """The time (ns, floored) of sample ``index`` at ``rate`` Hz: exact integer arithmetic."""
    return index * NS // rate


class AudioSource(Source):
    """Audio frames (kind ``audio``): PCM samples as float32 ``(channels, samples)``.

    ``url``: a file any PyAV container holds (WAV, FLAC, MP3, an MP4/MKV/TS's
    audio track: ``stream`` picks among its audio streams), a stream
    (``udp://``, ``rtp://``, ``rtsp://``, ``tcp://``, ``srt://``, ``http(s)://``;
    an ``.sdp`` file for RTP, opened with ``protocol_whitelist`` =
    ``file,udp,rtp,crypto,data`` unless ``options`` name one) or, with
    ``input_format`` (``"alsa"``, ``"pulse"``, ``"avfoundation"``, ``"dshow"``,
    ``"lavfi"`` ...), a capture device (``"default"``, ``"hw:0"``, ``":0"``);
    ``device="alsa:hw:0"`` says both at once (format, a colon, the device).
    ``options`` are FFmpeg input options; ``transport`` (``"tcp"``, ``"udp"``
    ...) is RTSP's ``rtsp_transport``.

    Frames hold ``frame_ms`` (default 20 ms) of samples, rounded to whole
    samples (``frame_samples`` sets the count instead), resampled to ``rate``
    Hz and ``layout`` (``"mono"``, ``"stereo"``, ``"5.1"`` ...; default: the
    stream's own). ``t_sensor`` is the time of the frame's first sample on the
    stream's timeline (its PTS in samples, ``index * 1e9 // rate``; the index
    itself in ``meta["sample_index"]``), so frames are sample-exact and
    contiguous: the next frame starts ``frame_samples`` samples later.

    A PTS that jumps (a lost packet, a gap in a file, a sender that restarted)
    ends the frame being filled short (``meta["partial"]``) and is counted as
    a ``gap`` (samples missing) or ``overlap`` (samples repeated) warning with
    its size; framing goes on from the new PTS. The ledger's unit is the
    demuxed packet: each ends in the frame holding its last sample, or lost
    as ``undecodable``. Live inputs stamp ``t_arrival`` (host time of the
    packet that completed the frame); ``speed`` paces a file at its own timing.

    A live network input (``reconnect``, on by default for them) that goes
    quiet past ``read_timeout``, fails or ends is reopened with exponential
    backoff (``backoff`` = (first, longest) wait in s; ``max_reconnects``
    attempts in a row, None: for ever). Counted as warnings (units=0): a
    ``silence`` when it stopped, ``open_failed`` per refused attempt and a
    ``reconnect`` when samples flow again; the new connection's first frame
    has ``meta["segment_start"]``, ``meta["connection"]`` and ``meta["gap_ns"]``
    (arrival time without data), and its ``t_sensor`` follows the new stream's
    own PTS (a restarted sender's new epoch, said in the ``reconnect``
    message), so the hub's clock model starts over there.
    """

    _ledger_unit = "packet"

    # long: 20 documented keyword options (input, rate, layout, reconnect, pacing, queue), each
    #   checked and kept
    def __init__(
        self,
        url: str | Path | None = None,
        *,
        device: str | None = None,
        transport: str | None = None,
        name: str = "audio",
        stream: int = 0,
        frame_ms: float = 20.0,
        frame_samples: int | None = None,
        rate: int | None = None,
        layout: str | None = None,
        input_format: str | None = None,
        options: Mapping[str, str] | None = None,
        live: bool | None = None,
        speed: float | None = None,
        open_timeout: float | None = 10.0,
        read_timeout: float | None = 5.0,
        reconnect: bool | None = None,
        backoff: tuple[float, float] = (0.1, 2.0),
        max_reconnects: int | None = None,
        clock: ClockModel | None = None,
        capacity: int = 256,
        overflow: Overflow | None = None,
    ) -> None:
        if (url is None) == (device is None):
            raise ConfigError("give either url or device (as 'alsa:hw:0'), not both or neither")
        if device is not None:
            kind, sep, rest = device.partition(":")
            if not sep or kind not in AUDIO_DEVICES or not rest:
                raise ConfigError(
                    f"device {device!r}: expected '<input>:<device>' with <input> one of "
                    f"{', '.join(AUDIO_DEVICES)} (e.g. 'alsa:hw:0', 'pulse:default')"
                )
            if input_format not in (None, kind):
                raise ConfigError(f"device {device!r} contradicts input_format {input_format!r}")
            input_format, url = kind, rest
        url = str(url)
        options = {k: str(v) for k, v in (options or {}).items()}
        if transport is not None:
            if not url.lower().startswith(("rtsp://", "rtsps://")):
                raise ConfigError(f"transport {transport!r} is for rtsp:// URLs, not {url!r}")
            options["rtsp_transport"] = transport
        if not (0 < backoff[0] <= backoff[1]):
            raise ConfigError(f"backoff must be (first > 0, longest >= first) s, got {backoff!r}")
        if max_reconnects is not None and max_reconnects < 0:
            raise ConfigError(f"max_reconnects must be >= 0 or None, got {max_reconnects}")
        if not frame_ms > 0 or frame_ms > 60_000:
            raise ConfigError(f"frame_ms must be in (0, 60000], got {frame_ms}")
        if frame_samples is not None and not 1 <= frame_samples <= 10_000_000:
            raise ConfigError(f"frame_samples must be in 1..10000000, got {frame_samples}")
        if rate is not None and not 1 <= rate <= 1_536_000:
            raise ConfigError(f"rate must be in 1..1536000 Hz, got {rate}")
        if layout is not None:
            import av

            try:
                av.AudioLayout(layout)
            except (ValueError, av.error.FFmpegError) as err:
                raise ConfigError(
                    f"layout {layout!r} is not a channel layout FFmpeg knows"
                ) from err
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        if live is None:
            live = (
                is_live(url, input_format)
                or input_format in AUDIO_DEVICES
                or is_sdp(url, input_format)
            )
        if reconnect is None:
            reconnect = live and is_network(url, input_format)
        self.options = AudioOptions(
            url=url,
            stream=stream,
            frame_samples=frame_samples,
            frame_ms=frame_ms,
            rate=rate,
            layout=layout,
            input_format=input_format,
            options=options,
            live=live,
            open_timeout=open_timeout,
            read_timeout=read_timeout,
            reconnect=reconnect,
            backoff_initial=backoff[0],
            backoff_max=backoff[1],
            max_reconnects=max_reconnects,
        )
        self.live = live
        self.speed = speed
        super().__init__(
            SensorSpec(
                name,
                kind="audio",
                clock=clock,
                capacity=capacity,
                overflow=overflow or ("drop_oldest" if live else "block"),
                meta={"input": url, "stream": stream, "frame_ms": frame_ms},
            )
        )
        self.opened: Opened | None = None
        """The stream as decoded (codec, rates, layouts), once open."""
        self.gap_samples = 0
        """Samples the stream's PTS skipped (gaps)."""
        self.reconnects = 0
        """Times a live network input was reopened and delivered again."""
        self.silences_ns: list[int] = []
        """Arrival time without data around each reconnect (the last 256)."""
        self._restart: dict[str, Any] | None = None  # meta for the next frame
        self._last_arrival: int | None = None

    def statistics(self) -> Mapping[str, Any]:
        """Base counters plus the decoded stream's facts and the samples its gaps skipped."""
        opened = self.opened
        return {
            **super().statistics(),
            "gap_samples": self.gap_samples,
            "reconnects": self.reconnects,
            "rate": None if opened is None else opened.rate,
            "channels": None if opened is None else opened.channels,
        }

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return not self.live

    async def frames(self) -> AsyncIterator[Frame]:
        queue: Prefetch[Batch] = Prefetch(64, drop_oldest=False, wake_after=1)
        stop = threading.Event()
        failure: list[BaseException] = []
        clock = current_clock()

        def put(batch: Batch) -> bool:
            return queue.put(batch, wait=True) is not None

        def body() -> None:
            try:
                decode(self.options, put, stop, clock.now)
            except BaseException as err:  # handed to the event loop, raised there
                failure.append(err)
            finally:
                queue.finish()

        thread = threading.Thread(target=body, name=f"audio-{self.name}", daemon=True)
        thread.start()
        start: tuple[int, int] | None = None
        try:
            while True:
                try:
                    batch = await queue.get()
                except anyio.EndOfStream:
                    break
                for item in batch.items:
                    frame = self._item(item, batch.arrival)
                    if frame is None:
                        continue
                    if self.speed is not None and not self.live:
                        start = start or (clock.now(), frame.t_sensor)
                        await clock.sleep_until(
                            start[0] + round((frame.t_sensor - start[1]) / self.speed)
                        )
                    yield frame
            if failure:
                err = failure[0]
                if isinstance(err, SourceError):
                    err.sensor = err.sensor or self.name
                    raise err
                raise SourceError(
                    f"audio {self.options.url!r}: {type(err).__name__}: {err}", sensor=self.name
                ) from err
        finally:
            stop.set()
            queue.close()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(thread.join, 5.0)

    def silence_timeout_s(self) -> float:
        """The read timeout of a live input; otherwise the base rule."""
        timeout = self.options.read_timeout
        return float(timeout) if timeout and self.live else super().silence_timeout_s()

    # long: one branch per decoder event (opened, silence, open failed, reconnected, loss,
    #   discontinuity, samples), each with its ledger entry and log line
    def _item(self, item: Item, arrival: int | None) -> Frame | None:
        if isinstance(item, Opened):
            self.opened = item
            log.info(
                "%s: %s %d Hz %s -> %d Hz %s (connection %d)",
                self.name, item.codec, item.source_rate, item.source_layout, item.rate,
                item.layout, item.connection,
            )  # fmt: skip
            return None
        if isinstance(item, Silence):
            message = (
                f"{self.name}: {self.options.url}: {item.reason} (connection {item.connection}"
                f"{'' if item.last_index is None else f', after sample {item.last_index}'}); "
                "reconnecting"
            )
            self.count_error("silence", message, units=0)
            log.warning("%s", message)
            return None
        if isinstance(item, OpenFailed):
            self.count_error("open_failed", f"{self.name}: {item.reason}", units=0)
            if item.attempt == 0:
                retry = "giving up" if item.retry_in_s is None else "retrying until it answers"
                log.warning("%s: %s (%s)", self.name, item.reason, retry)
            return None
        if isinstance(item, Reconnected):
            gap_ns = (
                None
                if arrival is None or self._last_arrival is None
                else arrival - self._last_arrival
            )
            self.reconnects += 1
            if gap_ns is not None:
                self.silences_ns = [*self.silences_ns[-255:], gap_ns]
            epoch = (
                "a new timeline"
                if item.expected is None or abs(item.found - item.expected) > 1
                else "the same timeline"
            )
            message = (
                f"{self.name}: reconnected (connection {item.connection}"
                f"{'' if gap_ns is None else f', {gap_ns / 1e9:.2f} s without data'}): "
                f"{epoch}, starting at sample {item.found}"
                f"{'' if item.expected is None else f' (the last ended at {item.expected})'}"
            )
            self.count_error("reconnect", message, units=0)
            log.warning("%s", message)
            self._restart = {"segment_start": True, "connection": item.connection}
            if gap_ns is not None:
                self._restart["gap_ns"] = gap_ns
            return None
        if isinstance(item, Loss):
            self.count_received(item.units)
            self.count_error(item.reason, item.message, units=item.units)
            return None
        opened = self.opened
        assert opened is not None
        rate = opened.rate
        if isinstance(item, Discontinuity):
            if item.samples > 0:
                self.gap_samples += item.samples
            self.count_error(
                item.reason,
                f"{self.name}: the stream's PTS jumped from sample {item.expected} to "
                f"{item.found} ({item.samples:+d} samples, {item.samples / rate * 1000:+.3f} ms)",
                units=0,
            )
            return None
        self.count_received(item.units)
        n = item.samples.shape[1]
        meta: dict[str, Any] = {
            "sample_index": item.index,
            "rate": rate,
            "samples": n,
            "partial": item.partial,
            "layout": opened.layout,
        }
        if opened.connection:
            meta["connection"] = opened.connection
        if self._restart is not None:
            meta |= self._restart
            self._restart = None
        if arrival is not None:
            self._last_arrival = arrival
        return self.make_frame(
            sample_time(item.index, rate),
            item.samples,
            t_arrival=arrival,
            units=item.units,
            meta=meta,
        )
