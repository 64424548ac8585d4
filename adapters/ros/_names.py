"""ROS 2 names on DDS: topics and types as a ROS 2 node's middleware spells them.

The mapping is the ros2/design article "Topic and Service name mapping to
DDS" (https://design.ros2.org/articles/topic_and_service_names.html), as
``rmw_cyclonedds_cpp`` and ``rmw_fastrtps_cpp`` implement it:

* a topic ``/a/b`` is the DDS topic ``rt/a/b`` (``rt`` for "ROS topic"; a
  service's request and reply topics take ``rq``/``rr`` and a
  ``Request``/``Reply`` suffix, not handled here);
* a message type ``pkg/msg/Type`` is the DDS type ``pkg::msg::dds_::Type_``
  (``create_type_name`` in rmw_cyclonedds' ``serdata.cpp``: the package's
  namespaces, then ``dds_::`` and the name with a trailing underscore).

Two endpoints match on DDS only if both strings are equal, so these functions
must produce them exactly. Pure functions, no DDS library needed.
"""

from __future__ import annotations

import re

TOPIC_PREFIX = "rt"
"""The DDS topic prefix of ROS 2 topics."""

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/(msg)/([A-Za-z][A-Za-z0-9_]*)$")
_DDS_TYPE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)::(msg)::dds_::([A-Za-z][A-Za-z0-9_]*)_$")


def check_topic(topic: str) -> str:
    """``topic`` if it is a fully qualified ROS 2 topic name, else a ``ValueError`` saying why.

    Fully qualified: starts with ``/``, tokens of letters, digits and ``_``
    that do not start with a digit, no empty token, no trailing ``/`` (the
    rules of the ros2/design article; ``~`` and substitutions are a node's,
    resolved before a name reaches DDS).
    """
    if not isinstance(topic, str) or not topic.startswith("/"):
        raise ValueError(f"ROS 2 topic {topic!r} is not fully qualified: it must start with '/'")
    tokens = topic[1:].split("/")
    for token in tokens:
        if not _TOKEN.fullmatch(token):
            raise ValueError(
                f"ROS 2 topic {topic!r}: {token!r} is not a valid name token "
                "(letters, digits and '_', not starting with a digit, none empty)"
            )
    return topic


def dds_topic_name(topic: str) -> str:
    """``/imu/data`` -> ``rt/imu/data``: the DDS topic a ROS 2 node uses for ``topic``."""
    return TOPIC_PREFIX + check_topic(topic)


def ros_topic_name(dds_topic: str) -> str | None:
    """``rt/imu/data`` -> ``/imu/data``; ``None`` for a DDS topic that is no ROS 2 topic."""
    if not dds_topic.startswith(TOPIC_PREFIX + "/"):
        return None
    topic = dds_topic[len(TOPIC_PREFIX) :]
    try:
        return check_topic(topic)
    except ValueError:
        return None


def dds_type_name(msgtype: str) -> str:
    """``sensor_msgs/msg/Imu`` -> ``sensor_msgs::msg::dds_::Imu_`` (rmw's DDS type name)."""
    found = _TYPE.match(msgtype)
    if found is None:
        raise ValueError(f"{msgtype!r} is not a ROS 2 message type name ('pkg/msg/Type')")
    package, kind, name = found.groups()
    return f"{package}::{kind}::dds_::{name}_"


def ros_type_name(dds_type: str) -> str | None:
    """``sensor_msgs::msg::dds_::Imu_`` -> ``sensor_msgs/msg/Imu``; ``None`` if not ROS 2's."""
    found = _DDS_TYPE.match(dds_type)
    if found is None:
        return None
    package, kind, name = found.groups()
    return f"{package}/{kind}/{name}"
