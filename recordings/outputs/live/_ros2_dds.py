"""The ``ros2`` export profile written to DDS: one writer per ROS 2 topic, CDR as encoded.

:class:`DdsMessages` is :class:`~recordings.outputs.encoders._ros2.Ros2Messages` (the
encoding the MCAP export uses) whose output is DDS: each topic a
``cyclonedds`` writer made by :mod:`adapters.ros` (the message class built
from the type store that defines the type, the RIHS01 hash in ``USER_DATA``),
each message written as the CDR bytes it was encoded to. It runs on the
publishing thread of :class:`~recordings.outputs.live._ros2_publisher.Ros2Publisher`
and counts, per topic, what was written, what no subscriber matched and what
DDS refused; the publisher reads the counts under :attr:`DdsMessages.lock`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from recordings.outputs.encoders._ros2 import Ros2Messages
from recordings.outputs.encoders._sensors import one_type_per_topic

RESULTS_TOPIC = "/hyperframes/results/"
"""Prefix of the worker-result topics (``/hyperframes/results/<worker>``)."""
RESULT_TYPE = "std_msgs/msg/String"
ACK_BYTES = 65_000
"""A reliable message larger than this (sent in fragments) is written only once every matched
reader acknowledged the one before: a burst of them overruns a reader's socket buffer, and a
reader keeping the last N replaces samples it has not completed."""
_BAD_TOKEN = re.compile(r"[^A-Za-z0-9_]")


@dataclass(slots=True)
class TopicWriter:
    """One DDS writer: the ROS 2 topic, its type and the message class that carries CDR."""

    topic: str
    msgtype: str
    cls: type
    dds: Any
    acked: bool = True
    """Whether every reader acknowledged the last large message in time."""


@dataclass(frozen=True, slots=True)
class DdsSettings:
    """What :class:`DdsMessages` writes with: given by its publisher, read by nothing else."""

    participant: Any
    """The :class:`~adapters.ros.Participant` the writers are made on."""
    qos: Any
    """The :class:`~adapters.ros.TopicQos` of every topic."""
    max_blocking_ns: int
    """How long a reliable ``write`` may wait for a slow reader."""
    ack_timeout_s: float
    """How long a large reliable message waits for its acknowledgements."""
    subscribers: int = 0
    """Matched subscribers a new topic waits for before its first message (0: none)."""
    match_timeout_s: float = 10.0
    """How long a new topic waits for them."""


class DdsMessages(Ros2Messages):
    """The ``ros2`` profile's encoding, each topic a DDS writer (runs on the publisher thread)."""

    def __init__(self, settings: DdsSettings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.lock = threading.Lock()
        self.writers: dict[str, TopicWriter] = {}
        self.unmatched: Counter[str] = Counter()
        self.failed: Counter[tuple[str, str]] = Counter()
        self.unacknowledged: Counter[str] = Counter()
        """Large reliable messages some matched reader had not acknowledged in time."""
        self.sent = 0
        """Messages written for at least one matched subscriber, all topics."""
        self.missed = 0
        """Messages not written: their volatile topic had no subscriber."""
        self.renamed: dict[str, str] = {}
        self._final: dict[str, int] | None = None
        self._final_refused: dict[str, str] | None = None

    def unmatched_topic(self, topic: str) -> bool:
        """Whether ``topic`` is open, volatile and matched by no subscriber (skip encoding)."""
        if self.settings.qos.durability != "volatile":
            return False
        writer = self.writers.get(self.renamed.get(topic, topic))
        return writer is not None and not _matched(writer.dds)

    def _channel(
        self,
        topic: str,
        msgtype: str,
        msgdef: str | None = None,
        type_hash: str | None = None,
        store: Any = None,
    ) -> TopicWriter:
        name = self.renamed.get(topic) or self._ros_name(topic)
        known = self.writers.get(name)
        if known is not None:
            one_type_per_topic(name, known.msgtype, msgtype)
            return known
        from adapters.ros import message_class, wait_matched

        store = self.store if store is None else store
        cls = message_class(store, msgtype)
        if type_hash is None:
            type_hash = store.hash_rihs01(msgtype)
        settings = self.settings
        dds = settings.participant.writer(
            name,
            cls,
            settings.qos,
            type_hash,
            max_blocking_ns=settings.max_blocking_ns,
            ignore_local=True,  # a Ros2Source of this process never reads them back (no echo)
        )
        writer = TopicWriter(name, msgtype, cls, dds)
        with self.lock:
            self.writers[name] = writer
        if settings.subscribers:
            wait_matched(dds, settings.subscribers, settings.match_timeout_s)
        return writer

    def _ros_name(self, topic: str) -> str:
        """``topic`` as a valid ROS 2 name (``/cam-0`` -> ``/cam_0``), noted when changed."""
        tokens = [_BAD_TOKEN.sub("_", t) or "_" for t in topic.strip("/").split("/")]
        name = "/" + "/".join("_" + t if t[0].isdigit() else t for t in tokens)
        if name != topic:
            self.notes.append(f"topic {topic!r} is published as {name!r} (a valid ROS 2 name)")
        self.renamed[topic] = name
        return name

    def _add(self, channel: Any, topic: str, data: bytes, log_time: int, seq: int) -> None:
        from adapters.ros import DdsWriteError, raw_sample, write_sample

        writer: TopicWriter = channel
        settings = self.settings
        if settings.qos.durability == "volatile" and not _matched(writer.dds):
            self.missed += 1
            return
        try:
            write_sample(writer.dds, raw_sample(writer.cls, data))
        except DdsWriteError as err:
            reason = (
                f"write timed out after {settings.max_blocking_ns / 1e6:g} ms (slow subscriber)"
                if err.timed_out
                else f"refused: {err}"
            )
            with self.lock:
                self.failed[(writer.topic, reason)] += 1
            return
        with self.lock:
            self.counts[writer.topic] += 1
            self.sent += 1
        if settings.qos.reliability == "reliable" and len(data) > ACK_BYTES:
            self._acknowledged(writer)

    def _acknowledged(self, writer: TopicWriter) -> None:
        """Wait (at most ``ack_timeout_s``) until every reliable reader acknowledged what
        ``writer`` wrote; a message not acknowledged in time is counted ``unacknowledged``.
        After one such, the writer's next messages only look (no wait) until its readers
        caught up: a stalled reader costs one timeout, not one per message."""
        from adapters.ros import wait_for_acks

        timeout = int(self.settings.ack_timeout_s * 1e9) if writer.acked else 0
        writer.acked = wait_for_acks(writer.dds, timeout)
        if not writer.acked:
            with self.lock:
                self.unacknowledged[writer.topic] += 1

    def count_unmatched(self, topic: str) -> None:
        """One frame, marker or result that went to no subscriber on ``topic``."""
        with self.lock:
            self.unmatched[self.renamed.get(topic, topic)] += 1

    def write_result(self, worker: str, t: int, value: Any) -> None:
        """A worker's result as ``std_msgs/msg/String`` JSON on its results topic."""
        from recordings.outputs.live._foxglove_server import result_json

        topic = RESULTS_TOPIC + worker
        if self.unmatched_topic(topic):
            self.count_unmatched(topic)
            return
        record: dict[str, Any] = {
            "timestamp": {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000},
            "worker": worker,
        }
        record.update(result_json(value))
        msg = self.store.types[RESULT_TYPE](data=json.dumps(record))
        missed = self.missed
        self._emit(topic, RESULT_TYPE, msg, t, 0)
        if self.missed > missed:
            self.count_unmatched(topic)

    def matched(self) -> dict[str, int]:
        """Subscribers matched now (when closed: at the close), per topic."""
        if self._final is not None:
            return dict(self._final)
        return {
            topic: w.dds.get_publication_matched_status().current_count
            for topic, w in self.writers.items()
        }

    def refused(self) -> dict[str, str]:
        """Topics some subscriber refused for an incompatible QoS (DDS's
        ``offered_incompatible_qos``), each with the policy it refused last."""
        from adapters.ros import policy_name

        if self._final_refused is not None:
            return dict(self._final_refused)
        out = {}
        for topic, w in self.writers.items():
            status = w.dds.get_offered_incompatible_qos_status()
            if status.total_count:
                out[topic] = policy_name(int(status.last_policy_id))
        return out

    def close(self) -> None:
        """Keep the last matched counts: the writers go with the participant."""
        with self.lock:
            self._final = self.matched()
            self._final_refused = self.refused()

    def wait_for_acks(self, timeout_s: float) -> bool:
        """Whether every reliable subscriber acknowledged every message (at most ``timeout_s``)."""
        from adapters.ros import wait_for_acks

        if self.settings.qos.reliability != "reliable":
            return True
        deadline = time.monotonic() + timeout_s
        with self.lock:
            writers = list(self.writers.values())
        for writer in writers:
            left = max(0, int((deadline - time.monotonic()) * 1e9))
            if not wait_for_acks(writer.dds, left):
                return False
        return True


def _matched(dds: Any) -> bool:
    return bool(dds.get_publication_matched_status().current_count)
