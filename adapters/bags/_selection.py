"""Which topics of a bag a :class:`~adapters.BagSource` reads, decided without reading a message.

:func:`summarise` lists every topic of an opened bag with its decoder, or why it has none
(several types, a definition that does not parse, a type neither the bag nor the
standard types define). :func:`select_topics` is the policy, a pure function of that list
and what was asked: every topic of the bag is either selected (with a decoder, under a
sensor name) or not read, and a topic not read is reported with its reason when every
readable topic was asked for (its indexed messages are then lost as ``unsupported_type``);
asking for a topic the bag lacks, or one that cannot be read, is an error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.errors import SourceOpenError
from adapters.ros import decoder_info

if TYPE_CHECKING:
    from adapters.bags._reader import BagReader


@dataclass(frozen=True, slots=True)
class BagTopic:
    """One topic of a bag, as :meth:`BagSource.inspect` lists it."""

    topic: str
    msgtype: str
    count: int
    decoder: str | None
    """Decoder name (``"image"``, ``"pointcloud2"``, ``"generic"``...), ``None`` if unsupported."""
    reason: str | None = None
    """Why the topic cannot be read, when ``decoder`` is ``None``."""


def sensor_name(topic: str) -> str:
    """A sensor name for a topic: ``/camera/image_raw`` -> ``camera_image_raw``."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", topic).strip("_") or "topic"


def parse_topics(items: Sequence[str]) -> dict[str, str]:
    """``["/cam/image=cam", "/imu"]`` -> ``{"/cam/image": "cam", "/imu": "imu"}`` (CLI form)."""
    out: dict[str, str] = {}
    for item in items:
        topic, sep, name = item.partition("=")
        topic = topic.strip()
        if not topic:
            raise ValueError(f"--topic {item!r}: expected TOPIC or TOPIC=SENSOR")
        out[topic] = name.strip() if sep and name.strip() else sensor_name(topic)
    return out


def summarise(reader: BagReader) -> list[BagTopic]:
    """Every topic of ``reader``'s bag with its type, message count and decoder (or why none)."""
    known = reader.typestore.fielddefs
    out = []
    for name, info in reader.topics.items():
        msgtype = info.msgtype or "?"
        if info.msgtype is None:
            out.append(BagTopic(name, msgtype, info.count, None, "several types"))
        elif name in reader.raw_topics:
            out.append(BagTopic(name, info.msgtype or "-", info.count, "raw"))
        elif name in reader.unreadable:
            out.append(BagTopic(name, msgtype, info.count, None, reader.unreadable[name]))
        elif msgtype not in known:
            reason = "no message definition in the bag or the standard types"
            out.append(BagTopic(name, msgtype, info.count, None, reason))
        else:
            out.append(BagTopic(name, msgtype, info.count, decoder_info(msgtype).name))
    return out


@dataclass(frozen=True, slots=True)
class Selection:
    """The topics a bag source reads, and those it does not."""

    wanted: dict[str, str]
    """Topic -> sensor name of every topic read, in the order asked (the bag's if all)."""
    unsupported: dict[str, str]
    """Topic -> ``"type: reason"`` of every topic of the bag that cannot be read."""
    skipped: dict[str, tuple[str, int, str]]
    """Topic -> ``(sensor name, messages indexed, reason)`` of the topics not read that
    were asked for by reading all (their messages are lost as ``unsupported_type``)."""


def select_topics(
    listing: Sequence[BagTopic],
    topics: Mapping[str, str] | Sequence[str] | None,
    where: str,
) -> Selection:
    """The topics read of a bag listed as ``listing`` (:func:`summarise`), asked as
    ``topics`` (a topic -> sensor mapping, a list of topics, ``None`` for every readable
    topic); ``where`` names the bag in errors (``"bag 'drive.mcap'"``)."""
    by_topic = {t.topic: t for t in listing}
    unsupported = {
        t.topic: f"{t.msgtype}: {t.reason}" for t in by_topic.values() if t.decoder is None
    }
    if topics is None:
        wanted = {name: sensor_name(name) for name, t in by_topic.items() if t.decoder}
    elif isinstance(topics, Mapping):
        wanted = dict(topics)
    else:
        wanted = {name: sensor_name(name) for name in topics}
    missing = [name for name in wanted if name not in by_topic]
    if missing:
        raise SourceOpenError(
            f"{where} has no topic {', '.join(map(repr, missing))}; "
            f"it has {', '.join(sorted(by_topic)) or 'none'}"
        )
    for name in wanted:
        if name in unsupported:
            raise SourceOpenError(f"{where}: topic {name!r} cannot be read ({unsupported[name]})")
    names = list(wanted.values())
    if len(set(names)) != len(names):
        raise ValueError(f"two topics map to the same sensor name: {wanted}")
    if not wanted:
        detail = "; ".join(f"{t}: {r}" for t, r in sorted(unsupported.items()))
        raise SourceOpenError(
            f"{where} has no readable topic to replay" + (f" ({detail})" if detail else "")
        )
    skipped = {
        topic: (sensor_name(topic), by_topic[topic].count, reason)
        for topic, reason in unsupported.items()
        if topics is None
    }
    return Selection(wanted, unsupported, skipped)
