"""Live ROS 2 topics over DDS, without a ROS install: names, QoS, participants, message types.

A ROS 2 node's middleware (rmw_cyclonedds_cpp, rmw_fastrtps_cpp, rmw_connextdds)
publishes each topic as a DDS topic whose name, type name and payload follow
public conventions (the ros2/design article "Topic and Service name mapping to
DDS"): :mod:`adapters.ros2.names` spells them, :mod:`adapters.ros2.qos` holds
the ROS 2 QoS profiles, :mod:`adapters.ros2.participant` joins a DDS domain
(with a loopback-only Cyclone config for tests and single-machine robots) and
:mod:`adapters.ros2.idltypes` turns a message definition from rosbags' type
store into a Cyclone DDS type that carries the serialised CDR bytes.
``docs/ros2.md`` says which ROS 2 distributions and middlewares this
interoperates with.

:class:`~adapters.ros2.source.Ros2Source` subscribes to topics with them.
``cyclonedds`` is imported only when a participant opens or a type is built.
"""

from adapters.ros2.idltypes import (
    UnsupportedType,
    message_class,
    pad_cdr,
    raw_sample,
    sample_bytes,
    unpad_cdr,
)
from adapters.ros2.names import dds_topic_name, dds_type_name, ros_topic_name, ros_type_name
from adapters.ros2.participant import Participant, Publication, loopback_config, wait_matched
from adapters.ros2.qos import (
    DEFAULT,
    SENSOR_DATA,
    TopicQos,
    type_hash_from_user_data,
    type_hash_user_data,
)
from adapters.ros2.source import Ros2Source
from fusion._exports import rewrite_module

__all__ = [
    "DEFAULT",
    "SENSOR_DATA",
    "Participant",
    "Publication",
    "Ros2Source",
    "TopicQos",
    "UnsupportedType",
    "dds_topic_name",
    "dds_type_name",
    "loopback_config",
    "message_class",
    "pad_cdr",
    "raw_sample",
    "ros_topic_name",
    "ros_type_name",
    "sample_bytes",
    "type_hash_from_user_data",
    "type_hash_user_data",
    "unpad_cdr",
    "wait_matched",
]

rewrite_module(globals(), __name__)
