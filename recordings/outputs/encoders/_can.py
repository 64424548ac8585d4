"""CAN sensors in the exports: raw frames as ROS ``can_msgs/msg/Frame``, decoded signals as
typed time series, one message per CAN frame.

A sensor of kind ``can`` (:class:`adapters.CanSource`) records one of two payloads, a
frame holding one row or (``block``) many:

* **raw frames**, :data:`adapters.can.RAW_DTYPE` rows (``id``, ``extended``, ``remote``,
  ``dlc``, ``data`` ...): written as ``can_msgs/msg/Frame`` (the message of
  ros2_socketcan and ros_canopen: ``id``, ``is_rtr``, ``is_extended``, ``is_error``,
  ``dlc``, 8 data bytes). A CAN FD frame of more than 8 bytes does not fit it and is
  skipped, counted with the reason; error frames never reach a recording (the source
  counts them);
* **decoded signals**, ``t`` and one column per signal: written as a record type made for
  the sensor (``hyperframes_msgs/msg/<Sensor>Record``: one typed field per signal,
  ``int64`` or ``float64`` as decoded), so a plot panel shows each signal by name.

Each row is one message, ``header.stamp`` the frame's ``t`` plus the row's offset from
the frame's first row (its own bus stamp), as :mod:`recordings.outputs.encoders._shapes` does for
typed rows. The Foxglove profile writes both as JSON, one message per row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

CAN_FRAME_TYPE = "can_msgs/msg/Frame"
CAN_FRAME_MSGDEF = """std_msgs/Header header
uint32 id
bool is_rtr
bool is_extended
bool is_error
uint8 dlc
uint8[8] data
"""
"""``can_msgs/msg/Frame`` as ros-industrial's ``can_msgs`` (ROS 1 and ROS 2) defines it."""

_RAW_FIELDS = frozenset({"t", "id", "extended", "remote", "dlc", "data"})

CanKind = Literal["can_frame", "can_signals"]


def can_kind(data: Any, sensor_kind: str) -> CanKind | None:
    """``can_frame`` (raw rows), ``can_signals`` (decoded rows) or ``None``: not a CAN payload."""
    if sensor_kind != "can" or not isinstance(data, np.ndarray) or data.dtype.names is None:
        return None
    names = set(data.dtype.names)
    if names >= _RAW_FIELDS:
        return "can_frame"
    if "t" in names and data.dtype["t"].kind in "iu" and len(names) > 1:
        return "can_signals"
    return None


def row_stamps(rows: np.ndarray, t: int) -> list[int]:
    """Each row's stamp: the frame's ``t`` plus the row's offset from the first row."""
    own = rows["t"].astype(np.int64)
    return (t + (own - own[0])).tolist() if len(own) else []


def frame_rows(rows: np.ndarray, t: int) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """``(stamp, can_msgs/Frame fields)`` per raw row, or ``(stamp, why it is skipped)``."""
    stamps = row_stamps(rows, t)
    ids = rows["id"].tolist()
    extended = rows["extended"].tolist()
    remote = rows["remote"].tolist()
    dlc = rows["dlc"].tolist()
    data = rows["data"]
    for k, stamp in enumerate(stamps):
        if dlc[k] > 8 and not remote[k]:
            yield (
                stamp,
                (
                    f"a CAN FD frame of {dlc[k]} bytes (id 0x{ids[k]:X}) does not fit "
                    f"{CAN_FRAME_TYPE} (8 bytes)"
                ),
            )
            continue
        payload = np.zeros(8, np.uint8)
        size = min(dlc[k], 8)
        if not remote[k]:
            payload[:size] = data[k, :size]
        yield (
            stamp,
            {
                "id": int(ids[k]),
                "is_rtr": bool(remote[k]),
                "is_extended": bool(extended[k]),
                "is_error": False,
                "dlc": int(dlc[k]),
                "data": payload,
            },
        )


def signal_rows(rows: np.ndarray, t: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(stamp, {signal: value})`` per decoded row (numpy scalars, their dtype kept)."""
    names = [n for n in rows.dtype.names or () if n != "t"]
    for k, stamp in enumerate(row_stamps(rows, t)):
        row = rows[k]
        yield stamp, {name: row[name] for name in names}


def frame_json(stamp: int, fields: dict[str, Any], rows: np.ndarray, k: int) -> dict[str, Any]:
    """A raw row as the Foxglove profile's JSON: the frame's fields, FD flags and channel."""
    dlc = int(rows["dlc"][k])
    return {
        "timestamp": {"sec": stamp // 1_000_000_000, "nsec": stamp % 1_000_000_000},
        "id": int(rows["id"][k]),
        "extended": bool(rows["extended"][k]),
        "remote": bool(rows["remote"][k]),
        "fd": bool(rows["fd"][k]) if "fd" in (rows.dtype.names or ()) else False,
        "dlc": dlc,
        "channel": int(rows["channel"][k]) if "channel" in (rows.dtype.names or ()) else 0,
        "data": rows["data"][k, :dlc].tolist() if not rows["remote"][k] else [],
    }


CAN_FRAME_JSON_SCHEMA: dict[str, Any] = {
    "title": "hyperframes.can_frame",
    "type": "object",
    "properties": {
        "timestamp": {
            "type": "object",
            "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
        },
        "id": {"type": "integer"},
        "extended": {"type": "boolean"},
        "remote": {"type": "boolean"},
        "fd": {"type": "boolean"},
        "dlc": {"type": "integer"},
        "channel": {"type": "integer"},
        "data": {"type": "array", "items": {"type": "integer"}},
    },
}
"""The JSON schema of a raw CAN frame in the Foxglove profile."""
