"""Sync groups for export: re-forming them from recorded frames, and their marker records.

A ``.hfr`` recording keeps frames, not the groups the hub made of them. The
frames carry the hub's aligned ``t`` though, so feeding them in recorded order
to the same sans-I/O policy gives the groups back without any clock or event
loop (:func:`sync_groups`). An exporter then writes one marker per group
(:func:`group_record` for ROS key/values, :func:`group_json` for Foxglove),
so a viewer shows which frames belong together and how far apart they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from fusion import Frame, FrameGroup
from fusion.policies import ApproximateTime, ExactTime, Nearest, SyncPolicy

GROUP_TOPIC = "/hyperframes/groups"
"""Topic of the sync-group markers in every export profile."""

SYNC_MODES = ("none", "approximate", "exact", "nearest:REF[:TOL_MS]")


def make_policy(mode: str, sensors: Sequence[str], queue_size: int = 32) -> SyncPolicy | None:
    """A policy for ``--groups MODE`` over ``sensors``; ``None`` for ``"none"`` or one sensor.

    ``nearest:lidar:50`` groups every other sensor's nearest frame within 50 ms
    (default: 50) around each ``lidar`` frame.
    """
    if mode == "none" or len(sensors) < 2:
        return None
    if mode == "approximate":
        return ApproximateTime(list(sensors), queue_size=queue_size)
    if mode == "exact":
        return ExactTime(list(sensors), queue_size=queue_size)
    if mode.startswith("nearest:"):
        _, _, rest = mode.partition(":")
        reference, _, tol = rest.partition(":")
        if reference not in sensors:
            raise ValueError(f"--groups {mode}: {reference!r} is not one of {list(sensors)}")
        tolerance = int(float(tol or 50) * 1_000_000)
        return Nearest(reference, list(sensors), tolerance=tolerance)
    raise ValueError(f"--groups {mode!r}: expected one of {', '.join(SYNC_MODES)}")


def sync_groups(frames: Iterable[Frame], policy: SyncPolicy) -> Iterator[FrameGroup]:
    """Push ``frames`` (recorded order) through ``policy``; yield its groups, then drain it.

    Frames whose ``t`` does not increase for their sensor (a policy requires it)
    are left out of grouping; the frames themselves are still exported.
    """
    last: dict[str, int] = {}
    for frame in frames:
        if frame.t <= last.get(frame.sensor, -(2**63)):
            continue
        last[frame.sensor] = frame.t
        yield from policy.push(frame)
    yield from policy.drain()


def group_record(group: FrameGroup) -> dict[str, str]:
    """Group as ordered string key/values: ``t``, ``spread_ns``, ``missing``, then one per sensor.

    A single member reads ``"seq@t"``; a window of frames ``"seq@t seq@t ..."``.
    """
    out = {
        "t": str(group.t),
        "spread_ns": str(group.spread),
        "missing": ",".join(sorted(group.missing)),
    }
    for sensor, item in group.frames.items():
        members = item if isinstance(item, list) else [item]
        out[sensor] = " ".join(f"{f.seq}@{f.t}" for f in members)
    return out


def group_json(group: FrameGroup) -> dict[str, Any]:
    """Group as a JSON object for the Foxglove profile (plots of ``spread_ns`` work on it).

    Times (``t``, each member's ``t`` and ``t_sensor``) are ``{"sec", "nsec"}`` as in
    Foxglove's own schemas: epoch nanoseconds are beyond 2^53, which JavaScript's
    ``JSON.parse`` rounds (by up to 128 ns); other integers beyond it are strings."""
    from recordings.outputs.encoders._generic import js_int, json_time

    return {
        "timestamp": json_time(group.t),
        "t": json_time(group.t),
        "spread_ns": js_int(group.spread),
        "size": len(group.members()),
        "missing": sorted(group.missing),
        "members": [
            {
                "sensor": f.sensor,
                "seq": js_int(f.seq),
                "t": json_time(f.t),
                "t_sensor": None if f.t_sensor is None else json_time(f.t_sensor),
            }
            for f in group.members()
        ],
    }


_TIME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
}


GROUP_JSON_SCHEMA: dict[str, Any] = {
    "title": "hyperframes.SyncGroup",
    "type": "object",
    "properties": {
        "timestamp": _TIME_SCHEMA,
        "t": {**_TIME_SCHEMA, "description": "group reference time"},
        "spread_ns": {"type": "integer", "description": "latest minus earliest member t"},
        "size": {"type": "integer"},
        "missing": {"type": "array", "items": {"type": "string"}},
        "members": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sensor": {"type": "string"},
                    "seq": {"type": "integer"},
                    "t": _TIME_SCHEMA,
                    "t_sensor": {"oneOf": [_TIME_SCHEMA, {"type": "null"}]},
                },
            },
        },
    },
}
"""JSON schema of :func:`group_json` records."""
