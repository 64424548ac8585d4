"""The topics of a :class:`~adapters.ros.Ros2Source`: which sensor each feeds, with which QoS,
type, converter and spec.

Decided once, when the source opens, from what the user gave and the type store; nothing
here touches DDS. A topic whose type the store does not define, or that cannot be read as
raw CDR, is refused with the topic named (:class:`~adapters.errors.SourceOpenError`); bad
options are a :class:`~fusion.errors.ConfigError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.bags import sensor_name
from adapters.errors import SourceOpenError
from adapters.ros._convert import MessageConverter
from adapters.ros._idltypes import UnsupportedType, message_class
from adapters.ros._messages import decoder_info
from adapters.ros._names import check_topic, dds_type_name
from adapters.ros._passthrough import MSGDEF, MSGTYPE, SERIALIZATION, message_definition
from adapters.ros._qos import SENSOR_DATA, TopicQos
from fusion import SensorSpec
from fusion.clock import ClockModel
from fusion.errors import ConfigError


@dataclass(slots=True)
class Route:
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


def wanted_topics(topics: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """Topic -> sensor name, checked: a list names sensors after the topics."""
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


def topic_profiles(
    qos: Mapping[str, TopicQos | Mapping[str, Any]], wanted: Mapping[str, str]
) -> dict[str, TopicQos]:
    """Each wanted topic's QoS: given (a profile or a table of its keys), else SENSOR_DATA."""
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


def make_route(
    store: Any,
    ros_distro: str,
    topic: str,
    sensor: str,
    msgtype: str,
    qos: TopicQos,
    decode_images: bool,
) -> Route:
    """The route of one topic of type ``msgtype``, refused if ``store`` cannot read it."""
    try:
        dds_type_name(msgtype)
    except ValueError as err:
        raise SourceOpenError(f"ROS 2 topic {topic!r}: {err}") from None
    if msgtype not in store.fielddefs:
        raise SourceOpenError(
            f"ROS 2 topic {topic!r} has type {msgtype}, which ROS 2 {ros_distro}'s "
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
    return Route(topic, sensor, msgtype, qos, converter)


def route_spec(
    route: Route,
    *,
    store: Any,
    ros_distro: str,
    domain_id: int,
    keep_messages: bool,
    capacity: int,
    overflow: Any,
    clock: ClockModel | None,
) -> SensorSpec:
    """The sensor spec of ``route``: its topic, type (and definition) and DDS settings."""
    meta: dict[str, Any] = {
        "topic": route.topic,
        MSGTYPE: route.msgtype,
        "ros2": {
            "domain_id": domain_id,
            "qos": route.qos.describe(),
            "ros_distro": ros_distro,
        },
    }
    if keep_messages:
        meta[MSGDEF] = message_definition(store, route.msgtype, True)
        meta[SERIALIZATION] = "cdr"
    return SensorSpec(
        route.sensor,
        kind=decoder_info(route.msgtype).kind,
        capacity=capacity,
        overflow=overflow,
        clock=clock,
        meta=meta,
    )
