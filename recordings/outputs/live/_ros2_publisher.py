"""Publish to ROS 2 over DDS: the ``ros2`` export profile as live topics a robot's tools see.

Theory of operation. :class:`Ros2Publisher` is a pipeline sink and frame tap
(``sinks=[Ros2Publisher()]``), the DDS twin of the Foxglove live view
(:class:`~recordings.outputs.live._foxglove_server.FoxgloveServer`). Every frame becomes the
message it is in a ``--profile ros2`` MCAP export, encoded by the same
:class:`~recordings.outputs.encoders._ros2.Ros2Messages`: ``sensor_msgs/msg/Image``,
``CompressedImage``, ``PointCloud2``, ``Imu``, ``NavSatFix``,
``nav_msgs/msg/Odometry``... on ``/<sensor>``, and a frame that came from a
bag as its original message on its original topic, the same CDR bytes. Sync
groups go to ``/hyperframes/groups`` as the export's
``diagnostic_msgs/msg/DiagnosticArray`` and worker results to
``/hyperframes/results/<worker>`` as ``std_msgs/msg/String`` holding the Foxglove
results topic's JSON (:func:`~recordings.outputs.live._foxglove_server.result_json`): standard
types, so ``ros2 topic echo`` and rviz need no custom package.

Each topic is a DDS writer made with :mod:`adapters.ros` (the ros2/design
names ``rt/<topic>`` and ``pkg::msg::dds_::Type_``, a QoS profile built as
rmw_cyclonedds builds it, the RIHS01 type hash in ``USER_DATA``), writing the
CDR bytes as they are (:func:`~adapters.ros.raw_sample`); that part is
:mod:`recordings.outputs.live._ros2_dds`.

Nothing here waits on a subscriber. :meth:`Ros2Publisher.publish` only appends
to a bounded queue (``backlog`` items); one thread takes items from it, dates
them, encodes them and writes them. When the thread falls behind the oldest
queued item is dropped and counted by sensor; a reliable write that a slow
subscriber holds up longer than ``max_blocking_s`` fails and is counted by
topic; a message for a volatile topic no subscriber matches is not encoded and
is counted as unmatched. Every frame published ends in exactly one of
:class:`Ros2PublisherStatistics`' counters.

Stamps are dated as the live view dates them (``dating="live"``: the host's
wall clock, which is ROS time on a robot without ``use_sim_time``; a
recording's :class:`~fusion._wallclock.WallClock` for its ``dated`` sensors
on replay; ``None``: left alone). A bag's original messages keep their own
header stamps, byte for byte.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.ros import DEFAULT, TopicQos
from fusion import Frame, FrameGroup, SensorSpec, WallClock
from fusion.errors import UsageError
from recordings.outputs.encoders._groups import GROUP_TOPIC
from recordings.outputs.live._ros2_dds import DdsMessages, DdsSettings
from recordings.outputs.live._sink import Dating, LiveSink


@dataclass(frozen=True, slots=True)
class Ros2PublisherStatistics:
    """What the publisher did so far."""

    domain_id: int
    frames: Counter[str] = field(default_factory=Counter)
    """Frames published (written on a topic some subscriber matched), per sensor."""
    published: Counter[str] = field(default_factory=Counter)
    """Messages written, per ROS 2 topic (a time series frame is one message per row)."""
    groups: int = 0
    """Groups taken from the pipeline (marker and results published where matched)."""
    unmatched: Counter[str] = field(default_factory=Counter)
    """Frames, group markers and results sent to nobody (their volatile topic had no
    subscriber, so they were not encoded), per topic."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Frames (or ``"groups"``) dropped because the publisher thread fell behind, per sensor."""
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Messages DDS did not take, by ``(topic, reason)`` (a slow reliable subscriber's
    timeout, a payload the type refuses); items that raised while being published, by
    ``(sensor or "groups", "cannot publish: ...")`` (a type with no DDS form)."""
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Frames with no ROS 2 message, by ``(sensor, reason)`` (as in an export)."""
    unacknowledged: Counter[str] = field(default_factory=Counter)
    """Large reliable messages (fragmented, over 65,000 bytes) that some matched reader had
    not acknowledged within ``ack_timeout_s``, per topic: written, delivery not confirmed.
    Every other large reliable message published was acknowledged by every reader matched
    when it was written."""
    subscribers: dict[str, int] = field(default_factory=dict)
    """Subscribers matched now, per topic opened."""
    refused: dict[str, str] = field(default_factory=dict)
    """Topics some subscriber refused because its QoS asks for more than this publisher
    offers (DDS's ``offered_incompatible_qos``), with the policy (``reliability``...)."""
    notes: tuple[str, ...] = ()
    """Things not done as asked, one line each (a sensor published under another name)."""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def losses(self) -> str:
        """``K dropped (publisher behind), F not taken by DDS (...)``, or ''."""
        parts = []
        if self.dropped_total:
            parts.append(f"{self.dropped_total} dropped (publisher behind)")
        if self.failed:
            why = "; ".join(f"{t}: {n} {r}" for (t, r), n in sorted(self.failed.items()))
            parts.append(f"{sum(self.failed.values())} not taken by DDS ({why})")
        if self.unacknowledged:
            parts.append(
                f"{sum(self.unacknowledged.values())} large messages not acknowledged "
                "by every reader (delivery unconfirmed)"
            )
        return ", ".join(parts)

    def describe(self) -> str:
        """One line: domain, frames and messages published, what went nowhere or was lost."""
        line = (
            f"ros2 domain {self.domain_id}: {sum(self.frames.values())} frames published "
            f"({sum(self.published.values())} messages on {len(self.published)} topics)"
        )
        if self.unmatched:
            line += f", {sum(self.unmatched.values())} unmatched (no subscriber)"
        if self.skipped:
            line += f", {sum(self.skipped.values())} skipped (no ROS 2 message)"
        if self.refused:
            why = ", ".join(f"{t}: {p}" for t, p in sorted(self.refused.items()))
            line += f", refused by a subscriber's QoS ({why}: it asks for more than offered)"
        losses = self.losses()
        return f"{line}, {losses}" if losses else line


class Ros2Publisher(LiveSink):
    """Frames, sync groups and worker results as ROS 2 topics over DDS (module docstring).

    ``Ros2Publisher(domain_id=0, config=None, qos=DEFAULT)``: ``config`` is a
    Cyclone DDS XML config (``None``: ``CYCLONEDDS_URI``, as for a ROS 2 node
    with rmw_cyclonedds; :func:`~adapters.ros.loopback_config` for one
    machine); ``qos`` every topic's profile (ROS 2's default: reliable,
    volatile, keep last 10, which best-effort and reliable subscribers both
    match). ``subscribers=N`` makes each new topic wait up to
    ``match_timeout_s`` for N subscribers before its first message (a
    volatile topic keeps nothing for readers that join later). A reliable
    message over 65,000 bytes is followed by a wait (at most
    ``ack_timeout_s``) for every matched reader's acknowledgement, so large
    messages are delivered one at a time and what was delivered is known
    (:attr:`Ros2PublisherStatistics.unacknowledged`). Its writers are never
    matched by readers of this process (no echo of a ``Ros2Source`` it
    republishes). Use it as a context manager or :meth:`close` it.
    """

    def __init__(
        self,
        domain_id: int = 0,
        *,
        config: str | None = None,
        qos: TopicQos = DEFAULT,
        sensors: Iterable[SensorSpec] = (),
        dating: Dating = "live",
        dated: Iterable[str] | None = None,
        types: Mapping[str, str] | None = None,
        topic_prefix: str = "/",
        backlog: int = 256,
        subscribers: int = 0,
        match_timeout_s: float = 10.0,
        max_blocking_s: float = 0.1,
        ack_timeout_s: float = 1.0,
    ) -> None:
        if backlog < 1 or subscribers < 0 or max_blocking_s < 0:
            raise UsageError(
                f"Ros2Publisher: backlog must be >= 1, subscribers and max_blocking_s >= 0; "
                f"got {backlog}, {subscribers} and {max_blocking_s}"
            )
        if dating not in ("live", None) and not isinstance(dating, WallClock):
            raise UsageError(
                f"Ros2Publisher: dating must be 'live', a WallClock or None: {dating!r}"
            )
        super().__init__(backlog=backlog, sensors=sensors, dating=dating, dated=dated)
        self.domain_id = domain_id
        self.config = config
        self.qos = qos
        self.subscribers = subscribers
        self.match_timeout_s = match_timeout_s
        self.max_blocking_ns = int(max_blocking_s * 1e9)
        self.ack_timeout_s = ack_timeout_s
        self._types = dict(types or {})
        self._prefix = topic_prefix
        self._frames: Counter[str] = Counter()
        self._failed: Counter[tuple[str, str]] = Counter()
        self._skipped: Counter[tuple[str, str]] = Counter()
        self._groups = 0
        self._encoder: DdsMessages | None = None
        self._participant: Any = None

    # -- lifetime ----------------------------------------------------------------

    def start(self) -> Ros2Publisher:
        """Join the DDS domain and start the publisher thread (idempotent)."""
        if self._closed:
            raise UsageError("Ros2Publisher is closed; make a new one")
        if self._participant is not None:
            return self
        from adapters.ros import Participant

        self._participant = Participant(self.domain_id, self.config)
        settings = DdsSettings(
            self._participant,
            self.qos,
            self.max_blocking_ns,
            self.ack_timeout_s,
            self.subscribers,
            self.match_timeout_s,
        )
        self._encoder = DdsMessages(settings, topic_prefix=self._prefix, types=self._types)
        for spec in self._specs.values():
            self._encoder.declare(spec)
        self._thread = threading.Thread(target=self._run, name="ros2-publisher", daemon=True)
        self._thread.start()
        return self

    @property
    def participant(self) -> Any:
        """The :class:`~adapters.ros.Participant` (``None`` before :meth:`start`)."""
        return self._participant

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait (at most ``timeout_s``) until every queued item is written and every
        reliable subscriber acknowledged it; whether it happened in time."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while (self._queue or self._busy) and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        encoder = self._encoder
        if encoder is None:
            return True
        return encoder.wait_for_acks(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Stop: queued items are dropped (counted); :meth:`flush` first to send them."""
        if not self._close_queue():
            return
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._encoder is not None:
            self._encoder.close()
        if self._participant is not None:
            self._participant.close()

    # -- feeding (never blocks) -------------------------------------------------------

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec`` (its kind breaks payload ties; a bag's topic and type are kept)."""
        with self._cond:
            self._specs[spec.name] = spec
            if self._encoder is not None:
                self._encoder.declare(spec)

    # -- the publisher thread --------------------------------------------------------------

    def _run(self) -> None:
        while (item := self._take()) is not None:
            # Encoding and writing run outside the lock: publish() never waits for them.
            try:
                if isinstance(item, FrameGroup):
                    self._write_group(item)
                    sensor = None
                else:
                    sensor = self._write_frame(item)
            except Exception as err:  # publishing must never take the pipeline down
                sensor = None
                what = "groups" if isinstance(item, FrameGroup) else item.sensor
                with self._cond:
                    self._error = err
                    self._failed[(what, f"cannot publish: {err}")] += 1
            encoder = self._encoder
            assert encoder is not None
            with self._cond:
                if sensor is not None:
                    self._frames[sensor] += 1
                if isinstance(item, FrameGroup):
                    self._groups += 1
                if encoder.skipped.total() != self._skipped.total():
                    self._skipped = Counter(encoder.skipped)  # read here, never while it changes
                self._busy = False
                self._cond.notify_all()

    def _write_frame(self, frame: Frame) -> str | None:
        """Publish one frame; its sensor when some subscriber got it."""
        encoder = self._encoder
        assert encoder is not None
        topic = encoder.topic_for(frame.sensor)
        if encoder.unmatched_topic(topic):
            encoder.count_unmatched(topic)
            return None
        sent, missed = encoder.sent, encoder.missed
        spec = self._specs.get(frame.sensor)
        wrote = encoder.write(self._dated_frame(frame), spec.kind if spec is not None else None)
        if wrote and encoder.sent > sent:
            return frame.sensor
        if encoder.missed > missed:
            encoder.count_unmatched(topic)
        return None

    def _write_group(self, group: FrameGroup) -> None:
        encoder = self._encoder
        assert encoder is not None
        members, t = self._dated_members(group)
        if len(members) > 1:
            if encoder.unmatched_topic(GROUP_TOPIC):
                encoder.count_unmatched(GROUP_TOPIC)
            else:
                missed = encoder.missed
                encoder.write_group(FrameGroup(t, members, group.missing))
                if encoder.missed > missed:
                    encoder.count_unmatched(GROUP_TOPIC)
        for worker, value in group.results.items():
            encoder.write_result(worker, t, value)

    # -- observing ---------------------------------------------------------------------

    def statistics(self) -> Ros2PublisherStatistics:
        """A snapshot of the counters (safe to call from the event loop while publishing)."""
        encoder = self._encoder
        with self._cond:
            if encoder is None:
                return Ros2PublisherStatistics(self.domain_id, dropped=Counter(self._dropped))
            with encoder.lock:
                return Ros2PublisherStatistics(
                    self.domain_id,
                    frames=Counter(self._frames),
                    published=Counter(encoder.counts),
                    groups=self._groups,
                    unmatched=Counter(encoder.unmatched),
                    dropped=Counter(self._dropped),
                    failed=Counter(encoder.failed) + self._failed,
                    skipped=Counter(self._skipped),
                    unacknowledged=Counter(encoder.unacknowledged),
                    subscribers=encoder.matched(),
                    refused=encoder.refused(),
                    notes=tuple(encoder.notes),
                )

    def wait_subscribers(self, topic: str, count: int = 1, timeout_s: float = 10.0) -> bool:
        """Block until ``topic`` (opened already) has ``count`` matched subscribers, at most
        ``timeout_s``; whether it happened. A DDS wait set, not a poll."""
        from adapters.ros import wait_matched

        encoder = self._encoder
        writer = None if encoder is None else encoder.writers.get(topic)
        if writer is None:
            raise UsageError(
                f"Ros2Publisher: topic {topic!r} is not open (opened: {self.topics()})"
            )
        return wait_matched(writer.dds, count, timeout_s)

    def topics(self) -> dict[str, str]:
        """ROS 2 topic -> type of every topic opened so far."""
        encoder = self._encoder
        if encoder is None:
            return {}
        with encoder.lock:
            return {topic: w.msgtype for topic, w in encoder.writers.items()}
