"""A live view: the ``foxglove`` export profile served over the Foxglove WebSocket protocol.

Theory of operation. :class:`FoxgloveServer` starts ``foxglove-sdk``'s
WebSocket server (``foxglove.start_server``, protocol
``foxglove.websocket.v1``) on its own ``foxglove.Context`` and writes into that
context with the export's own writer
(:class:`~recordings.outputs.encoders._foxglove.FoxgloveMcapWriter` with no file), so
every sensor is the channel, schema and message it is in a ``--profile
foxglove`` MCAP export: ``foxglove.RawImage``/``CompressedImage``,
``foxglove.PointCloud``, ``foxglove.LocationFix``, IMU JSON records, a bag's
messages in ROS 2 CDR... Sync groups go to ``/hyperframes/groups`` (the
export's JSON markers) and worker results to ``/hyperframes/results/<worker>``
(JSON).

Nothing here waits on a client. :meth:`FoxgloveServer.publish` only appends
to a bounded queue (``backlog`` items); a thread takes items from it, dates
them, encodes them and hands them to the SDK. When the thread falls behind, the
oldest queued item is dropped and counted by sensor
(:attr:`FoxgloveServerStatistics.dropped`). The SDK listens on a private
loopback port with one client, a :class:`~recordings.outputs.live._relay.Relay`,
which is the server Foxglove connects to: it fans each message out to every
subscriber within a memory budget for all clients (``budget``), a client limit
(``max_clients``, more are refused with ``503`` and the reason), a handshake and
an idle timeout, and counts what each slow client loses
(:attr:`FoxgloveServerStatistics.traffic`). Frames of a channel no client
subscribes to are not encoded (:attr:`~FoxgloveServerStatistics.unwatched`).

Late subscribers. A channel is advertised on its sensor's first frame, which
no client can have subscribed to yet: while a channel is unwatched its last
frame (every frame of a latched topic, ``/tf_static`` or ``transient_local``,
up to 256) is held, and written when a client subscribes; while it is watched
the relay keeps the last message (a latched topic's every message) and sends
it to each new subscriber first, as ROS 2's foxglove_bridge does for
``transient_local`` publishers.

Playback. ``playback_time`` sends the frames' time (the ``time`` capability); a
:class:`PlaybackHandler` (``replay --serve``) also advertises ``playbackControl`` with
its time range: Foxglove's pause, play, speed and seek reach the handler and every
client is told the resulting state; :meth:`FoxgloveServer.flush` lets the last frames
reach the clients before the end is told (:meth:`FoxgloveServer.tell_playback`).

Stamps are Unix-epoch ns, as in an export: ``dating="live"`` dates
reference-clock times with a wall anchor (:func:`fusion._wallclock.sample_anchor`)
taken at start and refreshed every second, as the recorder does per chunk; a
:class:`~fusion._wallclock.WallClock` (a recording's, with its ``dated``
sensors) dates a replay exactly as ``hyperframes export`` does; ``None``
leaves stamps alone (a virtual clock's times are no dates).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import numpy as np

from fusion import Frame, FrameGroup, SensorSpec
from fusion.errors import UsageError
from recordings.outputs.encoders._generic import js_int, json_value
from recordings.outputs.encoders._groups import GROUP_TOPIC
from recordings.outputs.live._held_frames import HeldFrames
from recordings.outputs.live._relay import Relay, RelayStatistics
from recordings.outputs.live._relay_client import ClientTraffic
from recordings.outputs.live._sink import Dating, LiveSink

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
RESULTS_TOPIC = "/hyperframes/results/"
"""Prefix of the worker-result topics (``/hyperframes/results/<worker>``)."""
_RESULT_MAX_VALUES = 65_536  # a bigger array goes out as its shape and dtype only
_SDK_BACKLOG = 1024  # the SDK's queue towards the relay, drained by a loopback read
_TIME_EVERY_NS = 50_000_000  # the time capability's updates: 20 a second of replay
LATCHED_TOPICS = frozenset({"/tf_static"})
"""Topics whose every message a late subscriber gets, whatever their sensor's QoS."""


@dataclass(frozen=True, slots=True)
class FoxgloveServerStatistics:
    """What the live view did so far."""

    url: str
    """``ws://HOST:PORT`` to connect Foxglove to."""
    frames: Counter[str] = field(default_factory=Counter)
    """Frames handed to the server (encoded for at least one subscriber), per sensor."""
    messages: int = 0
    """Messages logged to the server (a time series frame is one message per row)."""
    groups: int = 0
    """Groups taken from the pipeline (marker and results logged where subscribed)."""
    clients: int = 0
    """Clients subscribed to at least one channel now."""
    unwatched: int = 0
    """Frames not encoded because no client subscribed to their channel."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Frames (or ``"groups"``) dropped because the encoder fell behind, per sensor."""
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Frames with no Foxglove message, by ``(sensor, reason)`` (as in an export)."""
    traffic: tuple[ClientTraffic, ...] = ()
    """The clients connected now and the last 256 that left: messages sent to each and
    dropped because it read too slowly."""
    late: int = 0
    """Held frames written when a client subscribed to their channel (also in ``unwatched``,
    where they were counted when they came)."""
    relay: RelayStatistics = field(default_factory=RelayStatistics)
    """Connections accepted and refused, why clients left, the bytes queued for them."""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def client_dropped_total(self) -> int:
        """Messages dropped for slow clients, all clients together."""
        return sum(c.dropped for c in self.traffic)

    def drops(self) -> str:
        """``K dropped (encoder behind); D messages dropped for slow clients (ADDR: D);
        R connections refused (client limit: R)``, or ''."""
        parts = []
        if self.dropped_total:
            parts.append(f"{self.dropped_total} dropped (encoder behind)")
        slow = [c for c in self.traffic if c.dropped or not c.exact]
        if slow:
            bound = "" if all(c.exact for c in slow) else "at least "
            who = ", ".join(c.describe() for c in slow[:_LISTED])
            if len(slow) > _LISTED:
                who += f" and {len(slow) - _LISTED} more"
            total = sum(c.at_least for c in slow)
            parts.append(f"{bound}{total} messages dropped for slow clients ({who})")
        refused = self.relay.refused
        if refused:
            why = ", ".join(f"{k}: {v}" for k, v in sorted(refused.items()))
            parts.append(f"{refused.total()} connections refused ({why})")
        return "; ".join(parts)

    def connections(self) -> str:
        """``N clients in all (left: R reset, I idle...)``, or '' if none connected."""
        relay = self.relay
        if not relay.accepted:
            return ""
        line = f"{relay.accepted} client{'' if relay.accepted == 1 else 's'} in all"
        if relay.closed:
            left = ", ".join(f"{n} {why}" for why, n in sorted(relay.closed.items()))
            line += f" (left: {left})"
        return line

    def describe(self) -> str:
        """One line for a live table: the URL, frames sent and what was dropped."""
        who = f"{self.clients} client{'' if self.clients == 1 else 's'}"
        line = f"foxglove {self.url}: {who}, {sum(self.frames.values())} frames sent"
        drops = self.drops()
        return f"{line}, {drops}" if drops else line


_LISTED = 8  # slow clients named in a line; the rest are counted


@dataclass(frozen=True, slots=True)
class PlaybackRequest:
    """Foxglove's playback control request (pause/play, speed, seek), as the app sent it."""

    pause: bool
    speed: float
    seek: int | None
    """The time to play from, in the served time (epoch ns), or ``None``."""


@dataclass(frozen=True, slots=True)
class PlaybackReply:
    """What a :class:`PlaybackHandler` did: the playback state every client is told."""

    status: Literal["playing", "paused", "ended"]
    speed: float
    did_seek: bool = False
    time: int | None = None
    """The current time (served, epoch ns); ``None``: the last time the server sent."""


class PlaybackHandler(Protocol):
    """What ``FoxgloveServer(playback=...)`` calls for Foxglove's playback controls."""

    @property
    def time_range(self) -> tuple[int, int]:
        """The served time range (epoch ns) the app's timeline shows."""
        ...

    def __call__(self, request: PlaybackRequest) -> PlaybackReply:
        """Act on ``request`` (from an SDK thread) and say the resulting state."""
        ...


class FoxgloveServer(LiveSink):
    """A Foxglove WebSocket server fed by a pipeline: a sink (``sinks=[FoxgloveServer()]``).

    ``server(group)`` publishes the group's frames (each frame once, even when
    windows overlap), its marker and its worker results; :meth:`publish` sends
    one frame (a replay without a pipeline). ``port=0`` picks a free port
    (:attr:`port`). The server starts on :meth:`start` (or the first publish)
    and stops on :meth:`close`; both are quick, whatever the clients do.

    Limits (module docstring): ``budget`` bytes queued for all clients together,
    ``client_backlog`` messages and ``client_backlog_bytes`` for one, ``max_clients``
    connections, ``handshake_timeout`` s to send the upgrade request and
    ``idle_timeout`` s of silence (no pong to a ping) before a client is closed.
    ``playback_time`` advertises the protocol's ``time`` capability and sends the frames'
    time (a replay's clock for Foxglove's timeline). ``playback`` (a
    :class:`PlaybackHandler`) advertises ``playbackControl`` with its time range: Foxglove's
    play/pause, speed and seek reach it, and every client is told the resulting state.
    ``latched`` names topics whose every message a late subscriber gets (a bag's
    ``transient_local`` or latching topics), besides ``/tf_static`` and sensors whose spec
    says so (:func:`latched`).
    """

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        sensors: Iterable[SensorSpec] = (),
        dating: Dating = "live",
        dated: Iterable[str] | None = None,
        types: Mapping[str, str] | None = None,
        backlog: int = 256,
        client_backlog: int = 128,
        client_backlog_bytes: int = 64 << 20,
        budget: int = 256 << 20,
        max_clients: int = 32,
        handshake_timeout: float = 5.0,
        idle_timeout: float = 30.0,
        playback_time: bool = False,
        playback: PlaybackHandler | None = None,
        latched: Iterable[str] = (),
        name: str = "hyperframes",
    ) -> None:
        if backlog < 1 or client_backlog < 1 or client_backlog_bytes < 1:
            raise UsageError(
                f"FoxgloveServer: backlog and client_backlog must be >= 1 (and "
                f"client_backlog_bytes), got {backlog}, {client_backlog} and {client_backlog_bytes}"
            )
        if budget < 1 << 20 or max_clients < 1 or handshake_timeout <= 0 or idle_timeout <= 0:
            raise UsageError(
                f"FoxgloveServer: budget must be >= 1 MiB, max_clients >= 1 and the timeouts "
                f"> 0, got {budget} bytes, {max_clients} clients, {handshake_timeout} s and "
                f"{idle_timeout} s"
            )
        super().__init__(backlog=backlog, sensors=sensors, dating=dating, dated=dated)
        self.host = host
        self._port = port
        self.name = name
        self.playback_time = playback_time or playback is not None
        self.playback = playback
        self.latched = frozenset(latched) | LATCHED_TOPICS
        self._clock = _Clock(playback)
        self.client_backlog = client_backlog
        self.client_backlog_bytes = min(client_backlog_bytes, budget)
        self.budget = budget
        self.max_clients = max_clients
        self.handshake_timeout = handshake_timeout
        self.idle_timeout = idle_timeout
        self._relay: Relay | None = None
        self._held = HeldFrames(budget)  # frames nobody could see yet, per topic
        self._late = 0
        self._types = dict(types or {})
        self._messages = self._groups = self._unwatched = 0
        self._frames: Counter[str] = Counter()
        self._skipped: Counter[tuple[str, str]] = Counter()
        self._server: Any = None
        self._writer: Any = None
        self._results: dict[str, Any] = {}
        self._listener = _Subscriptions(self._subscribed, self._clock.request)

    # -- lifetime ----------------------------------------------------------------

    def start(self) -> FoxgloveServer:
        """Bind and start serving (idempotent); raises ``OSError`` if the port is taken."""
        if self._closed:
            raise UsageError("FoxgloveServer is closed; make a new one")
        if self._server is not None:
            return self
        import foxglove

        from recordings.outputs.encoders._foxglove import FoxgloveMcapWriter

        context = foxglove.Context()
        try:
            relay = Relay(
                self.host,
                self._port,
                ("127.0.0.1", 0),
                backlog=self.client_backlog,
                backlog_bytes=self.client_backlog_bytes,
                budget=self.budget,
                max_clients=self.max_clients,
                handshake_timeout=self.handshake_timeout,
                idle_timeout=self.idle_timeout,
                latched=self.latched,
            )
        except OSError as err:
            raise OSError(f"cannot serve Foxglove on {self.host}:{self._port}: {err}") from err
        try:  # the SDK's server, private, behind the relay that counts per client
            self._server = foxglove.start_server(
                name=self.name,
                host="127.0.0.1",
                port=0,
                context=context,
                message_backlog_size=_SDK_BACKLOG,
                # the listener implements the two callbacks it needs of the protocol
                server_listener=cast(Any, self._listener),
                capabilities=self._clock.capabilities(self.playback_time),
                playback_time_range=None if self.playback is None else self.playback.time_range,
            )
        except RuntimeError as err:  # the SDK reports a bind failure as RuntimeError
            relay.close()
            raise OSError(f"cannot start the Foxglove server: {err}") from err
        relay.upstream = ("127.0.0.1", int(self._server.port))
        self._relay = relay
        self._writer = FoxgloveMcapWriter(None, context=context, types=self._types)
        for spec in self._specs.values():  # before the relay connects: one advertise for all
            self._declare(spec)
        try:
            relay.start()
        except OSError as err:
            relay.close()
            self._server.stop()
            self._relay = None
            raise OSError(f"cannot start the Foxglove relay: {err}") from err
        self._port = relay.port
        self._thread = threading.Thread(target=self._run, name="foxglove-live", daemon=True)
        self._thread.start()
        return self

    def tell_playback(self, reply: PlaybackReply) -> None:
        """Tell every client a playback state that changed by itself (the end reached)."""
        if self._server is not None and self.playback is not None:
            self._server.broadcast_playback_state(self._clock.state(reply, None))

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait (at most ``timeout`` s) until every queued frame was encoded and what the
        SDK sent has gone out to the clients; ``False`` if time ran out first. A replay
        calls it at its end, so the last frames reach the clients before :meth:`close`."""
        import time

        deadline = time.monotonic() + timeout
        with self._cond:
            while (self._queue or self._busy or self._held.wanted) and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        if self._relay is None:
            return True
        last = self._relay.settled()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self._relay.settled()
            if now == last and now[1] == 0:
                return True
            last = now
        return False

    @property
    def port(self) -> int:
        """The port served (the one picked when constructed with ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def close(self) -> None:
        """Stop the server: queued items are dropped (counted), clients disconnected.
        Returns within about 2 s whatever the clients do."""
        if not self._close_queue():
            return
        if self._relay is not None:
            self._relay.close()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self._server is not None:
            self._server.stop()
        if self._writer is not None and (self._thread is None or not self._thread.is_alive()):
            self._writer.close()

    # -- feeding (never blocks) -------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec`` (its kind breaks payload ties; a bag's topic and type are kept)."""
        self._specs[spec.name] = spec
        if self._writer is not None:
            with self._cond:
                self._declare(spec)

    def _declare(self, spec: SensorSpec) -> None:
        self._writer.declare(spec)
        self._writer.advertise(spec.name)  # a bag's topic: advertised before its first frame
        if self._relay is not None and latched(spec):
            self._relay.latched.add(self._writer.topic_for(spec.name))

    def _subscribed(self, topic: str) -> None:
        """The relay subscribed to ``topic`` (SDK thread): its held frames go out."""
        with self._cond:
            held = self._held.want(topic)
        if held:
            self._wake()

    # -- the encoder thread --------------------------------------------------------------

    def _run(self) -> None:
        writer = self._writer
        while (item := self._take_or_wake()) is not False:
            self._write_held()
            if item is True:
                continue
            # Encoding runs outside the lock: publish() never waits for it.
            try:
                done = self._log_group(item) if isinstance(item, FrameGroup) else self._log(item)
            except Exception as err:  # the live view must never take the pipeline down
                done = _Done(error=err)
            with self._cond:
                if done.error is not None:
                    self._error = done.error
                    self._count_drop(item)
                if done.sensor is not None:
                    self._frames[done.sensor] += 1
                self._messages += done.messages
                self._unwatched += done.unwatched
                self._groups += done.groups
                if len(writer.skipped) != len(self._skipped) or done.skipped:
                    self._skipped = Counter(writer.skipped)
                self._busy = False
            if self.playback_time and isinstance(item, Frame):
                t = self._date(item.t) if self._dates(item.sensor) else item.t
                self._clock.tell_time(self._server, t)

    def _write_held(self) -> None:
        """Write the held frames of the topics a client just subscribed to."""
        with self._cond:
            frames = self._held.take()
        for frame in frames:
            spec = self._specs.get(frame.sensor)
            try:
                wrote = self._writer.write(frame, spec.kind if spec is not None else None)
            except Exception as err:  # counted when it came (unwatched); said here
                self._error = err
                continue
            if wrote:
                with self._cond:
                    self._late += 1

    def _hold(self, topic: str, frame: Frame) -> None:
        spec = self._specs.get(frame.sensor)
        with self._cond:
            self._held.hold(topic, frame, topic in self.latched or bool(spec and latched(spec)))

    def _log(self, frame: Frame) -> _Done:
        writer = self._writer
        topic = writer.topic_for(frame.sensor)
        if writer.unwatched(topic):
            self._hold(topic, self._dated_frame(frame))
            return _Done(unwatched=1)
        with self._cond:  # subscribed before the relay's word reached us: held frames first,
            early = self._held.want(topic)  # so a client never sees time go back
        if early:
            self._write_held()
        before = sum(writer.counts.values())
        spec = self._specs.get(frame.sensor)
        dated = self._dated_frame(frame)
        wrote = writer.write(dated, spec.kind if spec is not None else None)
        if wrote and writer.unwatched(topic):
            # the channel's first frame: advertised now, seen by none; held for a subscriber
            self._hold(topic, dated)
            return _Done(unwatched=1)
        return _Done(
            sensor=frame.sensor if wrote else None,
            messages=sum(writer.counts.values()) - before,
            skipped=not wrote,
        )

    def _log_group(self, group: FrameGroup) -> _Done:
        members, t = self._dated_members(group)
        marker = FrameGroup(t, members, group.missing)
        messages = 0
        if len(members) > 1 and not self._writer.unwatched(GROUP_TOPIC):
            self._writer.write_group(marker)
            messages += 0 if self._writer.unwatched(GROUP_TOPIC) else 1
        for worker, value in group.results.items():
            messages += self._log_result(worker, t, value)
        return _Done(messages=messages, groups=1)

    def _log_result(self, worker: str, t: int, value: Any) -> int:
        import foxglove

        channel = self._results.get(worker)
        if channel is None:
            schema = foxglove.Schema(
                name="hyperframes.WorkerResult",
                encoding="jsonschema",
                data=b'{"title": "hyperframes.WorkerResult", "type": "object"}',
            )
            channel = foxglove.Channel(
                RESULTS_TOPIC + worker,
                schema=schema,
                message_encoding="json",
                context=self._writer._context,
            )
            self._results[worker] = channel
        if not channel.has_sinks():
            return 0
        record: dict[str, Any] = {
            "timestamp": {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000},
            "worker": worker,
        }
        record.update(result_json(value))
        channel.log(record, log_time=t)
        return 1

    # -- observing ---------------------------------------------------------------------

    def statistics(self) -> FoxgloveServerStatistics:
        """A snapshot of the counters (safe to call from the event loop while serving)."""
        with self._cond:
            return FoxgloveServerStatistics(
                url=self.url,
                frames=Counter(self._frames),
                messages=self._messages,
                groups=self._groups,
                unwatched=self._unwatched,
                dropped=Counter(self._dropped),
                clients=0 if self._relay is None else self._relay.subscribers(),
                skipped=Counter(self._skipped),
                traffic=() if self._relay is None else self._relay.traffic(),
                late=self._late,
                relay=RelayStatistics() if self._relay is None else self._relay.statistics(),
            )


class _Subscriptions:
    """The SDK's server listener: the relay subscribed to a channel, a client asked for
    playback control (SDK threads)."""

    def __init__(self, subscribed: Any, playback: Any) -> None:
        self._subscribed = subscribed
        self._playback = playback

    def on_playback_control_request(self, request: Any) -> Any:
        return self._playback(request)

    def on_subscribe(self, client: Any, channel: Any) -> None:
        self._subscribed(str(channel.topic))

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        pass  # the channel's next frames are held (FoxgloveServer._log)


class _Clock:
    """The replay's clock towards Foxglove: the ``time`` capability's updates and, with a
    :class:`PlaybackHandler`, Foxglove's playback control (``playbackControl``)."""

    def __init__(self, playback: PlaybackHandler | None) -> None:
        self.playback = playback
        self._time_sent: int | None = None

    def capabilities(self, playback_time: bool) -> list[Any] | None:
        from foxglove.websocket import Capability

        if self.playback is not None:
            return [Capability.Time, Capability.PlaybackControl]
        return [Capability.Time] if playback_time else None

    def tell_time(self, server: Any, t: int) -> None:
        """The replay's clock reached ``t`` (the frame's dated time): ``server`` tells the
        clients at most every 50 ms of it, and at once when it goes back (a loop)."""
        last = self._time_sent
        if last is None or t < last or t - last >= _TIME_EVERY_NS:
            self._time_sent = t
            server.broadcast_time(t)

    def request(self, request: Any) -> Any:
        """Foxglove's playback control (an SDK thread): the handler acts, the state goes
        back to every client (the relay broadcasts it)."""
        from foxglove.websocket import PlaybackCommand

        assert self.playback is not None
        seek = request.seek_time
        reply = self.playback(
            PlaybackRequest(
                pause=request.playback_command == PlaybackCommand.Pause,
                speed=float(request.playback_speed),
                seek=None if seek is None else int(seek),
            )
        )
        if reply.did_seek:
            self._time_sent = None  # the next frame's time goes out at once
        return self.state(reply, request.request_id)

    def state(self, reply: PlaybackReply, request_id: str | None) -> Any:
        """The SDK's ``PlaybackState`` for ``reply`` (at the last time told, if it has none)."""
        from foxglove.websocket import PlaybackState, PlaybackStatus

        now = reply.time if reply.time is not None else self._time_sent
        if now is None:
            now = 0 if self.playback is None else self.playback.time_range[0]
        status = {
            "playing": PlaybackStatus.Playing,
            "paused": PlaybackStatus.Paused,
            "ended": PlaybackStatus.Ended,
        }[reply.status]
        return PlaybackState(
            status=status,
            current_time=max(0, now),
            playback_speed=reply.speed,
            did_seek=reply.did_seek,
            request_id=request_id,
        )


def latched(spec: SensorSpec) -> bool:
    """Whether a late subscriber gets every message of ``spec``'s topic: a ROS 2
    ``transient_local`` topic (a live ROS 2 source's QoS, a bag's offered QoS) or
    ``/tf_static``."""
    meta = spec.meta
    if meta.get("topic") in LATCHED_TOPICS or meta.get("latched") is True:
        return True
    ros2 = meta.get("ros2")
    qos = ros2.get("qos") if isinstance(ros2, Mapping) else meta.get("qos")
    return "transient_local" in str(qos or "") or meta.get("durability") == "transient_local"


@dataclass(slots=True)
class _Done:
    """What encoding one queued item did (counted under the lock afterwards)."""

    sensor: str | None = None
    messages: int = 0
    unwatched: int = 0
    groups: int = 0
    skipped: bool = False
    error: BaseException | None = None


def result_json(value: Any) -> dict[str, Any]:
    """A worker's result as JSON fields: ``value`` (numbers, lists, dicts) or ``error``."""
    if isinstance(value, BaseException):
        return {"error": str(value)}
    if isinstance(value, Mapping):
        return {"value": {str(k): _jsonable(v) for k, v in value.items()}}
    return {"value": _jsonable(value)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            return {"dtype": str(arr.dtype), "shape": list(arr.shape)}
        if arr.size > _RESULT_MAX_VALUES:
            return {"dtype": str(arr.dtype), "shape": list(arr.shape), "values": "omitted"}
        return json_value(arr)
    if isinstance(value, int) and not isinstance(value, bool):
        return js_int(value)
    if isinstance(value, (bool, float, str)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)
