"""Generic dicts (``record`` payloads) as a ROS 2 type made for the sensor, or as JSON.

A dict that no standard type fits (``{"mode": "auto", "speed": 3.2, "flags":
array([...], uint8)}``) keeps every field in both MCAP profiles:

* ``ros2``: a message type generated from the sensor's first frame,
  ``hyperframes_msgs/msg/<Sensor>Record``: a ``std_msgs/Header header`` (the
  frame's ``t`` and ``frame_id``), then one field per key, in key order. A
  number or string is a scalar of its dtype (``float64``, ``int32``,
  ``bool``, ``string``...), an array a sequence of it (``float32[] flags``);
  an array of two or more dimensions is written flat, with its shape in
  ``<field>__shape`` (``uint32[]``). Field names are the keys lowercased,
  ``.`` written as ``__`` and anything but ``[a-z0-9_]`` as ``_``
  (``"pose.x"`` -> ``pose__x``). A later frame whose keys or dtypes differ
  from the first frame's is skipped and counted.
* ``foxglove``: a JSON channel whose JSON schema lists every key (numbers,
  integers, booleans, strings, arrays of them); :func:`json_record` and
  :func:`json_schema`. An integer beyond 2^53 is written as a decimal string,
  as JavaScript's ``JSON.parse`` would round it (:func:`js_safe`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

_ROS_TYPES = {
    "b": "bool",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "f4": "float32",
    "f8": "float64",
    "U": "string",
}


def _ros_type(dtype: np.dtype[Any]) -> str | None:
    if dtype.kind in "bU":
        return _ROS_TYPES[dtype.kind]
    return _ROS_TYPES.get(f"{dtype.kind}{dtype.itemsize}")


def field_name(key: str) -> str:
    """A ROS 2 field name for a dict key: ``"pose.x"`` -> ``"pose__x"``."""
    name = re.sub(r"[^a-z0-9_]", "_", str(key).lower().replace(".", "__")).strip("_")
    if not name or not name[0].isalpha():
        name = "f_" + name
    return re.sub(r"_{3,}", "__", name)


def type_name(sensor: str) -> str:
    """``hyperframes_msgs/msg/<Sensor>Record`` for a sensor name (CamelCase, alphanumerics)."""
    parts = re.split(r"[^0-9A-Za-z]+", sensor)
    camel = "".join(p[:1].upper() + p[1:] for p in parts if p) or "Sensor"
    if camel[0].isdigit():
        camel = "S" + camel
    return f"hyperframes_msgs/msg/{camel}Record"


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    name: str
    ros_type: str
    dtype: str
    array: bool
    shaped: bool


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """The ROS 2 type of one sensor's ``record`` payloads, fixed by its first frame."""

    msgtype: str
    fields: tuple[_Field, ...]

    @classmethod
    def from_data(cls, sensor: str, data: Mapping[str, Any]) -> RecordLayout:
        fields, taken = [], {"header"}
        for key, value in data.items():
            arr = np.asarray(value)
            ros = _ros_type(arr.dtype)
            if ros is None:
                raise ValueError(f"key {key!r}: dtype {arr.dtype} has no ROS type")
            name = field_name(key)
            base, n = name, 1
            while name in taken or f"{name}__shape" in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            shaped = arr.ndim > 1
            if shaped:
                taken.add(f"{name}__shape")
            fields.append(_Field(str(key), name, ros, arr.dtype.str, arr.ndim > 0, shaped))
        return cls(type_name(sensor), tuple(fields))

    def msgdef(self) -> str:
        """The ``.msg`` text of the type (its ``Header`` resolved by the Humble store)."""
        lines = ["std_msgs/Header header"]
        for f in self.fields:
            lines.append(f"{f.ros_type}{'[]' if f.array else ''} {f.name}")
            if f.shaped:
                lines.append(f"uint32[] {f.name}__shape")
        return "\n".join(lines) + "\n"

    def mismatch(self, data: Mapping[str, Any]) -> str | None:
        """Why ``data`` does not fit this layout, or ``None``."""
        if [str(k) for k in data] != [f.key for f in self.fields]:
            return "its keys differ from the sensor's first frame"
        for f in self.fields:
            arr = np.asarray(data[f.key])
            if (arr.ndim > 0) != f.array or (arr.ndim > 1) != f.shaped:
                return f"key {f.key!r} changed between scalar and array"
            if _ros_type(arr.dtype) != f.ros_type:
                return f"key {f.key!r} changed dtype ({arr.dtype})"
        return None

    def message(self, cls: Any, header: Any, data: Mapping[str, Any]) -> Any:
        """An instance of the registered class ``cls`` holding ``data``."""
        values: dict[str, Any] = {"header": header}
        for f in self.fields:
            arr = np.asarray(data[f.key])
            if f.ros_type == "string":
                values[f.name] = [str(s) for s in arr.reshape(-1)] if f.array else str(arr)
            elif f.array:
                values[f.name] = np.ascontiguousarray(arr.reshape(-1))
            else:
                values[f.name] = arr.item()
            if f.shaped:
                values[f"{f.name}__shape"] = np.asarray(arr.shape, np.uint32)
        return cls(**values)


JS_SAFE_INTEGER = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: an integer beyond it is written as a string."""


def js_int(value: int) -> int | str:
    """``value``, or its decimal string when JavaScript's ``JSON.parse`` would round it."""
    return value if -JS_SAFE_INTEGER <= value <= JS_SAFE_INTEGER else str(value)


def js_safe(value: Any) -> Any:
    """A JSON value (lists, dicts) with every integer beyond 2^53 as a decimal string."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return js_int(value)
    if isinstance(value, list):
        return [js_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: js_safe(v) for k, v in value.items()}
    return value


def json_time(t: int) -> dict[str, int]:
    """Epoch nanoseconds as Foxglove's time, ``{"sec", "nsec"}`` (JavaScript keeps both)."""
    return {"sec": t // 1_000_000_000, "nsec": t % 1_000_000_000}


def json_value(value: Any) -> Any:
    """A numpy value as JSON: 0-d as a scalar, arrays as (nested) lists; integers beyond
    2^53 as decimal strings (JavaScript would round them)."""
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):  # JSON has no NaN: null
        arr = arr.astype(object)
        arr[~np.isfinite(arr.astype(np.float64))] = None
    out = arr.item() if arr.ndim == 0 else arr.tolist()
    wide = arr.dtype.kind in "iu" and arr.size > 0 and arr.itemsize >= 8
    if wide and (int(arr.max()) > JS_SAFE_INTEGER or int(arr.min()) < -JS_SAFE_INTEGER):
        return js_safe(out)
    return out


def json_record(t: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """``{"timestamp": {...}, key: value...}``: every key of a record payload."""
    record: dict[str, Any] = {"timestamp": json_time(t)}
    for key, value in data.items():
        record[str(key)] = json_value(value)
    return record


def _json_type(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"type": "array", "items": _json_type(value[0]) if value else {}}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float) or value is None:
        return {"type": ["number", "null"]} if value is None else {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {"type": "object"}


def json_schema(title: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema for a :func:`json_record` (every key, its JSON type)."""
    props: dict[str, Any] = {
        "timestamp": {
            "type": "object",
            "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
        }
    }
    for key, value in record.items():
        if key != "timestamp":
            props[key] = _json_type(value)
    return {"title": title, "type": "object", "properties": props}
