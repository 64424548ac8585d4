"""The original ROS message of a frame that came from a bag, kept so it can be written back exactly.

:class:`~adapters.BagSource` puts on every sensor spec (once per sensor) what
the message type is, and on every frame the message's serialised bytes:

==========================  ===========  ===================================================
key                         where        value
==========================  ===========  ===================================================
``msgtype``                 spec meta    ``pkg/msg/Type`` (rosbags' naming, ROS 1 types too)
``msgdef`` (:data:`MSGDEF`)  spec meta    the type's full definition, dependencies included,
                                         in the ``.msg`` text of the bag's ROS version
``serialization``           spec meta    ``"cdr"`` (ROS 2) or ``"ros1"``
``ros_message`` (:data:`RAW`) frame meta  the message's bytes, exactly as in the bag
==========================  ===========  ===================================================

The decoded view (image, points, IMU dict...) stays the frame's ``data``;
these ride along, are stored by :class:`~recordings.Recorder` like any other
spec and frame meta, and come back from the reader. An exporter then needs no
ROS install and no type store: :func:`ros2_message_type` builds the type from
the stored definition and turns the bytes into ROS 2 CDR (a ROS 2 message is
written byte for byte). A ROS 1 type goes out as ROS 2 defines it
(:mod:`adapters.ros._ros1to2`): its ROS 2 equivalent's definition where one
exists (``sensor_msgs/CameraInfo``'s ``d, k, r, p``, ``Header`` without ``seq``),
else its own fields under ROS 2's naming rules; the bytes are converted by
``rosbags``' ``ros1_to_cdr``, or field by field where the ROS 2 type has other
fields (``visualization_msgs/Marker``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MSGTYPE = "msgtype"
MSGDEF = "msgdef"
SERIALIZATION = "serialization"
RAW = "ros_message"
"""Frame meta key of the message's serialised bytes."""


def message_definition(typestore: Any, msgtype: str, is2: bool) -> str:
    """``msgtype``'s full ``.msg`` definition (with dependencies) from a rosbags type store."""
    text: str = typestore.generate_msgdef(msgtype, ros_version=2 if is2 else 1)[0]
    return text


@dataclass(frozen=True, slots=True)
class Ros2MessageType:
    """A stored message type, ready to write as ROS 2 CDR."""

    name: str
    msgdef: str
    """ROS 2 ``.msg`` text with dependencies (an MCAP ``ros2msg`` schema)."""
    type_hash: str
    """RIHS01 type hash, as rosbag2 records it."""
    store: Any
    """A rosbags type store holding the type as ROS 2 defines it (what :attr:`msgdef` says)."""
    from_ros1: bool
    source: Any = None
    """For a ROS 1 type whose ROS 2 equivalent has other fields (``visualization_msgs/Marker``):
    a store of the ROS 1 layout its messages are read with, then converted field by field;
    ``None`` when the bytes convert as they are (:mod:`adapters.ros._ros1to2`)."""

    def to_cdr(self, raw: bytes | bytearray | memoryview) -> bytes:
        """The message as ROS 2 CDR bytes (unchanged when it already is)."""
        if not self.from_ros1:
            return raw if isinstance(raw, bytes) else bytes(raw)
        if self.source is None:
            return bytes(self.store.ros1_to_cdr(raw, self.name))
        from adapters.ros._ros1to2 import convert

        msg = self.source.deserialize_ros1(raw, self.name)
        return bytes(self.store.serialize_cdr(convert(msg, self.name, self.store), self.name))


def passthrough_type(spec_meta: Mapping[str, Any]) -> Ros2MessageType | None:
    """The ROS 2 type of a sensor whose spec carries a stored message type, else ``None``."""
    name, msgdef = spec_meta.get(MSGTYPE), spec_meta.get(MSGDEF)
    serialization = spec_meta.get(SERIALIZATION)
    if not isinstance(name, str) or not isinstance(msgdef, str):
        return None
    if serialization not in ("cdr", "ros1"):
        return None
    return ros2_message_type(name, msgdef, serialization == "ros1")


@lru_cache(maxsize=256)
def ros2_message_type(name: str, msgdef: str, from_ros1: bool) -> Ros2MessageType:
    """Build ``name`` from its stored definition; raises ``ValueError`` if it does not parse."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    try:
        types = get_types_from_msg(msgdef, name)
    except Exception as err:  # rosbags' parser errors have no common base
        raise ValueError(f"the stored definition of {name} does not parse: {err}") from err
    if not from_ros1:
        store = get_typestore(Stores.EMPTY)
        store.register(types)
        text = store.generate_msgdef(name, ros_version=2)[0]
        return Ros2MessageType(name, text, store.hash_rihs01(name), store, False)
    from adapters.ros._ros1to2 import ros1_as_ros2

    store, source = ros1_as_ros2(name, types)
    text = store.generate_msgdef(name, ros_version=2)[0]
    return Ros2MessageType(name, text, store.hash_rihs01(name), store, True, source)
