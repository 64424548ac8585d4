"""ROS 1 and ROS 2 bags (MCAP, sqlite3, .bag) as sources, without a ROS install.

:class:`BagSource` reads any bag rosbag2 (and rosbag) writes, one bad topic costing only
itself; :func:`read_bag_summary` says what a bag holds as ``ros2 bag info`` does. The
message codec and type stores are the ROS room's (:mod:`adapters.ros`). ``rosbags`` is
imported only when a bag is opened, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.bags._detect import bag_format, not_a_bag
    from adapters.bags._reader import BagReader, decompress_message
    from adapters.bags._selection import BagTopic, parse_topics, sensor_name
    from adapters.bags._source import BagSource
    from adapters.bags._summary import BagSummary, BagTopicSummary, read_bag_summary

__all__ = [
    "BagReader",
    "BagSource",
    "BagSummary",
    "BagTopic",
    "BagTopicSummary",
    "bag_format",
    "decompress_message",
    "not_a_bag",
    "parse_topics",
    "read_bag_summary",
    "sensor_name",
]

_HOMES = {
    "BagReader": "adapters.bags._reader",
    "BagSource": "adapters.bags._source",
    "BagSummary": "adapters.bags._summary",
    "BagTopic": "adapters.bags._selection",
    "BagTopicSummary": "adapters.bags._summary",
    "bag_format": "adapters.bags._detect",
    "decompress_message": "adapters.bags._reader",
    "not_a_bag": "adapters.bags._detect",
    "parse_topics": "adapters.bags._selection",
    "read_bag_summary": "adapters.bags._summary",
    "sensor_name": "adapters.bags._selection",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
