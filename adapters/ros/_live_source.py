"""``Ros2Source``: live ROS 2 topics as a source of frames, over DDS, without a ROS install.

Theory of operation. The source joins DDS domain ``domain_id`` as one
:class:`~adapters.ros._participant.Participant` and makes one data reader per
topic, with the topic's QoS (:data:`~adapters.ros._qos.SENSOR_DATA` unless
told otherwise) and a message type built from rosbags' type store of
``ros_distro`` (:func:`~adapters.ros._idltypes.message_class`). Each topic's
type is given in ``types`` or read from the DDS graph: the publications a
ROS 2 node announces carry their DDS type name (``sensor_msgs::msg::dds_::Imu_``),
which names the ROS 2 type. A topic whose type cannot be learnt, or that the
type store does not define, is refused when the source opens, the topic named.

A taking thread waits on all readers at once (a DDS wait set, 100 ms at a
time so a stop is never late) and takes what arrived, nothing more: decoding
runs in a worker thread of the event loop meanwhile, so a camera's JPEGs never
keep a 200 Hz IMU's reader from being emptied (what is taken and not decoded
yet is bounded, 256 MiB; past it samples wait in DDS, whose queues count what
they reject). Each sample's bytes, kept raw by the type, are decoded by the same
:class:`~adapters.ros._convert.MessageConverter` that
:class:`~adapters.BagSource` uses and made a frame by the same
:func:`~adapters.ros._convert.message_frame`, so a live message is exactly
the frame the same message gives from a bag:

* ``t_sensor`` (and ``t``, which the sensor's clock model then aligns) is the
  message's ``header.stamp``; a message without a header takes its receive
  time and ``meta["stamp"]`` says ``"receive_time"``;
* ``t_arrival`` is the receive time on the runtime clock (host monotonic);
* ``meta["ros_message"]`` keeps the message's CDR bytes, and each sensor's
  spec the type's name and definition, for a lossless export.

The ledger's unit is the **message**. Every sample taken is a frame or a loss
of its topic's sensor: ``undecodable`` (bytes rosbags cannot deserialise, an
image whose size does not match its pixels...; the message takes its
``seq``). What DDS itself reports is counted too: ``dds_rejected``, samples
that found the reader's queue of ``depth`` full while hyperframes was behind
(lost from a best-effort reader; a reliable writer sends them again, so only
best-effort readers count them), and ``dds_lost``, samples DDS knows were
sent and never arrived (sequence gaps). A payload that is not valid CDR for
the type never reaches the source: Cyclone DDS checks and drops it on
receipt (see :mod:`adapters.ros._idltypes`).

A publisher that goes away is a warning (``publisher_lost``), not an end:
the reader waits for the next one, the silence shows as ``no publisher for
N s`` on the live table (:meth:`Ros2Source.idle_reason`) and the first frame
after it carries the gap (``meta["gap_ns"]``, :class:`~fusion._continuity.StreamWatch`).

The source is a thin shell over decisions made elsewhere: the topics, their QoS,
converters and specs (:mod:`adapters.ros._live_topics`), type discovery from the graph
(:mod:`adapters.ros._discovery`, sans-I/O), what a reader's statuses and the graph mean
(:mod:`adapters.ros._live_checks`, pure) and the taking thread (:mod:`adapters.ros._taker`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from adapters.errors import DecodeError
from adapters.ros._convert import message_frame
from adapters.ros._discovery import discover_types
from adapters.ros._live_checks import Distributions, hash_events, silence_events
from adapters.ros._live_topics import Route, make_route, route_spec, topic_profiles, wanted_topics
from adapters.ros._participant import Participant
from adapters.ros._qos import TopicQos
from adapters.ros._taker import Taker
from adapters.ros._typestore import type_store
from fusion import Frame, Source, StreamWatch, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError

log = logging.getLogger("hyperframes.ros2")

_MAX_REPORTS = 1000
_CHECK_NS = 2_000_000_000  # how often the graph is read
_LOGGED = 10  # warnings logged per reason before only every 1000th is

DEFAULT_DISTRO = "jazzy"
"""The ROS 2 distribution whose message definitions a source uses unless told: Jazzy, the
LTS release robots run (rosbags also has Kilted and Lyrical; set ``ros_distro``)."""


class Ros2Source(Source):
    """Frames of live ROS 2 topics over DDS (see the module docstring).

    ``Ros2Source({"/imu/data": "imu", "/velodyne_points": "lidar"})`` maps
    topics to sensor names (a list names sensors after the topics).
    ``domain_id`` is ROS 2's ``ROS_DOMAIN_ID``; ``config`` a Cyclone DDS XML
    config or ``file://`` URI (``None``: ``CYCLONEDDS_URI`` or Cyclone's
    defaults; :func:`~adapters.ros.loopback_config` for one machine).
    ``qos`` maps a topic to a :class:`~adapters.ros.TopicQos` or a table of
    its keys (default :data:`~adapters.ros.SENSOR_DATA`, which matches every
    publisher). ``types`` maps a topic to its ROS 2 type
    (``"sensor_msgs/msg/Imu"``); topics not listed are looked up in the DDS
    graph for up to ``discover_s`` seconds. ``ros_distro`` picks rosbags'
    type store (default: the newest LTS it has). ``gap_s`` is the silence
    reported as a gap on the next frame.
    """

    _ledger_unit = "message"

    def __init__(
        self,
        topics: Mapping[str, str] | Sequence[str],
        *,
        domain_id: int = 0,
        config: str | None = None,
        qos: Mapping[str, TopicQos | Mapping[str, Any]] | None = None,
        types: Mapping[str, str] | None = None,
        ros_distro: str | None = None,
        discover_s: float = 5.0,
        decode_images: bool = True,
        keep_messages: bool = True,
        capacity: int = 64,
        overflow: str = "drop_oldest",
        gap_s: float = 1.0,
        clock: ClockModel | None = None,
    ) -> None:
        wanted = wanted_topics(topics)
        profiles = topic_profiles(qos or {}, wanted)
        given = dict(types or {})
        stray = sorted(set(given) - set(wanted))
        if stray:
            raise ConfigError(f"types names topics that are not read: {', '.join(stray)}")
        if not discover_s >= 0:
            raise ConfigError(f"discover_s must be >= 0, got {discover_s}")
        if not gap_s > 0:
            raise ConfigError(f"gap_s must be > 0, got {gap_s}")
        self.ros_distro = ros_distro or DEFAULT_DISTRO
        """The ROS distribution whose message definitions are used."""
        try:
            store = type_store(self.ros_distro)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        self._distros = Distributions(store, self.ros_distro)
        self.keep_messages = keep_messages
        self.domain_id = domain_id
        self.participant = Participant(domain_id, config)
        """The DDS participant (closed with the source)."""
        try:
            found = discover_types(self.participant, wanted, given, discover_s)
            self._routes = [
                make_route(store, self.ros_distro, t, s, found[t], profiles[t], decode_images)
                for t, s in wanted.items()
            ]
            specs = tuple(
                route_spec(
                    r,
                    store=store,
                    ros_distro=self.ros_distro,
                    domain_id=domain_id,
                    keep_messages=keep_messages,
                    capacity=capacity,
                    overflow=overflow,
                    clock=clock,
                )
                for r in self._routes
            )
            self._taker = Taker(self.participant, self._routes, self._distros)
            self._taker.open_readers()
        except BaseException:
            self.participant.close()
            raise
        super().__init__(specs=specs)
        self.reports: list[str] = []
        """Every loss and warning's message, in order (the first 1000)."""
        self._gap_ns = int(gap_s * 1e9)
        self.watches = {r.sensor: StreamWatch(r.sensor, self._gap_ns, log) for r in self._routes}
        """Gaps and restarts per sensor, seen in the frames' stamps and arrivals."""
        self._ahead = {r.sensor: 0 for r in self._routes}
        self._by_sensor = {r.sensor: r for r in self._routes}

    # -- frames -------------------------------------------------------------------------

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield each topic's messages as frames as they arrive, until cancelled."""
        if self.participant.dds is None:
            raise UsageError("this Ros2Source is closed")
        clock = current_clock()
        ledgers = {r.sensor: self.ledger(r.sensor) for r in self._routes}
        seqs = self._next_seq
        for name in ledgers:
            seqs.setdefault(name, 0)
        self._ahead = dict(seqs)
        self._check_graph()
        checked = clock.now()
        self._taker.start(clock)
        while self.participant.dds is not None:  # closed (aclose from elsewhere): the end
            got = await self.run_blocking(self._taker.next_round)
            if self.participant.dds is None:
                break  # closed while the round was taken: the graph is gone with it
            if got.joined or clock.now() - checked > _CHECK_NS:
                checked = clock.now()  # a publisher DDS will not match is only in the graph
                self._check_graph()
                self._count(silence_events(self._routes, checked, self._distros))
            for sensor, n in got.received.items():
                ledgers[sensor].receive(n)
                self._by_sensor[sensor].received += n
            for sensor, reason, message, units in got.events:
                self.count_error(reason, message, units=units, sensor=sensor, arrived=False)
            # decoded in a worker thread while the taking thread goes on taking
            items = await self.run_blocking(self._convert_all, got.items) if got.items else []
            for item in items:
                if isinstance(item, tuple):
                    self._skip(*item)
                    continue
                self.watches[item.sensor].check(item)
                seqs[item.sensor] = item.seq + 1
                ledgers[item.sensor].emit(1)
                yield item

    def _check_graph(self) -> None:
        """Publishers of another type or type hash, in the DDS graph (once each)."""
        publications = self.participant.publications()
        self._count(hash_events(self._routes, publications, self._distros))

    def _count(self, events: list[tuple[str, str, str, int]]) -> None:
        for sensor, reason, message, units in events:
            self.count_error(reason, message, units=units, sensor=sensor)

    def _convert_all(
        self, items: list[tuple[Route, bytes, int]]
    ) -> list[Frame | tuple[str, int, DecodeError]]:
        return [self._convert(route, raw, now) for route, raw, now in items]

    def _convert(self, route: Route, raw: bytes, now: int) -> Frame | tuple[str, int, DecodeError]:
        seq = self._ahead[route.sensor]
        self._ahead[route.sensor] = seq + 1
        try:
            converted = route.converter(raw)
        except DecodeError as err:
            return route.sensor, seq, err
        return message_frame(
            route.sensor,
            seq,
            route.topic,
            converted,
            raw,
            now,
            keep=self.keep_messages,
            received_name="receive_time",
        )

    def _skip(self, sensor: str, seq: int, err: DecodeError) -> None:
        route = self._by_sensor[sensor]
        self._next_seq[sensor] = seq + 1
        err.sensor, err.seq = sensor, seq
        self.count_error("undecodable", f"ROS 2 topic {route.topic!r}: {err}", sensor=sensor)

    def count_error(
        self,
        reason: str,
        message: str,
        *,
        units: int = 1,
        sensor: str | None = None,
        arrived: bool = True,
    ) -> None:
        """:meth:`Source.count_error`, the message also kept in :attr:`reports` and logged."""
        super().count_error(reason, message, units=units, sensor=sensor, arrived=arrived)
        seen = self.errors[reason]
        if seen <= _LOGGED or seen % 1000 == 0:  # a flood of bad messages is not a log flood
            log.warning("%s%s", message, f" ({seen} so far)" if seen > _LOGGED else "")
        if len(self.reports) < _MAX_REPORTS:
            self.reports.append(message)

    # -- state --------------------------------------------------------------------------

    def idle_reason(self, sensor: str) -> str | None:
        """``"no publisher"`` while no writer of ``sensor``'s topic is matched."""
        route = self._by_sensor.get(sensor)
        if route is None or route.publishers:
            return None
        return f"no publisher ({route.mismatch})" if route.mismatch else "no publisher"

    def publishers(self) -> dict[str, int]:
        """Writers matched now, per topic."""
        return {r.topic: r.publishers for r in self._routes}

    def statistics(self) -> Mapping[str, Any]:
        return {
            **super().statistics(),
            "publishers": self.publishers(),
            "gaps": {name: w.as_dict() for name, w in self.watches.items()},
        }

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Leave the DDS domain (sync). Frames already yielded stay valid."""
        participant = getattr(self, "participant", None)
        if participant is not None and participant.dds is not None:
            taker = getattr(self, "_taker", None)
            if taker is not None:
                taker.close()
            else:
                participant.close()
        self._closed = True

    async def aclose(self) -> None:
        self.close()
        await super().aclose()

    def __del__(self) -> None:
        participant = getattr(self, "participant", None)
        if participant is not None and participant.dds is not None and not self._closed:
            self._warn_unclosed()

    def __repr__(self) -> str:
        names = ", ".join(f"{r.topic}={r.sensor}" for r in self._routes)
        return f"Ros2Source(domain {self.domain_id}: {names})"
