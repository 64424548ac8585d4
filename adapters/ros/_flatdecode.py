"""Generic messages decoded straight from their bytes to the generic form, one function per type.

Why: the generic decoder (:func:`~adapters.ros._messages.decode_generic`)
works on the objects ``rosbags`` deserialises (a dataclass per nested
message, a ``struct`` call per number), then walks them again to build the
flat dict of arrays. For every type whose fields it can lay out, this module
generates Python source (as rosbags does for its deserialisers) that goes
from the serialised bytes to that same dict in one pass: runs of fixed-size
numbers are read with one ``unpack_from`` where the CDR alignment is known
when the code is generated, numeric arrays are ``np.frombuffer`` views, and
no message object is built.

Same result, checked by a property test against ``decode_generic`` of what
rosbags deserialises: the same keys in the same order, dtypes and values,
header stamp and ``frame_id``. Bytes the generated code cannot parse raise
:class:`~adapters.ros._rawdecode.Malformed` (or ``struct.error``...), and the
caller hands them to rosbags, so a broken message gets exactly rosbags' error.

Wire formats: ROS 2 CDR (little-endian only; every primitive aligned to its
size counted from after the 4-byte encapsulation header; strings carry
their NUL; a message may end in up to 3 padding bytes) and ROS 1 (packed,
no alignment, no NUL, nothing after the message). Types nesting deeper
than the generic form's limit, ``float128`` and big-endian CDR are left to
rosbags (:func:`compile_flat` returns ``None``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from adapters.ros._messages import stack_parts
from adapters.ros._rawdecode import Malformed

FlatDecoder = Callable[[Any], tuple[int | None, str | None, dict[str, np.ndarray], dict[str, Any]]]
"""``raw bytes -> (header stamp ns or None, frame_id or None, data, meta)``."""

_FMT = {
    "bool": "?",
    "byte": "b",
    "char": "B",
    "int8": "b",
    "uint8": "B",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "uint64": "Q",
    "float32": "f",
    "float64": "d",
}
_DTYPE = {"bool": "bool_", "char": "uint8", "byte": "byte"}
_MAX_DEPTH = 8  # adapters.ros._messages._MAX_DEPTH: deeper types go through rosbags


class _Unsupported(Exception):
    pass


class _Gen:
    """Source of one decoder: the lines, and what is known of ``pos``'s alignment."""

    def __init__(self, fielddefs: Any, cdr: bool, maxlen: int, helpers: dict[str, Any]) -> None:
        self.defs = fielddefs
        self.cdr = cdr
        self.maxlen = maxlen
        self.helpers = helpers  # element decoders by type, shared by all functions
        self.lines: list[str] = []
        self.mod, self.rem = 8, 0  # pos - base = rem (mod mod), base = 4 in CDR, 0 in ROS 1
        self.run: list[tuple[str, str | None]] = []  # (struct chars, key or None for padding)
        self.tmp = 0
        self.row: list[str] | None = None  # in a row decoder: the keys of the values so far

    # -- alignment ---------------------------------------------------------------------

    def _pad(self, size: int) -> int | None:
        """Static padding before a ``size``-aligned field, or None when unknown."""
        if not self.cdr or size == 1:
            return 0
        if self.mod >= size:
            return (-self.rem) % size
        return None

    def _advance(self, n: int) -> None:
        self.rem = (self.rem + n) % self.mod

    def _align(self, size: int, indent: str = "  ") -> None:
        """Emit what puts ``pos`` on a ``size`` boundary (the run must be flushed)."""
        pad = self._pad(size)
        if pad is None:
            self.lines.append(f"{indent}pos += (base - pos) % {size}")
            self.mod, self.rem = size, 0
        elif pad:
            self.lines.append(f"{indent}pos += {pad}")
            self._advance(pad)

    def flush(self) -> None:
        """Emit the pending run of fixed-size numbers as one ``unpack_from``."""
        if not self.run:
            return
        fmt = "<" + "".join(c for c, _ in self.run)
        keys = [k for _, k in self.run if k is not None]
        name = f"v{self.tmp}"
        self.tmp += 1
        self.lines.append(f"  {name} = {self.unpacker(fmt)}(raw, pos)")
        self.lines.append(f"  pos += {struct.calcsize(fmt)}")
        if self.row is not None:  # a row of plain values (see scalar_row)
            self.lines.append(f"  row += {name}")
            self.row += keys
        else:
            for i, key in enumerate(keys):
                self.lines.append(f"  out[{key!r}] = asarray({name}[{i}])")
        self.run = []

    def unpacker(self, fmt: str) -> str:
        """The helper name of ``struct.Struct(fmt).unpack_from``, one per format."""
        name = "_unpack_" + "".join(c if c.isalnum() else "_" for c in fmt.replace("<", "le"))
        if name not in self.helpers:
            self.helpers[name] = struct.Struct(fmt).unpack_from
        return name

    # -- fields ------------------------------------------------------------------------

    def fields(self, msgtype: str, prefix: str, depth: int, top: bool) -> None:
        if depth >= _MAX_DEPTH:
            raise _Unsupported(f"{msgtype} nests deeper than {_MAX_DEPTH}")
        entry = self.defs.get(msgtype)
        if entry is None:
            raise _Unsupported(f"no definition of {msgtype}")
        for fname, (kind, detail) in entry[1]:
            key = prefix + fname
            kind = int(kind)
            if kind == 2:  # NAME
                if top and fname == "header":
                    self.header(detail)
                else:
                    self.fields(detail, key + ".", depth + 1, False)
            elif kind == 1:  # BASE
                self.base(key, detail[0])
            elif kind == 3:  # ARRAY
                sub, count = detail
                self.array(key, sub, count, depth)
            elif kind == 4:  # SEQUENCE
                self.sequence(key, detail[0], depth)
            else:
                raise _Unsupported(f"field kind {kind}")

    def base(self, key: str | None, name: str, var: str | None = None) -> None:
        """A number or string into ``out[key]``, or into the variable ``var``."""
        if name == "string":
            self.flush()
            self.string(key, var)
            return
        fmt = _FMT.get(name)
        if fmt is None:
            raise _Unsupported(f"base type {name}")
        size = struct.calcsize(fmt)
        if var is not None:  # a value the code needs now, not a leaf
            self.flush()
            self._align(size)
            self.lines.append(f"  {var} = {self.unpacker('<' + fmt)}(raw, pos)[0]")
            self.lines.append(f"  pos += {size}")
            self._advance(size)
            return
        pad = self._pad(size)
        if pad is None:
            self.flush()
            self._align(size)
            pad = 0
        if pad:
            self.run.append(("x" * pad, None))
            self._advance(pad)
        self.run.append((fmt, key))
        self._advance(size)

    def string(self, key: str | None, var: str | None = None, indent: str = "  ") -> None:
        """A string at ``pos`` into ``out[key]`` (or the variable ``var``); the run is flushed."""
        self._align(4, indent)
        n = f"n{self.tmp}"
        self.tmp += 1
        target = var or f"out[{key!r}]"
        lines = self.lines
        lines.append(f"{indent}{n} = _u32(raw, pos)[0]")
        if self.cdr:
            lines.append(f"{indent}if {n} < 1 or pos + 4 + {n} > len(raw) or raw[pos + 3 + {n}]:")
            lines.append(f"{indent}  raise Malformed('string')")
            text = f"raw[pos + 4:pos + 3 + {n}].decode()"
        else:
            lines.append(f"{indent}if pos + 4 + {n} > len(raw):")
            lines.append(f"{indent}  raise Malformed('string')")
            text = f"raw[pos + 4:pos + 4 + {n}].decode()"
        if var:
            lines.append(f"{indent}{target} = {text}")
        elif self.row is not None:
            lines.append(f"{indent}row.append({text})")
            self.row.append(str(key))
        else:
            lines.append(f"{indent}{target} = asarray({text})")
        lines.append(f"{indent}pos += 4 + {n}")
        self.mod, self.rem = 1, 0

    def header(self, msgtype: str) -> None:
        """The top-level header: its stamp and frame_id kept aside, nothing in ``out``."""
        if msgtype != "std_msgs/msg/Header":
            raise _Unsupported(f"header of type {msgtype}")
        fields = [f for f, _ in self.defs[msgtype][1]]
        if fields not in (["stamp", "frame_id"], ["seq", "stamp", "frame_id"]):
            raise _Unsupported("a non-standard std_msgs/Header")
        if fields[0] == "seq":
            self.base(None, "uint32", var="_seq")
        self.base(None, "int32", var="sec")
        self.base(None, "uint32", var="nanosec")
        self.flush()
        self.string(None, var="frame_id")
        self.lines.append("  stamp = sec * 1000000000 + nanosec or None")

    def _elem_size(self, sub: Any) -> tuple[str, int] | None:
        """``(dtype name, size)`` of a numeric array element, None for strings and messages."""
        kind, detail = sub
        if int(kind) != 1 or detail[0] == "string":
            return None
        if detail[0] not in _FMT:
            raise _Unsupported(f"base type {detail[0]}")
        return _DTYPE.get(detail[0], detail[0]), struct.calcsize(_FMT[detail[0]])

    def array(self, key: str, sub: Any, count: int, depth: int) -> None:
        self.flush()
        numeric = self._elem_size(sub)
        if numeric is not None:
            dtype, size = numeric
            if count:
                self._align(size)
            self.lines.append(f"  out[{key!r}] = _array(raw, {dtype!r}, {count}, pos)")
            self.lines.append(f"  pos += {count * size}")
            self._advance(count * size)
            return
        self.elements(key, sub, str(count), depth)

    @staticmethod
    def _is_string(sub: Any) -> bool:
        return int(sub[0]) == 1 and sub[1][0] == "string"

    def sequence(self, key: str, sub: Any, depth: int) -> None:
        self.flush()
        self._align(4)
        c = f"c{self.tmp}"
        self.tmp += 1
        numeric = self._elem_size(sub)
        # The fewest bytes an element takes: a string is its u32 length, plus the NUL
        # that CDR counts and ROS 1 does not write (an empty ROS 1 string is 4 bytes).
        string_min = 5 if self.cdr else 4
        minimum = numeric[1] if numeric else string_min if self._is_string(sub) else 1
        self.lines.append(f"  {c} = _u32(raw, pos)[0]")
        self.lines.append("  pos += 4")
        self.lines.append(
            f"  if pos - base + {c} * {minimum} > len(raw) - base or {c} > {self.maxlen}:"
        )
        self.lines.append("    raise Malformed('sequence length')")
        self.mod, self.rem = 4, 0
        if numeric is not None:
            dtype, size = numeric
            if size > 4 and self.cdr:
                self.lines.append(f"  if {c}:")
                self.lines.append(f"    pos += (base - pos) % {size}")
            self.lines.append(f"  out[{key!r}] = _array(raw, {dtype!r}, {c}, pos)")
            self.lines.append(f"  pos += {c} * {size}")
            self.mod, self.rem = min(4, size) if self.cdr else 8, 0
            return
        self.elements(key, sub, c, depth)

    def elements(self, key: str, sub: Any, count: str, depth: int) -> None:
        """Strings or messages, ``count`` of them (a number or a variable)."""
        kind, detail = sub
        items = f"items{self.tmp}"
        self.tmp += 1
        self.lines.append(f"  {items} = []")
        self.lines.append(f"  for _ in range({count}):")
        if int(kind) == 1:  # strings
            self.mod, self.rem = 1, 0
            self.string(None, var="s", indent="    ")
            self.lines.append(f"    {items}.append(s)")
            self.lines.append(f"  out[{key!r}] = asarray({items}) if {items} else _empty()")
        else:
            if depth + 1 >= _MAX_DEPTH:
                raise _Unsupported("nested too deep")
            row = row_decoder(detail, self.defs, self.cdr, self.maxlen, self.helpers)
            if row is not None:
                fn, names = row
                self.lines.append(f"    part, pos = {fn}(raw, pos, base)")
                self.lines.append(f"    {items}.append(part)")
                self.lines.append(f"  if {items}:")
                self.lines.append(f"    cols = list(zip(*{items}))")
                for i, name in enumerate(names):
                    self.lines.append(f"    out[{key + '.' + name!r}] = array(cols[{i}])")
                self.lines.append("  else:")
                self.lines.append(f"    out[{key!r}] = _empty()")
                self.mod, self.rem = 1, 0
                return
            fn = element_decoder(detail, self.defs, self.cdr, self.maxlen, self.helpers)
            self.lines.append(f"    part, pos = {fn}(raw, pos, base)")
            self.lines.append(f"    {items}.append(part)")
            self.lines.append(f"  if {items}:")
            self.lines.append(f"    _stack({items}, {key!r}, out)")
            self.lines.append("  else:")
            self.lines.append(f"    out[{key!r}] = _empty()")
        self.mod, self.rem = 1, 0


def _array(raw: Any, dtype: str, count: int, pos: int) -> np.ndarray:
    return np.frombuffer(raw, dtype=getattr(np, dtype), count=count, offset=pos)


def _empty() -> np.ndarray:
    return np.empty(0)


def _namespace(helpers: dict[str, Any]) -> dict[str, Any]:
    ns: dict[str, Any] = {
        "asarray": np.asarray,
        "array": np.array,
        "_array": _array,
        "_empty": _empty,
        "_stack": stack_parts,
        "_u32": struct.Struct("<I").unpack_from,
        "Malformed": Malformed,
    }
    ns.update(helpers)
    return ns


def element_decoder(
    msgtype: str, fielddefs: Any, cdr: bool, maxlen: int, helpers: dict[str, Any]
) -> str:
    """The helper decoding one ``msgtype`` element: ``(raw, pos, base) -> (dict, pos)``."""
    name = "_elem_" + msgtype.replace("/", "__")
    if name in helpers:
        return name
    helpers[name] = None  # a recursive type would come back here: it cannot (ROS has none)
    gen = _Gen(fielddefs, cdr, maxlen, helpers)
    gen.mod, gen.rem = 1, 0  # an element starts wherever the previous one ended
    gen.lines.append("  out = {}")
    gen.fields(msgtype, "", 0, top=False)
    gen.flush()
    gen.lines.append("  return out, pos")
    source = f"def {name}(raw, pos, base):\n" + "\n".join(gen.lines) + "\n"
    ns = _namespace(helpers)
    exec(compile(source, f"<flat {msgtype}>", "exec"), ns)
    helpers[name] = ns[name]
    return name


def _scalars_only(msgtype: str, fielddefs: Any, depth: int) -> bool:
    """Whether every leaf of ``msgtype`` is a number (not uint64) or a string."""
    if depth >= _MAX_DEPTH or msgtype not in fielddefs:
        return False
    for _name, (kind, detail) in fielddefs[msgtype][1]:
        kind = int(kind)
        if kind == 2:
            if not _scalars_only(detail, fielddefs, depth + 1):
                return False
        elif (
            kind != 1 or (detail[0] not in _FMT and detail[0] != "string") or detail[0] == "uint64"
        ):
            return False
    return True


def row_decoder(
    msgtype: str, fielddefs: Any, cdr: bool, maxlen: int, helpers: dict[str, Any]
) -> tuple[str, list[str]] | None:
    """For a type of numbers and strings only: a helper ``(raw, pos, base) -> (values, pos)``
    and the keys of its values, so a sequence of them becomes one ``np.array`` per key
    (what stacking their 0-d arrays gives, without making them); else ``None``."""
    if not _scalars_only(msgtype, fielddefs, 1):
        return None
    name = "_row_" + msgtype.replace("/", "__")
    if name in helpers:
        return name, helpers[name + "_keys"]
    gen = _Gen(fielddefs, cdr, maxlen, helpers)
    gen.mod, gen.rem = 1, 0
    gen.row = []
    gen.lines.append("  row = []")
    gen.fields(msgtype, "", 0, top=False)
    gen.flush()
    gen.lines.append("  return row, pos")
    source = f"def {name}(raw, pos, base):\n" + "\n".join(gen.lines) + "\n"
    ns = _namespace(helpers)
    exec(compile(source, f"<flat row {msgtype}>", "exec"), ns)  # our own generated code
    helpers[name], helpers[name + "_keys"] = ns[name], list(gen.row)
    return name, list(gen.row)


def compile_flat(msgtype: str, typestore: Any, cdr: bool) -> FlatDecoder | None:
    """A decoder from ``msgtype``'s bytes to the generic form, or ``None`` if it cannot be laid out.

    ``typestore`` holds the bag's definitions (the ones rosbags would use).
    """
    helpers: dict[str, Any] = {}
    gen = _Gen(
        typestore.fielddefs, cdr, int(getattr(typestore, "max_sequence_length", 2**32 - 1)), helpers
    )
    head = []
    if cdr:
        head += [
            "  if len(raw) < 4 or raw[0] != 0 or raw[1] != 1:",
            "    raise Malformed('not little-endian CDR')",
            "  pos = base = 4",
        ]
    else:
        head += ["  pos = base = 0"]
    head += ["  out = {}", "  stamp = frame_id = None"]
    head.insert(0, "  raw = raw if type(raw) is bytes else bytes(raw)")
    gen.lines = head
    try:
        gen.fields(msgtype, "", 0, top=True)
    except _Unsupported:
        return None
    gen.flush()
    if cdr:
        gen.lines += ["  if pos + 3 < len(raw):", "    raise Malformed('bytes after the message')"]
    else:
        gen.lines += ["  if pos != len(raw):", "    raise Malformed('message size mismatch')"]
    gen.lines.append("  return stamp, frame_id, out, {}")
    source = "def decode(raw):\n" + "\n".join(gen.lines) + "\n"
    ns = _namespace(helpers)
    exec(compile(source, f"<flat {msgtype}>", "exec"), ns)
    decode: FlatDecoder = ns["decode"]
    return decode
