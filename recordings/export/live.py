"""A live view: the ``foxglove`` export profile served over the Foxglove WebSocket protocol.

Theory of operation. :class:`FoxgloveServer` starts ``foxglove-sdk``'s
WebSocket server (``foxglove.start_server``, protocol
``foxglove.websocket.v1``) on its own ``foxglove.Context`` and writes into that
context with the export's own writer
(:class:`~recordings.export.foxglove.FoxgloveMcapWriter` with no file), so
every sensor is the channel, schema and message it is in a ``--profile
foxglove`` MCAP export: ``foxglove.RawImage``/``CompressedImage``,
``foxglove.PointCloud``, ``foxglove.LocationFix``, IMU JSON records, a bag's
messages in ROS 2 CDR... Sync groups go to ``/hyperframes/groups`` (the
export's JSON markers) and worker results to ``/hyperframes/results/<worker>``
(JSON).

Nothing here waits on a client. :meth:`FoxgloveServer.publish` only appends
to a bounded queue (``backlog`` items); a thread takes items from it, dates
them, encodes them and hands them to the SDK, which queues each message per
client and never blocks either. When the thread falls behind, the oldest
queued item is dropped and counted by sensor
(:attr:`FoxgloveServerStatistics.dropped`). The SDK listens on a private
loopback port behind a :class:`~recordings.export.live_relay.Relay`, which
holds each client's outbox (``client_backlog`` messages, ``client_backlog_bytes``):
when a client stops reading, its oldest messages are dropped and counted per
client (:attr:`FoxgloveServerStatistics.traffic`; the SDK itself drops them
without a count). Frames of a channel no client subscribes to are not encoded
at all (:attr:`~FoxgloveServerStatistics.unwatched`).

Stamps are Unix-epoch ns, as in an export: ``dating="live"`` dates
reference-clock times with a wall anchor (:func:`fusion.wallclock.sample_anchor`)
taken at start and refreshed every second, as the recorder does per chunk; a
:class:`~fusion.wallclock.WallClock` (a recording's, with its ``dated``
sensors) dates a replay exactly as ``hyperframes export`` does; ``None``
leaves stamps alone (a virtual clock's times are no dates).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from fusion.errors import UsageError
from fusion.frames import Frame, FrameGroup, SensorSpec
from recordings.export.generic import json_value
from recordings.export.groups import GROUP_TOPIC
from recordings.export.live_relay import ClientTraffic, Relay
from recordings.export.live_sink import Dating, LiveSink

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
RESULTS_TOPIC = "/hyperframes/results/"
"""Prefix of the worker-result topics (``/hyperframes/results/<worker>``)."""
_RESULT_MAX_VALUES = 65_536  # a bigger array goes out as its shape and dtype only
_SDK_BACKLOG = 1024  # the SDK's queue towards the relay, drained by a loopback read


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
    """Every client since the start (connected or not): messages sent to it and dropped
    because it read too slowly."""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def client_dropped_total(self) -> int:
        """Messages dropped for slow clients, all clients together."""
        return sum(c.dropped for c in self.traffic)

    def drops(self) -> str:
        """``K dropped (encoder behind); D messages dropped for slow clients (ADDR: D)``, or ''."""
        parts = []
        if self.dropped_total:
            parts.append(f"{self.dropped_total} dropped (encoder behind)")
        slow = [c for c in self.traffic if c.dropped or not c.exact]
        if slow:
            bound = "" if all(c.exact for c in slow) else "at least "
            who = ", ".join(c.describe() for c in slow)
            total = sum(c.at_least for c in slow)
            parts.append(f"{bound}{total} messages dropped for slow clients ({who})")
        return "; ".join(parts)

    def describe(self) -> str:
        """One line for a live table: the URL, frames sent and what was dropped."""
        who = f"{self.clients} client{'' if self.clients == 1 else 's'}"
        line = f"foxglove {self.url}: {who}, {sum(self.frames.values())} frames sent"
        drops = self.drops()
        return f"{line}, {drops}" if drops else line


class FoxgloveServer(LiveSink):
    """A Foxglove WebSocket server fed by a pipeline: a sink (``sinks=[FoxgloveServer()]``).

    ``server(group)`` publishes the group's frames (each frame once, even when
    windows overlap), its marker and its worker results; :meth:`publish` sends
    one frame (a replay without a pipeline). ``port=0`` picks a free port
    (:attr:`port`). The server starts on :meth:`start` (or the first publish)
    and stops on :meth:`close`; both are quick (the SDK runs it on its own
    threads).
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
        name: str = "hyperframes",
    ) -> None:
        if backlog < 1 or client_backlog < 1 or client_backlog_bytes < 1:
            raise UsageError(
                f"FoxgloveServer: backlog and client_backlog must be >= 1 (and "
                f"client_backlog_bytes), got {backlog}, {client_backlog} and {client_backlog_bytes}"
            )
        super().__init__(backlog=backlog, sensors=sensors, dating=dating, dated=dated)
        self.host = host
        self._port = port
        self.name = name
        self.client_backlog = client_backlog
        self.client_backlog_bytes = client_backlog_bytes
        self._relay: Relay | None = None
        self._types = dict(types or {})
        self._messages = self._groups = self._unwatched = 0
        self._frames: Counter[str] = Counter()
        self._skipped: Counter[tuple[str, str]] = Counter()
        self._server: Any = None
        self._writer: Any = None
        self._results: dict[str, Any] = {}
        self._listener = _Subscriptions()

    # -- lifetime ----------------------------------------------------------------

    def start(self) -> FoxgloveServer:
        """Bind and start serving (idempotent); raises ``OSError`` if the port is taken."""
        if self._closed:
            raise UsageError("FoxgloveServer is closed; make a new one")
        if self._server is not None:
            return self
        import foxglove

        from recordings.export.foxglove import FoxgloveMcapWriter

        context = foxglove.Context()
        try:
            relay = Relay(
                self.host,
                self._port,
                ("127.0.0.1", 0),
                backlog=self.client_backlog,
                backlog_bytes=self.client_backlog_bytes,
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
            )
        except RuntimeError as err:  # the SDK reports a bind failure as RuntimeError
            relay.close()
            raise OSError(f"cannot start the Foxglove server: {err}") from err
        relay.upstream = ("127.0.0.1", int(self._server.port))
        relay.start()
        self._relay = relay
        self._port = relay.port
        self._writer = FoxgloveMcapWriter(None, context=context, types=self._types)
        for spec in self._specs.values():
            self._writer.declare(spec)
        self._thread = threading.Thread(target=self._run, name="foxglove-live", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        """The port served (the one picked when constructed with ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def close(self) -> None:
        """Stop the server: queued items are dropped (counted), clients disconnected."""
        if not self._close_queue():
            return
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._server is not None:
            self._server.stop()
        if self._relay is not None:
            self._relay.close()
        if self._writer is not None:
            self._writer.close()

    # -- feeding (never blocks) -------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec`` (its kind breaks payload ties; a bag's topic and type are kept)."""
        self._specs[spec.name] = spec
        if self._writer is not None:
            with self._cond:
                self._writer.declare(spec)

    # -- the encoder thread --------------------------------------------------------------

    def _run(self) -> None:
        writer = self._writer
        while (item := self._take()) is not None:
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

    def _log(self, frame: Frame) -> _Done:
        writer = self._writer
        if writer.unwatched(writer.topic_for(frame.sensor)):
            return _Done(unwatched=1)
        before = sum(writer.counts.values())
        spec = self._specs.get(frame.sensor)
        wrote = writer.write(self._dated_frame(frame), spec.kind if spec is not None else None)
        if wrote and writer.unwatched(writer.topic_for(frame.sensor)):
            return _Done(unwatched=1)  # the channel's first frame: advertised, seen by none
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
                clients=self._listener.clients(),
                skipped=Counter(self._skipped),
                traffic=() if self._relay is None else self._relay.traffic(),
            )


class _Subscriptions:
    """The SDK's server listener: which client subscribed to which channel (SDK threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[int, set[int]] = {}

    def on_subscribe(self, client: Any, channel: Any) -> None:
        with self._lock:
            self._subs.setdefault(client.id, set()).add(channel.id)

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        with self._lock:
            subs = self._subs.get(client.id, set())
            subs.discard(channel.id)
            if not subs:
                self._subs.pop(client.id, None)

    def clients(self) -> int:
        with self._lock:
            return len(self._subs)


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
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)
