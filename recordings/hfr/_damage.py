"""A recording's damage report: every problem found, once per byte offset.

:class:`DamageLog` is what :attr:`Recording.damage
<recordings.hfr._reader.Recording.damage>` lists. Finding the chunks
(:mod:`recordings.hfr._locate`), reading them and :func:`recordings.hfr._verify.verify`'s
findings all end here, so a chunk read twice, or read and then verified, is
reported once.
"""

from __future__ import annotations

from recordings.errors import RecordingError

__all__ = ["DamageLog"]


class DamageLog:
    """Problems in the order found; a second one at the same byte offset (or, without
    an offset, with the same words) is dropped."""

    __slots__ = ("_seen", "errors")

    def __init__(self) -> None:
        self.errors: list[RecordingError] = []
        self._seen: set[int | str] = set()

    def report(self, err: RecordingError) -> None:
        """Add ``err`` unless one at its offset (or with its words) is already listed."""
        key: int | str = err.offset if err.offset is not None else str(err)
        if key in self._seen:
            return
        self._seen.add(key)
        self.errors.append(err)
