"""A ROS 2 message as the ROS 1 Noetic type of the same name, for a ROS 1 bag.

Why. A ROS 1 bag read by ``rosbag`` and every ROS 1 tool should carry Noetic's types where
Noetic has one of that name (``sensor_msgs/Imu``, ``sensor_msgs/CameraInfo``...), so their
MD5 is the one those tools know. :func:`noetic_fits` says whether every field of Noetic's
type has a ROS 2 counterpart of the same kind (the same name, or the same name in other
case: ROS 2's ``d, k, r, p`` of ``CameraInfo`` are ROS 1's ``D, K, R, P``), nested types
included; :func:`to_noetic` builds Noetic's message from the ROS 2 one, ``Header.seq``
taken from the frame. The way back is :mod:`adapters.ros._ros1to2`.
"""

from __future__ import annotations

from typing import Any

_HEADER = "std_msgs/msg/Header"


def _fields(store: Any, msgtype: str) -> list[tuple[str, Any]]:
    return list(store.fielddefs[msgtype][1])


def noetic_fits(msgtype: str, ros2: Any, noetic: Any, seen: frozenset[str] = frozenset()) -> bool:
    """Whether every field of ``noetic``'s ``msgtype`` has a counterpart of the same kind in
    ``ros2``'s (type stores), nested types included."""
    from rosbags.interfaces import Nodetype

    if msgtype in seen or msgtype not in ros2.fielddefs:
        return msgtype in seen
    theirs = {name.lower(): desc for name, desc in _fields(ros2, msgtype)}
    for name, (node, desc) in _fields(noetic, msgtype):
        if msgtype == _HEADER and name == "seq":
            continue
        other = theirs.get(name.lower())
        if other is None or other[0] != node:
            return False
        sub = desc if node == Nodetype.NAME else None
        if node in (Nodetype.ARRAY, Nodetype.SEQUENCE) and desc[0][0] == Nodetype.NAME:
            sub = desc[0][1]
        if sub is not None and not noetic_fits(sub, ros2, noetic, seen | {msgtype}):
            return False
    return True


def to_noetic(msg: Any, msgtype: str, noetic: Any, seq: int) -> Any:
    """``noetic``'s ``msgtype`` object with the values of the ROS 2 message ``msg`` (for
    which :func:`noetic_fits`); its ``Header.seq`` is ``seq``, nested headers' 0."""
    from rosbags.interfaces import Nodetype

    names = {name.lower(): name for name in msg.__dataclass_fields__}
    values: dict[str, Any] = {}
    for name, (node, desc) in _fields(noetic, msgtype):
        if msgtype == _HEADER and name == "seq":
            values[name] = seq & 0xFFFFFFFF
            continue
        value = getattr(msg, names[name.lower()])
        if node == Nodetype.NAME:  # the message's own header takes the seq
            value = to_noetic(value, desc, noetic, seq)
        elif node in (Nodetype.ARRAY, Nodetype.SEQUENCE) and desc[0][0] == Nodetype.NAME:
            value = [to_noetic(v, desc[0][1], noetic, 0) for v in value]
        values[name] = value
    return noetic.types[msgtype](**values)
