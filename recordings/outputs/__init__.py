"""Outputs: everything hyperframes writes for other tools, in one room.

* ``encoders/``: a frame as a ROS 2 message (:class:`Ros2McapWriter`'s messages, the DDS
  publisher's too) or a Foxglove message (:class:`FoxgloveMcapWriter`, the live server's too);
* ``files/``: :func:`export_recording` (``hyperframes export``) to ROS 2 / Foxglove MCAP,
  ROS 1 bags, MP4/MKV, WAV, PCD, Parquet, Rerun;
* ``live/``: :class:`FoxgloveServer` (the Foxglove WebSocket protocol) and
  :class:`Ros2Publisher` (ROS 2 topics over DDS), fed by a running pipeline.

Third-party packages (``rosbags``, ``mcap``, ``foxglove-sdk``, ``rerun-sdk``, PyAV) are
imported only by the writer that needs them; names load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from recordings.outputs._export import ExportReport, Target, export_recording
    from recordings.outputs.encoders._foxglove import FoxgloveMcapWriter
    from recordings.outputs.encoders._generic import json_value
    from recordings.outputs.encoders._groups import GROUP_TOPIC
    from recordings.outputs.encoders._shapes import parse_types, shape_of_type
    from recordings.outputs.files._mcap_ros2 import Ros2McapWriter
    from recordings.outputs.files._media import export_mp4, export_pcd, remux_mp4, write_pcd
    from recordings.outputs.files._rerun import RerunSink
    from recordings.outputs.live._foxglove_server import FoxgloveServer, PlaybackReply
    from recordings.outputs.live._ros2_publisher import Ros2Publisher

__all__ = [
    "GROUP_TOPIC",
    "ExportReport",
    "FoxgloveMcapWriter",
    "FoxgloveServer",
    "PlaybackReply",
    "RerunSink",
    "Ros2McapWriter",
    "Ros2Publisher",
    "Target",
    "export_mp4",
    "export_pcd",
    "export_recording",
    "json_value",
    "parse_types",
    "remux_mp4",
    "shape_of_type",
    "write_pcd",
]

_HOMES = {
    "ExportReport": "recordings.outputs._export",
    "FoxgloveMcapWriter": "recordings.outputs.encoders._foxglove",
    "FoxgloveServer": "recordings.outputs.live._foxglove_server",
    "GROUP_TOPIC": "recordings.outputs.encoders._groups",
    "PlaybackReply": "recordings.outputs.live._foxglove_server",
    "RerunSink": "recordings.outputs.files._rerun",
    "Ros2McapWriter": "recordings.outputs.files._mcap_ros2",
    "Ros2Publisher": "recordings.outputs.live._ros2_publisher",
    "Target": "recordings.outputs._export",
    "export_mp4": "recordings.outputs.files._media",
    "export_pcd": "recordings.outputs.files._media",
    "export_recording": "recordings.outputs._export",
    "json_value": "recordings.outputs.encoders._generic",
    "parse_types": "recordings.outputs.encoders._shapes",
    "remux_mp4": "recordings.outputs.files._media",
    "shape_of_type": "recordings.outputs.encoders._shapes",
    "write_pcd": "recordings.outputs.files._media",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
