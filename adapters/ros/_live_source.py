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
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.bags import sensor_name
from adapters.errors import DecodeError, SourceOpenError
from adapters.ros._convert import MessageConverter, message_frame
from adapters.ros._idltypes import UnsupportedType, message_class, sample_bytes
from adapters.ros._messages import decoder_info
from adapters.ros._names import check_topic, dds_type_name
from adapters.ros._participant import Participant, Publication
from adapters.ros._passthrough import MSGDEF, MSGTYPE, SERIALIZATION, message_definition
from adapters.ros._qos import SENSOR_DATA, TopicQos
from adapters.ros._typestore import ros_distros, type_store
from fusion import Clock, Frame, SensorSpec, Source, StreamWatch, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError

log = logging.getLogger("hyperframes.ros2")

_WAIT_NS = 100_000_000  # one wait of the reading thread: how late a stop can be
_TAKE = 256  # samples taken from one reader per round
_MAX_REPORTS = 1000
_PENDING_BYTES = 256 << 20  # taken and not decoded yet: past this, samples wait in DDS
_CHECK_NS = 2_000_000_000  # how often the graph is read
_SILENT_NS = 5_000_000_000  # matched this long and nothing arrived: a layout DDS drops?
_LOGGED = 10  # warnings logged per reason before only every 1000th is
_SETTLE_S = 1.0  # discovery listens this much longer for a second type on a topic found

DEFAULT_DISTRO = "jazzy"
"""The ROS 2 distribution whose message definitions a source uses unless told: Jazzy, the
LTS release robots run (rosbags also has Kilted and Lyrical; set ``ros_distro``)."""
_POLICIES = {
    2: "durability",
    4: "deadline",
    8: "liveliness",
    11: "reliability",
    13: "history",
    21: "lifespan",
    23: "data representation",
}
"""DDS QoS policy ids (DDS 1.4, 2.2.4.1) a ROS 2 reader and writer can disagree on."""
_TYPE_CHECK = 24  # TYPE_CONSISTENCY_ENFORCEMENT: the writer's XTypes type is not ours


@dataclass(slots=True)
class _Route:
    """One topic: its sensor, reader and converter, and what DDS said about it."""

    topic: str
    sensor: str
    msgtype: str
    qos: TopicQos
    converter: MessageConverter
    reader: Any = None
    publishers: int = 0
    """Writers matched now (the reader's ``SUBSCRIPTION_MATCHED`` status)."""
    hashes: set[str] = field(default_factory=set)
    """Type hashes of publishers already checked against ours."""
    mismatch: str | None = None
    """Why the last publisher DDS refused to match was refused (QoS), if one was."""
    received: int = 0
    """Samples taken so far."""
    silent_since: int | None = None
    """When a publisher matched while nothing had been received yet (runtime clock)."""


@dataclass(slots=True)
class _Round:
    """What one wait of the taking thread brought (handed to the event loop)."""

    items: list[tuple[_Route, bytes, int]] = field(default_factory=list)
    """``(route, CDR bytes, receive time)`` of each sample taken, not decoded yet."""
    size: int = 0
    """Bytes in ``items``."""
    received: dict[str, int] = field(default_factory=dict)
    events: list[tuple[str, str, str, int]] = field(default_factory=list)
    """``(sensor, reason, message, units lost)``; ``units == 0`` is a warning."""
    joined: bool = False
    """A publisher matched a reader: check its type hash."""


# long: discovery, per-topic readers, QoS matching and per-topic ledgers of one DDS participant
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
        wanted = _topics(topics)
        profiles = _profiles(qos or {}, wanted)
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
        self._store = store
        self.keep_messages = keep_messages
        self.domain_id = domain_id
        self.participant = Participant(domain_id, config)
        """The DDS participant (closed with the source)."""
        try:
            found = self._discover(wanted, given, discover_s)
            self._routes = [
                self._route(topic, sensor, found[topic], profiles[topic], decode_images)
                for topic, sensor in wanted.items()
            ]
            specs = tuple(self._spec(r, capacity, overflow, clock) for r in self._routes)
            self._open_readers()
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
        self._lock = threading.Lock()
        self._pending = _Round()
        self._pending_cond = threading.Condition()
        self._taker: threading.Thread | None = None
        self._by_sensor = {r.sensor: r for r in self._routes}

    # -- opening ------------------------------------------------------------------------

    def _discover(
        self, wanted: Mapping[str, str], given: Mapping[str, str], discover_s: float
    ) -> dict[str, str]:
        """Each topic's ROS 2 type: given, else announced by its publishers in the graph."""
        found = dict(given)
        missing = [t for t in wanted if t not in found]
        deadline = time.monotonic() + discover_s
        seen: dict[str, set[str]] = {}
        settle: float | None = None  # once every type is known: a last look for a second
        while missing or (settle is not None and time.monotonic() < settle):
            for pub in self.participant.publications():
                if pub.topic in missing:
                    seen.setdefault(pub.topic, set()).add(pub.msgtype or pub.dds_type)
            for topic in list(missing):
                kinds = seen.get(topic)
                if not kinds:
                    continue
                if len(kinds) > 1:
                    raise SourceOpenError(
                        f"ROS 2 topic {topic!r} is published with several types "
                        f"({', '.join(sorted(kinds))}); give its type in types"
                    )
                (kind,) = kinds
                if "::" in kind:
                    raise SourceOpenError(
                        f"ROS 2 topic {topic!r} has DDS type {kind!r}, which is not a ROS 2 "
                        "message type name (pkg::msg::dds_::Type_)"
                    )
                found[topic] = kind
                missing.remove(topic)
            if not missing and settle is None and seen:
                settle = min(deadline, time.monotonic() + _SETTLE_S)
                continue
            if (missing or settle is None) and time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        for topic, kinds in seen.items():
            if len(kinds) > 1 and topic not in given:  # a second type showed up while settling
                raise SourceOpenError(
                    f"ROS 2 topic {topic!r} is published with several types "
                    f"({', '.join(sorted(kinds))}); give its type in types"
                )
        if missing:
            example = f'types = {{ "{missing[0]}" = "sensor_msgs/msg/Imu" }}'
            raise SourceOpenError(
                f"no publisher of ROS 2 topic{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(repr, missing))} announced its type within {discover_s:g} s "
                f"on DDS domain {self.domain_id}; give the type ({example})"
            )
        return found

    def _route(
        self, topic: str, sensor: str, msgtype: str, qos: TopicQos, decode_images: bool
    ) -> _Route:
        store = self._store
        try:
            dds_type_name(msgtype)
        except ValueError as err:
            raise SourceOpenError(f"ROS 2 topic {topic!r}: {err}") from None
        if msgtype not in store.fielddefs:
            raise SourceOpenError(
                f"ROS 2 topic {topic!r} has type {msgtype}, which ROS 2 {self.ros_distro}'s "
                "standard messages do not define; it cannot be read"
            )
        try:
            message_class(store, msgtype)
        except UnsupportedType as err:
            raise SourceOpenError(f"ROS 2 topic {topic!r} cannot be read: {err}") from None
        converter = MessageConverter(
            store,
            store,
            msgtype,
            cdr=True,
            decode_images=decode_images,
            deserialize=store.deserialize_cdr,
        )
        return _Route(topic, sensor, msgtype, qos, converter)

    def _spec(
        self, route: _Route, capacity: int, overflow: Any, clock: ClockModel | None
    ) -> SensorSpec:
        meta: dict[str, Any] = {
            "topic": route.topic,
            MSGTYPE: route.msgtype,
            "ros2": {
                "domain_id": self.domain_id,
                "qos": route.qos.describe(),
                "ros_distro": self.ros_distro,
            },
        }
        if self.keep_messages:
            meta[MSGDEF] = message_definition(self._store, route.msgtype, True)
            meta[SERIALIZATION] = "cdr"
        return SensorSpec(
            route.sensor,
            kind=decoder_info(route.msgtype).kind,
            capacity=capacity,
            overflow=overflow,
            clock=clock,
            meta=meta,
        )

    def _open_readers(self) -> None:
        from cyclonedds.core import (
            GuardCondition,
            InstanceState,
            ReadCondition,
            SampleState,
            ViewState,
            WaitSet,
        )

        dds = self.participant.dds
        self._waitset = WaitSet(dds)
        self._wake = GuardCondition(dds)
        self._waitset.attach(self._wake)
        self._conditions = []
        mask = SampleState.Any | ViewState.Any | InstanceState.Any
        for route in self._routes:
            cls = message_class(self._store, route.msgtype)
            digest = self._store.hash_rihs01(route.msgtype)
            route.reader = self.participant.reader(route.topic, cls, route.qos, type_hash=digest)
            condition = ReadCondition(route.reader, mask)
            self._waitset.attach(condition)
            self._conditions.append(condition)

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
        self._check_hashes()
        checked = clock.now()
        self._start_taking(clock)
        while self.participant.dds is not None:  # closed (aclose from elsewhere): the end
            got = await self.run_blocking(self._next_rounds)
            if got.joined or clock.now() - checked > _CHECK_NS:
                checked = clock.now()  # a publisher DDS will not match is only in the graph
                self._check_hashes()
                self._check_silence(checked)
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

    def _start_taking(self, clock: Clock) -> None:
        """Start the thread that takes every reader's samples (once)."""
        if self._taker is not None:
            return
        self._taker = threading.Thread(
            target=self._take_loop, args=(clock,), name="ros2-take", daemon=True
        )
        self._taker.start()

    def _take_loop(self, clock: Clock) -> None:
        """Take samples as they come until the participant closes; nothing is decoded here,
        so a camera's JPEG never keeps a 200 Hz IMU's queue from being emptied."""
        while self.participant.dds is not None:
            with self._pending_cond:
                behind = self._pending.size >= _PENDING_BYTES
            if behind:  # decoding is behind: leave the samples in DDS (its queues count)
                with self._pending_cond:
                    self._pending_cond.wait(0.05)
                continue
            got = self._take_round(clock)
            if got.items or got.events or got.received or got.joined:
                with self._pending_cond:
                    pending = self._pending
                    pending.items += got.items
                    pending.size += got.size
                    pending.events += got.events
                    pending.joined = pending.joined or got.joined
                    for sensor, n in got.received.items():
                        pending.received[sensor] = pending.received.get(sensor, 0) + n
                    self._pending_cond.notify_all()

    def _next_rounds(self) -> _Round:
        """What the taking thread took since the last call, waiting at most 100 ms for some
        (runs in a worker thread)."""
        with self._pending_cond:
            if not (self._pending.items or self._pending.events or self._pending.joined):
                self._pending_cond.wait(_WAIT_NS / 1e9)
            got, self._pending = self._pending, _Round()
            self._pending_cond.notify_all()
        return got

    def _convert_all(
        self, items: list[tuple[_Route, bytes, int]]
    ) -> list[Frame | tuple[str, int, DecodeError]]:
        return [self._convert(route, raw, now) for route, raw, now in items]

    def _take_round(self, clock: Clock) -> _Round:
        """Wait (at most 100 ms) and take what every reader has (the taking thread)."""
        out = _Round()
        with self._lock:
            if self.participant.dds is None:
                return out
            self._waitset.wait(_WAIT_NS)
            for route in self._routes:
                self._statuses(route, out)
                try:
                    samples = route.reader.take(N=_TAKE)
                except Exception as err:  # the binding's; the samples stay for the next round
                    message = f"ROS 2 topic {route.topic!r}: taking samples failed: {err}"
                    out.events.append((route.sensor, "dds_take_failed", message, 0))
                    continue
                if not samples:
                    continue
                now = clock.now()
                n = 0
                for sample in samples:
                    info = getattr(sample, "sample_info", None)
                    if info is None or not info.valid_data:
                        continue  # a writer's dispose or unregister: no message
                    n += 1
                    raw = sample_bytes(sample)
                    out.items.append((route, raw, now))
                    out.size += len(raw)
                if n:
                    out.received[route.sensor] = out.received.get(route.sensor, 0) + n
        return out

    def _convert(self, route: _Route, raw: bytes, now: int) -> Frame | tuple[str, int, DecodeError]:
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

    def _statuses(self, route: _Route, out: _Round) -> None:
        """What DDS counted on ``route``'s reader since the last round."""
        reader, sensor, topic = route.reader, route.sensor, route.topic
        lost = reader.get_sample_lost_status().total_count_change
        if lost > 0:
            out.events.append(
                (sensor, "dds_lost", f"ROS 2 topic {topic!r}: DDS lost {lost} samples", lost)
            )
        if route.qos.reliability == "best_effort":
            rejected = reader.get_sample_rejected_status().total_count_change
            if rejected > 0:
                out.events.append(
                    (
                        sensor,
                        "dds_rejected",
                        f"ROS 2 topic {topic!r}: {rejected} samples found the queue of "
                        f"{route.qos.depth} full and were dropped (the pipeline fell behind)",
                        rejected,
                    )
                )
        incompatible = reader.get_requested_incompatible_qos_status()
        if incompatible.total_count_change > 0 and incompatible.last_policy_id == _TYPE_CHECK:
            layout = self._layout_mismatch(route)
            if layout is not None:  # another name is a type_mismatch (graph check)
                route.mismatch = "distribution mismatch"
                out.events.append((sensor, "distribution_mismatch", layout, 0))
        elif incompatible.total_count_change > 0:
            policy = policy_name(int(incompatible.last_policy_id))
            route.mismatch = f"QoS mismatch ({policy})"
            message = (
                f"ROS 2 topic {topic!r}: a publisher's QoS is incompatible with this source's "
                f"requested {route.qos.describe()}: {policy} "
                f"({self._offered(route, policy)}); DDS does not match them, set this "
                f"topic's qos {policy} to what the publisher offers"
            )
            out.events.append((sensor, "qos_mismatch", message, 0))
        matched = reader.get_subscription_matched_status()
        count = int(matched.current_count)
        if count < route.publishers:
            out.events.append(
                (
                    sensor,
                    "publisher_lost",
                    f"ROS 2 topic {topic!r}: a publisher went away "
                    f"({count} left{'; waiting for one' if not count else ''})",
                    0,
                )
            )
        elif count > route.publishers:
            out.joined = True
        route.publishers = count

    def _check_silence(self, now: int) -> None:
        """A publisher matched for 5 s and nothing arrived, of a type that other
        distributions define differently: say that the robot may run one of them (a node
        without XTypes type information or type hash, as rmw_fastrtps and rmw_cyclonedds
        on Humble, is matched by name, and Cyclone drops every sample that does not fit
        our layout on receipt, where no counter shows it). Once per topic."""
        for route in self._routes:
            if route.received or not route.publishers:
                route.silent_since = None
                continue
            if route.silent_since is None:
                route.silent_since = now
                continue
            if now - route.silent_since < _SILENT_NS or route.mismatch:
                continue
            others = self._differing(route.msgtype)
            route.mismatch = "distribution mismatch?"
            if not others:
                continue
            self.count_error(
                "distribution_mismatch",
                f"ROS 2 topic {route.topic!r}: a publisher has been matched for "
                f"{_SILENT_NS // 1_000_000_000} s and nothing arrived: if the robot runs ROS 2 "
                f"{' or '.join(others)}, whose {route.msgtype} has another layout than "
                f"{self.ros_distro}'s, DDS drops every message on receipt; set ros_distro "
                "to the robot's",
                units=0,
                sensor=route.sensor,
            )

    def _differing(self, msgtype: str) -> list[str]:
        """The ROS 2 distributions (rosbags' stores) whose ``msgtype`` is not ours."""
        mine = self._store.fielddefs[msgtype]
        out = []
        for distro in ros_distros():
            if distro in ("noetic", self.ros_distro):
                continue
            defs = type_store(distro).fielddefs.get(msgtype)
            if defs is not None and defs != mine:
                out.append(distro)
        return out

    def _layout_mismatch(self, route: _Route) -> str | None:
        """The message for a publisher of ``route``'s DDS type whose XTypes layout DDS found
        different from ours (another distribution's definition); ``None`` if none has our
        type's name (a publisher of another type: a ``type_mismatch``)."""
        ours = dds_type_name(route.msgtype)
        if not any(
            p.topic == route.topic and p.dds_type == ours for p in self.participant.publications()
        ):
            return None
        others = self._differing(route.msgtype)
        where = f"{', '.join(others)} define it differently" if others else "no other rosbags store"
        return (
            f"ROS 2 topic {route.topic!r}: a publisher's {route.msgtype} has another layout "
            f"than ROS 2 {self.ros_distro}'s (DDS's type check refused it): the robot runs "
            f"another ROS 2 distribution ({where}); set ros_distro to the robot's"
        )

    def _offered(self, route: _Route, policy: str) -> str:
        """What the topic's publishers in the graph offer of ``policy`` (for the message)."""
        offers = sorted(
            {
                str(getattr(pub, policy))
                for pub in self.participant.publications()
                if pub.topic == route.topic and getattr(pub, policy, None)
            }
        )
        return f"offered: {', '.join(offers)}" if offers else "see the publisher's QoS"

    def _check_hashes(self) -> None:
        """Warn about a publisher of another type (DDS does not match it) and one whose type
        hash is not this distribution's (Iron and later send one), once each."""
        pubs: list[Publication] = self.participant.publications()
        for route in self._routes:
            ours = self._store.hash_rihs01(route.msgtype)
            for pub in pubs:
                if pub.topic != route.topic:
                    continue
                if pub.dds_type != dds_type_name(route.msgtype) and pub.key not in route.hashes:
                    route.hashes.add(pub.key)  # DDS will not match it: say why it is ignored
                    self.count_error(
                        "type_mismatch",
                        f"ROS 2 topic {route.topic!r}: a publisher sends "
                        f"{pub.msgtype or pub.dds_type}, not {route.msgtype}; it is not read",
                        units=0,
                        sensor=route.sensor,
                    )
                    continue
                if not pub.type_hash or pub.type_hash == ours:
                    continue
                if pub.type_hash in route.hashes:
                    continue
                route.hashes.add(pub.type_hash)
                self.count_error(
                    "type_hash_mismatch",
                    f"ROS 2 topic {route.topic!r}: a publisher's {route.msgtype} has type hash "
                    f"{pub.type_hash}, not ROS 2 {self.ros_distro}'s {ours}: its definition "
                    "differs (another ROS 2 distribution?); set ros_distro to the robot's",
                    units=0,
                    sensor=route.sensor,
                )

    def _skip(self, sensor: str, seq: int, err: DecodeError) -> None:
        route = next(r for r in self._routes if r.sensor == sensor)
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
        for route in self._routes:
            if route.sensor == sensor:
                if route.publishers:
                    return None
                return f"no publisher ({route.mismatch})" if route.mismatch else "no publisher"
        return None

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
            wake = getattr(self, "_wake", None)
            if wake is not None:
                wake.set(True)
            with self._lock:
                participant.close()
            taker = getattr(self, "_taker", None)
            if taker is not None and taker is not threading.current_thread():
                with self._pending_cond:
                    self._pending_cond.notify_all()
                taker.join(timeout=5)
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


def policy_name(policy_id: int) -> str:
    """A DDS QoS policy id as ROS 2 names the policy (``11`` -> ``reliability``)."""
    return _POLICIES.get(policy_id, f"policy {policy_id}")


def _topics(topics: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    if isinstance(topics, str):
        raise ConfigError("topics must be a list of topics or a topic -> sensor mapping")
    wanted = dict(topics) if isinstance(topics, Mapping) else {t: sensor_name(t) for t in topics}
    if not wanted:
        raise ConfigError("a ROS 2 source needs at least one topic")
    for topic in wanted:
        try:
            check_topic(topic)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    names = list(wanted.values())
    if len(set(names)) != len(names):
        raise ConfigError(f"two topics map to the same sensor name: {wanted}")
    return wanted


def _profiles(
    qos: Mapping[str, TopicQos | Mapping[str, Any]], wanted: Mapping[str, str]
) -> dict[str, TopicQos]:
    stray = sorted(set(qos) - set(wanted))
    if stray:
        raise ConfigError(f"qos names topics that are not read: {', '.join(stray)}")
    out = {}
    for topic in wanted:
        given = qos.get(topic)
        try:
            out[topic] = (
                given
                if isinstance(given, TopicQos)
                else TopicQos.from_mapping(given or {}, SENSOR_DATA)
            )
        except ValueError as err:
            raise ConfigError(f"qos of ROS 2 topic {topic!r}: {err}") from None
    return out
