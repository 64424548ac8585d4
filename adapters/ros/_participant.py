"""A DDS domain participant that speaks to ROS 2 nodes, and the Cyclone DDS config it runs on.

Theory of operation. One :class:`Participant` is one DDS ``DomainParticipant``
in ``domain_id`` (ROS 2's ``ROS_DOMAIN_ID``, 0 by default). Readers and
writers are made from a ROS 2 topic name, a message class from
:func:`~adapters.ros._idltypes.message_class` and a
:class:`~adapters.ros._qos.TopicQos`; the DDS names come from
:mod:`adapters.ros._names`, so a ROS 2 node on the same domain matches them.

Where it talks is Cyclone DDS's configuration (XML): ``config`` (an XML
string, or a ``file://`` URI) or, when it is ``None``, the ``CYCLONEDDS_URI``
environment variable, as for any Cyclone DDS program (rmw_cyclonedds
included), else Cyclone's defaults (the first multicast-capable interface,
SPDP multicast). :func:`loopback_config` builds the config the tests use and
a robot on one machine can use too: the loopback interface only, multicast
off, discovery by unicast to an explicit peer list.

A Cyclone domain is configured once per process: the first participant of a
``domain_id`` with a ``config`` creates that domain, later ones share it, and
asking for a different config of a domain already open is a
:class:`~fusion.errors.UsageError`. The domain is deleted with its last
participant.

``cyclonedds`` is imported when a participant opens, not when this module is.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

from adapters.errors import SourceOpenError
from adapters.ros._names import dds_topic_name, ros_topic_name, ros_type_name
from adapters.ros._qos import TopicQos, type_hash_from_user_data
from fusion.errors import HyperframesError, UsageError

DELIVERY_CONFIG = (
    '<CycloneDDS><Domain id="any"><General><MaxMessageSize>65500B</MaxMessageSize>'
    "<FragmentSize>62000B</FragmentSize></General><Internal><Watermarks>"
    "<WhcHigh>200kB</WhcHigh><WhcAdaptive>false</WhcAdaptive></Watermarks></Internal>"
    "</Domain></CycloneDDS>"
)
"""Cyclone settings every participant starts from (its ``config`` or ``CYCLONEDDS_URI``
override them): UDP messages up to 65,500 bytes of 62,000-byte fragments (Cyclone's default,
1,344, sends a 2 MB point cloud as 1,500 datagrams, which overrun a Fast DDS reader's default
socket buffer), and a reliable writer with more than 200 kB unacknowledged waits for its
readers before writing more (a burst never outruns them). Measured in docs/ros2.md."""

_lock = threading.Lock()
_domains: dict[int, list[Any]] = {}
"""``domain_id -> [config, cyclonedds Domain, participants open]`` of this process."""


def loopback_config(
    peers: Sequence[str] = ("127.0.0.1",),
    *,
    interface: str = "127.0.0.1",
    max_participants: int = 32,
    spdp_multicast: bool = True,
) -> str:
    """Cyclone DDS XML: one interface (loopback by default), unicast peers, SPDP multicast.

    Discovery (SPDP) goes by unicast to each of ``peers`` on the ports of
    participant indices 0 to ``max_participants - 1`` (Cyclone's
    ``MaxAutoParticipantIndex``): that many participants per host and domain
    find each other. With ``spdp_multicast`` (the default) participant
    announcements also go to, and are heard on, DDS's multicast group on that
    interface (only SPDP: data stays unicast), which is how a ROS 2 node with
    Fast DDS and ``ROS_LOCALHOST_ONLY=1`` announces itself: Fast DDS 2.9 does
    not answer unicast-only discovery (tested: docs/ros2.md). A ROS 2 node with
    rmw_cyclonedds takes part with the same XML in its ``CYCLONEDDS_URI``.
    """
    if not peers:
        raise ValueError("loopback_config needs at least one peer address")
    if not 1 <= max_participants <= 120:
        raise ValueError(f"max_participants must be 1..120, got {max_participants}")
    peer_xml = "".join(f"<Peer address={quoteattr(p)}/>" for p in peers)
    multicast, allow = (' multicast="true"', "spdp") if spdp_multicast else ("", "false")
    return (
        '<CycloneDDS><Domain id="any">'
        f"<General><Interfaces><NetworkInterface address={quoteattr(interface)}{multicast}/>"
        f"</Interfaces><AllowMulticast>{allow}</AllowMulticast></General>"
        "<Discovery><ParticipantIndex>auto</ParticipantIndex>"
        f"<MaxAutoParticipantIndex>{max_participants - 1}</MaxAutoParticipantIndex>"
        f"<Peers>{peer_xml}</Peers></Discovery>"
        "</Domain></CycloneDDS>"
    )


@dataclass(frozen=True, slots=True)
class Publication:
    """A writer some participant of the domain announced (the DDS graph's ``DCPSPublication``)."""

    topic: str
    """The ROS 2 topic name (``/imu/data``)."""
    msgtype: str | None
    """The ROS 2 type (``sensor_msgs/msg/Imu``); ``None`` if the DDS type is not ROS 2's."""
    dds_type: str
    """The DDS type name as announced (``sensor_msgs::msg::dds_::Imu_``)."""
    type_hash: str | None
    """``RIHS01_...`` from the writer's ``USER_DATA`` (Iron and later), if it sent one."""
    key: str
    """The writer's GUID."""
    reliability: str | None = None
    """``reliable`` or ``best_effort``, as the writer offers it (``None``: not said)."""
    durability: str | None = None
    """``volatile``, ``transient_local``... as the writer offers it (``None``: not said)."""


class Participant:
    """One DDS domain participant for ROS 2 topics (see the module docstring).

    ``Participant(domain_id=0, config=None)``; ``config`` is Cyclone XML or a
    ``file://`` URI (``None``: ``CYCLONEDDS_URI`` or Cyclone's defaults).
    Close it (or use ``with``) to leave the domain.
    """

    def __init__(self, domain_id: int = 0, config: str | None = None) -> None:
        if not isinstance(domain_id, int) or not 0 <= domain_id <= 232:
            raise ValueError(f"DDS domain id must be 0..232, got {domain_id!r}")
        self.domain_id = domain_id
        self.config = config
        self._topics: dict[str, Any] = {}
        self._publications: Any = None
        self.dds: Any = None
        """The ``cyclonedds.domain.DomainParticipant``."""
        try:
            from cyclonedds.core import DDSException
            from cyclonedds.domain import Domain, DomainParticipant
        except ImportError as err:  # pragma: no cover - a dependency of hyperframes
            raise SourceOpenError(
                "ROS 2 topics need the 'cyclonedds' package (pip install cyclonedds)"
            ) from err
        with _lock:
            entry = _domains.get(domain_id)
            if entry is not None and config is not None and entry[0] != config:
                raise UsageError(
                    f"DDS domain {domain_id} is already open in this process with "
                    + ("another Cyclone config" if entry[0] else "Cyclone's default config")
                    + "; one process configures a domain once (give every participant of "
                    "the domain the same config)"
                )
            try:
                if entry is None:
                    entry = [config, Domain(domain_id, _effective(config)), 0]
                    _domains[domain_id] = entry
                self.dds = DomainParticipant(domain_id)
            except DDSException as err:
                raise SourceOpenError(
                    f"cannot join DDS domain {domain_id}: {err}"
                    + (" (check the Cyclone DDS config)" if config or entry else "")
                ) from err
            entry[2] += 1
            self._entry = entry

    def _topic(self, topic: str, cls: type) -> Any:
        from cyclonedds.topic import Topic

        name = dds_topic_name(topic)
        found = self._topics.get(name)
        if found is None:
            found = self._topics[name] = Topic(self._live(), name, cls)
        elif found.data_type is not cls:
            raise UsageError(
                f"topic {topic!r} is open here with type {found.data_type.__name__}, "
                f"not {cls.__name__}"
            )
        return found

    def reader(self, topic: str, cls: type, qos: TopicQos, type_hash: str | None = None) -> Any:
        """A ``cyclonedds`` ``DataReader`` of ROS 2 ``topic`` with message class ``cls``."""
        from cyclonedds.sub import DataReader

        return DataReader(self._live(), self._topic(topic, cls), qos=qos.reader_qos(type_hash))

    def writer(
        self,
        topic: str,
        cls: type,
        qos: TopicQos,
        type_hash: str | None = None,
        max_blocking_ns: int | None = None,
        *,
        ignore_local: bool = False,
    ) -> Any:
        """A ``cyclonedds`` ``DataWriter`` of ROS 2 ``topic``; ``type_hash`` goes in its
        ``USER_DATA`` as Iron and later ROS 2 nodes expect; ``max_blocking_ns`` bounds a
        reliable ``write``'s wait for a slow reader (:meth:`TopicQos.writer_qos`).

        With ``ignore_local`` no reader of this process matches the writer (DDS's
        ``IGNORE_LOCAL`` policy, kind ``PROCESS``): a process that reads a topic and
        republishes it never reads its own publications back."""
        from cyclonedds.core import Policy, Qos
        from cyclonedds.pub import DataWriter

        writer_qos = qos.writer_qos(type_hash, max_blocking_ns)
        if ignore_local:
            writer_qos += Qos(Policy.IgnoreLocal.Process)
        return DataWriter(self._live(), self._topic(topic, cls), qos=writer_qos)

    def publications(self) -> list[Publication]:
        """The ROS 2 writers discovered so far in the domain (ours included), newest state.

        Non-blocking: discovery runs in Cyclone's threads; ask again later for
        writers that have not been heard of yet.
        """
        from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
        from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState

        if self._publications is None:
            self._publications = BuiltinDataReader(self._live(), BuiltinTopicDcpsPublication)
            self._alive = ReadCondition(
                self._publications, SampleState.Any | ViewState.Any | InstanceState.Alive
            )
        out = []
        for sample in self._publications.read(N=4096, condition=self._alive):
            topic = ros_topic_name(sample.topic_name)
            if topic is None:
                continue
            user_data = _user_data(sample.qos)
            out.append(
                Publication(
                    topic,
                    ros_type_name(sample.type_name),
                    sample.type_name,
                    type_hash_from_user_data(user_data),
                    str(sample.key),
                    _policy(sample.qos, "Reliability"),
                    _policy(sample.qos, "Durability"),
                )
            )
        return out

    def _live(self) -> Any:
        if self.dds is None:
            raise UsageError(f"the DDS participant of domain {self.domain_id} is closed")
        return self.dds

    def close(self) -> None:
        """Leave the domain: delete the participant and everything made from it."""
        if self.dds is None:
            return
        dds, self.dds = self.dds, None
        self._topics.clear()
        self._publications = None
        with _lock:
            _delete(dds)
            entry = self._entry
            if entry is not None:
                entry[2] -= 1
                if entry[2] <= 0 and _domains.get(self.domain_id) is entry:
                    del _domains[self.domain_id]
                    _delete(entry[1])

    def __enter__(self) -> Participant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "dds", None) is not None:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self.dds is None else "open"
        return f"Participant(domain_id={self.domain_id}, {state})"


def wait_matched(endpoint: Any, count: int = 1, timeout_s: float = 10.0) -> bool:
    """Block until a ``DataWriter`` has ``count`` matched readers (a ``DataReader``:
    ``count`` matched writers), at most ``timeout_s``; whether it happened.

    A DDS wait set on the endpoint's matched status, not a poll: what a
    publisher calls before its first sample when a late reader must not miss
    it (a volatile topic keeps nothing for readers that match later).
    """
    from cyclonedds.core import DDSStatus, WaitSet
    from cyclonedds.pub import DataWriter

    writer = isinstance(endpoint, DataWriter)
    status = (
        endpoint.get_publication_matched_status
        if writer
        else (endpoint.get_subscription_matched_status)
    )
    endpoint.set_status_mask(
        DDSStatus.PublicationMatched if writer else DDSStatus.SubscriptionMatched
    )
    waitset = WaitSet(endpoint.participant)
    waitset.attach(endpoint)
    deadline = time.monotonic() + timeout_s
    try:
        while status().current_count < count:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            waitset.wait(int(min(left, 0.5) * 1e9))
        return True
    finally:
        waitset.detach(endpoint)
        _delete(waitset)


def _effective(config: str | None) -> str:
    """:data:`DELIVERY_CONFIG`, then ``config`` (else ``CYCLONEDDS_URI``), which overrides it:
    Cyclone reads a comma-separated list of XML and ``file://`` URIs in order."""
    given = config if config is not None else os.environ.get("CYCLONEDDS_URI", "").strip()
    return f"{DELIVERY_CONFIG},{given}" if given else DELIVERY_CONFIG


def _delete(entity: Any) -> None:
    """Delete a cyclonedds entity now (later calls do nothing)."""
    from adapters.ros._compat_cyclonedds import delete

    delete(entity)


class DdsWriteError(HyperframesError):
    """DDS refused a sample :func:`write_sample` wrote; ``timed_out`` when a reliable write
    waited its ``max_blocking`` for a slow reader."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def write_sample(writer: Any, sample: Any) -> None:
    """Write ``sample`` (a :func:`~adapters.ros.raw_sample`) with ``writer`` (a
    ``DataWriter`` from :meth:`Participant.writer`); :class:`DdsWriteError` if DDS refuses."""
    from cyclonedds.core import DDSException

    try:
        writer.write(sample)
    except DDSException as err:
        timed_out = err.code == DDSException.DDS_RETCODE_TIMEOUT
        raise DdsWriteError(str(err), timed_out=timed_out) from err


def wait_for_acks(writer: Any, timeout_ns: int) -> bool:
    """Whether every matched reliable reader acknowledged what ``writer`` wrote, waiting at
    most ``timeout_ns`` (``0``: only look)."""
    from adapters.ros._compat_cyclonedds import wait_for_acks as wait

    return wait(writer, timeout_ns)


def _policy(qos: Any, scope: str) -> str | None:
    """``Policy.Reliability.BestEffort`` -> ``best_effort`` (a discovered endpoint's QoS)."""
    from adapters.ros._compat_cyclonedds import policy_scope

    policy = next((p for p in qos or () if policy_scope(p) == scope), None)
    if policy is None:
        return None
    name = type(policy).__name__.rsplit(".", 1)[-1]
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _user_data(qos: Any) -> bytes | None:
    """The ``USER_DATA`` bytes of a discovered endpoint's QoS, if set."""
    from adapters.ros._compat_cyclonedds import policy_scope

    policy = next((p for p in qos or () if policy_scope(p) == "Userdata"), None)
    data = getattr(policy, "data", None)
    return bytes(data) if data else None
