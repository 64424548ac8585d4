"""ROS 1 and ROS 2 bags (MCAP, sqlite3, .bag) as sources, without a ROS install.

``rosbags`` is imported only when a bag is opened, so importing this package
is cheap and works without it.
"""

from adapters.bags.images import decode_image, encoding_for, image_layout
from adapters.bags.messages import (
    DECODERS,
    decode_generic,
    decode_imu,
    decode_navsatfix,
    decoder_info,
    message_to_arrays,
)
from adapters.bags.pointcloud2 import decode_pointcloud2
from adapters.bags.source import BagSource, BagTopic, parse_topics, sensor_name
from adapters.bags.summary import BagSummary, BagTopicSummary, read_bag_summary
from fusion._exports import rewrite_module

__all__ = [
    "DECODERS",
    "BagSource",
    "BagSummary",
    "BagTopic",
    "BagTopicSummary",
    "decode_generic",
    "decode_image",
    "decode_imu",
    "decode_navsatfix",
    "decode_pointcloud2",
    "decoder_info",
    "encoding_for",
    "image_layout",
    "message_to_arrays",
    "parse_topics",
    "read_bag_summary",
    "sensor_name",
]

rewrite_module(globals(), __name__)
