"""The errors sources raise: a file or device that will not open, a unit that will not decode.

Each is a :class:`~fusion.errors.SourceError` (``sensor``, ``seq``). That base
stays in the core beside :class:`~fusion.Source`, so a custom adapter and
:func:`~fusion.errors.frame_context` need nothing from this floor. The whole
tree is drawn once, in :mod:`fusion.errors`.
"""

from __future__ import annotations

from fusion.errors import SourceError

__all__ = ["DecodeError", "SensorTimeout", "SourceOpenError"]


class DecodeError(SourceError):
    """A packet or frame could not be decoded; the stream goes on without it."""


class SensorTimeout(SourceError):
    """A sensor sent nothing within its deadline."""


class SourceOpenError(SourceError):
    """A source could not be opened (missing file, unreachable URL, wrong format)."""
