"""How hyperframes speaks ROS, in one room, without a ROS install.

* the message codec: rosbags' type stores (:func:`type_store`, the bag's own types), the hot
  types decoded straight from their bytes, any message to a frame payload
  (:func:`message_frame`, :data:`DECODERS`), images and ``PointCloud2`` both ways, and the
  original message kept beside a frame (``passthrough``) so it can be written back exactly;
* the DDS transport a ROS 2 node's middleware uses: topic and type names, the QoS profiles
  (:class:`TopicQos`), a Cyclone DDS :class:`Participant` and raw-CDR types;
* :class:`Ros2Source`: live ROS 2 topics as frames.

:class:`~adapters.BagSource` (ROS 1/2 bags), :class:`Ros2Source`, the exporters and the
ROS 2 publisher (:mod:`recordings.outputs`) all use it. ``docs/ros2.md`` says which ROS 2
distributions and middlewares this interoperates with. ``rosbags`` and ``cyclonedds`` load
only when a bag is opened, a participant joins or a type is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.ros._convert import MessageConverter, message_frame
    from adapters.ros._idltypes import UnsupportedType, message_class, raw_sample
    from adapters.ros._images import decode_image, encoding_for, image_layout
    from adapters.ros._live_checks import policy_name
    from adapters.ros._live_source import Ros2Source
    from adapters.ros._messages import (
        DECODERS,
        decode_generic,
        decode_imu,
        decode_navsatfix,
        decoder_info,
        message_to_arrays,
    )
    from adapters.ros._names import dds_topic_name, dds_type_name, ros_topic_name, ros_type_name
    from adapters.ros._participant import (
        DdsWriteError,
        Participant,
        loopback_config,
        wait_for_acks,
        wait_matched,
        write_sample,
    )
    from adapters.ros._passthrough import (
        MSGDEF,
        MSGTYPE,
        RAW,
        SERIALIZATION,
        Ros2MessageType,
        message_definition,
        passthrough_type,
    )
    from adapters.ros._pointcloud2 import decode_pointcloud2, pointcloud2_fields
    from adapters.ros._qos import DEFAULT, SENSOR_DATA, TopicQos
    from adapters.ros._ros2to1 import noetic_fits, to_noetic
    from adapters.ros._typestore import (
        bag_types,
        default_ros_distro,
        fresh_type_store,
        register_msg,
        ros1_definition,
        ros_distros,
        standard_digest,
        type_store,
    )

__all__ = [
    "DECODERS",
    "DEFAULT",
    "MSGDEF",
    "MSGTYPE",
    "RAW",
    "SENSOR_DATA",
    "SERIALIZATION",
    "DdsWriteError",
    "MessageConverter",
    "Participant",
    "Ros2MessageType",
    "Ros2Source",
    "TopicQos",
    "UnsupportedType",
    "bag_types",
    "dds_topic_name",
    "dds_type_name",
    "decode_generic",
    "decode_image",
    "decode_imu",
    "decode_navsatfix",
    "decode_pointcloud2",
    "decoder_info",
    "default_ros_distro",
    "encoding_for",
    "fresh_type_store",
    "image_layout",
    "loopback_config",
    "message_class",
    "message_definition",
    "message_frame",
    "message_to_arrays",
    "noetic_fits",
    "passthrough_type",
    "pointcloud2_fields",
    "policy_name",
    "raw_sample",
    "register_msg",
    "ros1_definition",
    "ros_distros",
    "ros_topic_name",
    "ros_type_name",
    "standard_digest",
    "to_noetic",
    "type_store",
    "wait_for_acks",
    "wait_matched",
    "write_sample",
]

_HOMES = {
    "DECODERS": "adapters.ros._messages",
    "DEFAULT": "adapters.ros._qos",
    "DdsWriteError": "adapters.ros._participant",
    "MSGDEF": "adapters.ros._passthrough",
    "MSGTYPE": "adapters.ros._passthrough",
    "MessageConverter": "adapters.ros._convert",
    "Participant": "adapters.ros._participant",
    "RAW": "adapters.ros._passthrough",
    "Ros2MessageType": "adapters.ros._passthrough",
    "Ros2Source": "adapters.ros._live_source",
    "SENSOR_DATA": "adapters.ros._qos",
    "SERIALIZATION": "adapters.ros._passthrough",
    "TopicQos": "adapters.ros._qos",
    "UnsupportedType": "adapters.ros._idltypes",
    "bag_types": "adapters.ros._typestore",
    "dds_topic_name": "adapters.ros._names",
    "dds_type_name": "adapters.ros._names",
    "decode_generic": "adapters.ros._messages",
    "decode_image": "adapters.ros._images",
    "decode_imu": "adapters.ros._messages",
    "decode_navsatfix": "adapters.ros._messages",
    "decode_pointcloud2": "adapters.ros._pointcloud2",
    "decoder_info": "adapters.ros._messages",
    "default_ros_distro": "adapters.ros._typestore",
    "encoding_for": "adapters.ros._images",
    "fresh_type_store": "adapters.ros._typestore",
    "image_layout": "adapters.ros._images",
    "loopback_config": "adapters.ros._participant",
    "message_class": "adapters.ros._idltypes",
    "message_definition": "adapters.ros._passthrough",
    "message_frame": "adapters.ros._convert",
    "message_to_arrays": "adapters.ros._messages",
    "noetic_fits": "adapters.ros._ros2to1",
    "passthrough_type": "adapters.ros._passthrough",
    "pointcloud2_fields": "adapters.ros._pointcloud2",
    "policy_name": "adapters.ros._live_checks",
    "raw_sample": "adapters.ros._idltypes",
    "register_msg": "adapters.ros._typestore",
    "ros1_definition": "adapters.ros._typestore",
    "ros_distros": "adapters.ros._typestore",
    "ros_topic_name": "adapters.ros._names",
    "ros_type_name": "adapters.ros._names",
    "standard_digest": "adapters.ros._typestore",
    "to_noetic": "adapters.ros._ros2to1",
    "type_store": "adapters.ros._typestore",
    "wait_for_acks": "adapters.ros._participant",
    "wait_matched": "adapters.ros._participant",
    "write_sample": "adapters.ros._participant",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
