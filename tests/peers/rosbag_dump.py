"""Dump a ROS 1 bag with the real ``rosbag`` Python API (Debian's python3-rosbag), as JSON.

Run by the system Python, outside the venv: ``/usr/bin/python3 rosbag_dump.py BAG``.
Prints one document: ``version``, ``compression`` per chunk, ``connections`` (topic,
type, md5sum, message_definition) and ``messages`` in the bag's order, each with its
topic, time (ns), md5sum, raw bytes (hex) and the message's values as nested
dicts/lists (byte arrays as hex), read back by rosbag's own generated classes.
"""

import json
import sys

import rosbag


def values(msg):
    if hasattr(msg, "secs") and hasattr(msg, "nsecs"):  # rospy Time / Duration
        return {"sec": msg.secs, "nanosec": msg.nsecs}
    if hasattr(msg, "__slots__"):
        out = {}
        for name in msg.__slots__:
            out[name] = values(getattr(msg, name))
        return out
    if isinstance(msg, (list, tuple)):
        return [values(v) for v in msg]
    if isinstance(msg, (bytes, bytearray)):
        return {"hex": bytes(msg).hex()}
    if isinstance(msg, float) and msg != msg:
        return "nan"
    return msg


def main(path):
    with rosbag.Bag(path) as bag:
        doc = {
            "version": bag.version,
            "compression": sorted({c.compression for c in bag._chunk_headers.values()}),
            "connections": [
                {
                    "topic": c.topic,
                    "type": c.datatype,
                    "md5sum": c.md5sum,
                    "message_definition": c.msg_def,
                }
                for c in bag._connections.values()
            ],
            "messages": [],
        }
        raw = bag.read_messages(raw=True)
        typed = bag.read_messages()
        for (topic, (dtype, data, md5, _pos, _cls), t), (_t2, msg, _t3) in zip(raw, typed):  # noqa: B905 (Python 3 of any version)
            doc["messages"].append(
                {
                    "topic": topic,
                    "type": dtype,
                    "time": t.to_nsec(),
                    "md5sum": md5,
                    "raw": bytes(data).hex(),
                    "values": values(msg),
                }
            )
    json.dump(doc, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
