"""Groups and model results as bytes, for Ray's object store (sans-I/O, never pickled).

A group travels between a read task and an inference actor as two values:

* ``info``: msgpack of its time, its members' ``(sensor, seq)`` and ``missing``,
  small enough to ride along to the driver;
* ``payload``: its frames as one *uncompressed* ``.hfr`` chunk (the
  :class:`~recordings.hfr._builder.ChunkBuilder` codec), so arrays cross as raw
  bytes and decode as ``np.frombuffer`` views.

Results go back the same way: one chunk holding a frame per worker (the
worker's name as the sensor, the value as the data, an error message in
``meta["error"]``). Anything the codec cannot store (an object array, a Python
object) becomes that worker's error for that group, named, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgpack
import numpy as np

from fusion import Frame, FrameGroup
from fusion.errors import FrameFormatError
from recordings.hfr import ChunkBuilder, ChunkMeta, decode_frames

Members = dict[str, int | list[int]]


def group_info(group: FrameGroup) -> bytes:
    """``t``, members (``sensor -> seq``, or a list of seqs for a window) and ``missing``."""
    members: Members = {}
    for name, item in group.frames.items():
        members[name] = [f.seq for f in item] if isinstance(item, list) else item.seq
    return _pack({"t": group.t, "members": members, "missing": sorted(group.missing)})


def read_info(info: bytes) -> dict[str, Any]:
    """Inverse of :func:`group_info`: ``{"t", "members", "missing"}``."""
    value: dict[str, Any] = msgpack.unpackb(info, raw=False, strict_map_key=False)
    return value


def encode_group(group: FrameGroup) -> bytes:
    """The group's frames (and their layout) as bytes."""
    layout = [
        [name, len(item) if isinstance(item, list) else -1] for name, item in group.frames.items()
    ]
    chunk = _chunk(group.members())
    return _pack({"t": group.t, "layout": layout, "missing": sorted(group.missing), **chunk})


def decode_group(payload: bytes) -> FrameGroup:
    """Inverse of :func:`encode_group`; arrays are read-only views of ``payload``."""
    d = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    frames = _unchunk(d)
    out: dict[str, Frame | list[Frame]] = {}
    i = 0
    for name, n in d["layout"]:
        if n < 0:
            out[name] = frames[i]
            i += 1
        else:
            out[name] = frames[i : i + n]
            i += n
    return FrameGroup(d["t"], out, frozenset(d["missing"]))


def encode_results(group: FrameGroup, names: Sequence[str]) -> bytes:
    """``group.results`` of the workers ``names``; an error or unstorable value is a message."""
    frames = []
    for name in names:
        value = group.results.get(name)
        if isinstance(value, BaseException):
            frames.append(Frame(name, 0, group.t, None, meta={"error": str(value)}))
        else:
            frames.append(Frame(name, 0, group.t, value))
    builder = ChunkBuilder()
    for i, frame in enumerate(frames):
        try:
            builder.add(frame)
        except FrameFormatError as err:
            message = f"worker {frame.sensor!r}: its result cannot be stored: {err}"
            frames[i] = Frame(frame.sensor, 0, group.t, None, meta={"error": message})
            builder.add(frames[i])
    return _pack(_seal(builder))


def decode_results(payload: bytes) -> dict[str, Frame]:
    """Inverse of :func:`encode_results`: worker name -> its result frame."""
    return {f.sensor: f for f in _unchunk(msgpack.unpackb(payload, raw=False))}


def result_value(frame: Frame) -> Any:
    """The value of a result frame, or an ``Exception`` carrying its error message."""
    error = frame.meta.get("error")
    return RuntimeError(error) if error is not None else frame.data


def _chunk(frames: list[Frame]) -> dict[str, Any]:
    builder = ChunkBuilder()
    for frame in frames:
        builder.add(frame)
    return _seal(builder)


def _seal(builder: ChunkBuilder) -> dict[str, Any]:
    if builder.count == 0:
        return {"chunk": None, "raw": b""}
    sealed = builder.seal()
    return {"chunk": sealed.meta.to_msgpack(), "raw": bytes(sealed.raw)}


def _unchunk(d: Mapping[str, Any]) -> list[Frame]:
    if d["chunk"] is None:
        return []
    raw = np.frombuffer(d["raw"], np.uint8)
    meta = ChunkMeta.from_msgpack(d["chunk"], offset=0, stored_size=len(raw))
    return decode_frames(raw, meta, where="a group in transit")


def _pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed
