"""File names from untrusted text (sensor names read from a recording).

A recording is input: a sensor named ``../../x``, ``/etc/passwd``, ``a\\b``,
``NUL`` or one holding a NUL byte must not choose where an export writes.
:func:`safe_filename` maps any string to one path component that is the same
on POSIX and Windows, by this rule (documented in ``docs/recordings.md``):

* ASCII letters, digits, ``-`` and ``_`` stay as they are, and so does ``.``
  except as the first or last character;
* every other character becomes ``%XX`` for each byte of its UTF-8 form
  (``/`` is ``%2F``, ``\\`` is ``%5C``, NUL is ``%00``, ``%`` is ``%25``), so
  different names give different file names and the mapping is reversible
  (``urllib.parse.unquote``);
* a Windows reserved device name (``CON``, ``PRN``, ``AUX``, ``NUL``,
  ``COM1``-``COM9``, ``LPT1``-``LPT9``, with or without an extension, any case)
  gets its first letter encoded (``NUL`` becomes ``%4EUL``);
* the empty name becomes ``%`` followed by nothing else (``"%"``), which no
  other name maps to; a result longer than :data:`MAX_NAME_BYTES` is cut and
  ends with ``~`` and 16 hex digits of the full name's SHA-256.

:func:`inside` is the second line of defence: the joined path must resolve
inside the output folder, or the write is refused.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

MAX_NAME_BYTES = 160
"""Longest encoded name (file systems allow 255 bytes for the whole component)."""

_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\.|$)", re.IGNORECASE)


def safe_filename(name: str) -> str:
    """``name`` as one safe path component (see the module docstring for the rule)."""
    if not name:
        return "%"
    out = []
    last = len(name) - 1
    for i, ch in enumerate(name):
        if ch in _KEEP and not (ch == "." and i in (0, last)):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    text = "".join(out)
    if _RESERVED.match(text):
        text = f"%{ord(text[0]):02X}{text[1:]}"
    if len(text) > MAX_NAME_BYTES:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        cut = text[: MAX_NAME_BYTES - 17]
        pct = cut.rfind("%", len(cut) - 2)
        text = f"{cut[:pct] if pct >= 0 else cut}~{digest}"  # never half an escape
    return text


def inside(folder: str | os.PathLike[str], component: str) -> Path:
    """``folder / component``, refused (``ValueError``) unless it resolves inside ``folder``."""
    base = Path(folder).resolve()
    path = (base / component).resolve()
    if path.parent != base:
        raise ValueError(f"refusing to write {component!r}: it is not a file inside {base}")
    return path
