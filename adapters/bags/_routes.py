"""The selected topics of a bag as sensors: each topic's spec and converter, each
connection's route.

One converter per message type, shared by its topics (a generated decoder is a
``compile()`` each: a bag of eight ``String`` topics paid for eight); a non-ROS topic's
bytes are its payload (:class:`~adapters.bags._mcapstorage.RawConverter`). Each spec keeps
the type's full definition (``meta["msgdef"]``) unless ``keep_messages`` is false, so an
export writes the original messages back (:mod:`adapters.ros._passthrough`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.bags._mcapstorage import RawConverter
from adapters.bags._reader import BagReader
from adapters.bags._selection import BagTopic
from adapters.ros import (
    MSGDEF,
    MSGTYPE,
    SERIALIZATION,
    MessageConverter,
    decoder_info,
    message_definition,
)
from fusion import SensorSpec

Route = tuple[str, str, MessageConverter]
"""``(sensor, topic, converter)`` of one connection."""


@dataclass(slots=True)
class Routing:
    """The specs of the selected topics and how each connection's messages are converted."""

    specs: list[SensorSpec] = field(default_factory=list)
    connections: list[Any] = field(default_factory=list)
    """Every connection of the selected topics, to read."""
    routes: dict[int, Route] = field(default_factory=dict)
    """``id(connection)`` -> its route."""
    raw_decoded: set[str] = field(default_factory=set)
    """Topics decoded straight from their bytes (:mod:`adapters.ros._rawdecode`)."""
    flat_decoded: set[str] = field(default_factory=set)
    """Generic topics decoded straight from their bytes (:mod:`adapters.ros._flatdecode`)."""


def route_topics(
    reader: BagReader,
    wanted: Mapping[str, str],
    listing: Mapping[str, BagTopic],
    path: Path,
    *,
    decode_images: bool,
    keep_messages: bool,
    capacity: int,
) -> Routing:
    """The routing of ``wanted`` (topic -> sensor) of ``reader``'s bag at ``path``."""
    out = Routing()
    duration = max(1, reader.end_time - reader.start_time)
    made: dict[str, MessageConverter] = {}
    for topic, sensor in wanted.items():
        info = listing[topic]
        rate = info.count / (duration / 1e9) if info.count > 1 else None
        out.specs.append(
            SensorSpec(
                sensor,
                kind=decoder_info(info.msgtype).kind,
                rate_hz=rate,
                capacity=capacity,
                overflow="block",
                meta=spec_meta(reader, topic, info.msgtype, path, keep_messages),
            )
        )
        converter: Any
        if topic in reader.raw_topics:
            converter = RawConverter(reader.raw_topics[topic])
        elif info.msgtype not in made:
            converter = made[info.msgtype] = MessageConverter(
                reader.typestore,
                reader.standard,
                info.msgtype,
                cdr=reader.is2,
                decode_images=decode_images,
                deserialize=reader.deserialize,
            )
        else:
            converter = made[info.msgtype]
        if converter.standard:
            out.raw_decoded.add(topic)
        elif converter.fast is not None:
            out.flat_decoded.add(topic)
        for conn in reader.topics[topic].connections:
            out.connections.append(conn)
            out.routes[id(conn)] = (sensor, topic, converter)
    return out


def spec_meta(
    reader: BagReader, topic: str, msgtype: str, path: Path, keep_messages: bool
) -> dict[str, Any]:
    """A topic's spec meta: topic, type and bag, and the type's definition if kept."""
    meta: dict[str, Any] = {"topic": topic, MSGTYPE: msgtype, "bag": str(path)}
    if topic in reader.raw_topics:  # not ROS: its bytes are the payload
        meta[SERIALIZATION] = reader.raw_topics[topic]
    elif keep_messages:
        try:
            meta[MSGDEF] = message_definition(reader.typestore, msgtype, reader.is2)
        except Exception:  # rosbags writes .msg text for pkg/msg types only (not srv)
            meta[MSGDEF] = reader.topics[topic].connections[0].msgdef.data
        meta[SERIALIZATION] = "cdr" if reader.is2 else "ros1"
    return meta
