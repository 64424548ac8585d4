"""Bags made from real bags with ``rosbags``' rosbag2 writer, for the cases no shared bag covers.

:func:`rewrite` copies every connection (topic, type, stored definition, type
hash, QoS) and message of a real rosbag2 bag into a new bag of another storage
(``sqlite3`` or ``mcap``), compression or ROS distribution, then applies what
rosbag2 itself does differently from ``rosbags``:

* sqlite3 storage of a **service-event** topic: rosbag2 (Jazzy and later) keys
  the ``message_definitions`` row by the service type ``pkg/srv/X``, not by the
  topic's type ``pkg/srv/X_Event`` (``service_definitions=True`` does the same);
* ``ros_distro`` in ``metadata.yaml`` is the distribution that recorded the bag.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rosbags.interfaces import ConnectionExtRosbag2, MessageDefinitionFormat
from rosbags.rosbag2 import Reader, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.typesys import Stores, get_typestore

UNKNOWN_HASH = "RIHS01_" + "0" * 64
"""What is written for a type the distribution's store cannot hash (a service event)."""


def _rihs01(store: object, msgtype: str) -> str:
    try:
        return str(store.hash_rihs01(msgtype))  # type: ignore[attr-defined]
    except Exception:  # a type the store does not have
        return UNKNOWN_HASH


def rewrite(
    source: Path,
    out: Path,
    *,
    storage: str = "sqlite3",
    message_compression: bool = False,
    ros_distro: str | None = None,
    service_definitions: bool = True,
) -> int:
    """Write ``source``'s connections and messages to the bag directory ``out``.

    Returns how many messages were written."""
    plugin = StoragePlugin.SQLITE3 if storage == "sqlite3" else StoragePlugin.MCAP
    written = 0
    with Reader(source) as reader:
        writer = Writer(out, version=9, storage_plugin=plugin)
        if message_compression:
            writer.set_compression(CompressionMode.MESSAGE, CompressionFormat.ZSTD)
        with writer:
            conns = {}
            store = get_typestore(Stores(f"ros2_{ros_distro or 'jazzy'}"))
            for conn in reader.connections:
                assert isinstance(conn.ext, ConnectionExtRosbag2)
                if conn.msgdef.format == MessageDefinitionFormat.NONE:
                    raise ValueError(f"{conn.topic}: no stored definition to copy")
                conns[conn.id] = writer.add_connection(
                    conn.topic,
                    conn.msgtype,
                    msgdef=conn.msgdef.data,
                    rihs01=conn.digest or _rihs01(store, conn.msgtype),
                    serialization_format=conn.ext.serialization_format,
                    offered_qos_profiles=conn.ext.offered_qos_profiles,
                )
            for conn, t, data in reader.messages():
                writer.write(conns[conn.id], t, data)
                written += 1
    if ros_distro is not None:
        meta = out / "metadata.yaml"
        meta.write_text(
            meta.read_text().replace("ros_distro: rosbags", f"ros_distro: {ros_distro}")
        )
    if storage == "sqlite3" and service_definitions:
        for db in out.glob("*.db3"):
            with sqlite3.connect(db) as con:
                con.execute(
                    "UPDATE message_definitions SET topic_type = substr(topic_type, 1, "
                    "length(topic_type) - 6) WHERE topic_type LIKE '%/srv/%\\_Event' ESCAPE '\\'"
                )
    return written
