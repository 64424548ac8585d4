"""The footer's optional parts of one recording, each read once, on first use.

:class:`FooterParts` holds what :class:`~recordings.hfr._reader.Recording`
answers from the footer beside the chunk list: the stamp index (format 1.5,
:mod:`recordings.hfr._stamp_index`), the frame details (1.6,
:mod:`recordings.hfr._details`) and the sensor summaries (1.7). Each is either
the part or the words saying why the file offers none, so a caller can print
why a slower path was taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recordings.hfr._details import FrameDetails, read_details
from recordings.hfr._limits import ReadLimits
from recordings.hfr._stamp_index import StampIndex, read_stamp_index

__all__ = ["FooterParts"]


class FooterParts:
    """The stamp index and frame details of one file: ``None`` until asked, then the
    part or why there is none."""

    __slots__ = ("details", "stamps")

    def __init__(self) -> None:
        self.stamps: StampIndex | str | None = None
        self.details: FrameDetails | str | None = None

    def stamp_index(
        self, fd: int, size: int, limits: ReadLimits, pread: Callable[[int, int], bytes]
    ) -> StampIndex | None:
        """The stamp index read at the end of the file open as ``fd`` (``-1``: the
        footer is not used), once."""
        if self.stamps is None:
            if fd < 0:
                self.stamps = "the footer is not used"
            else:
                self.stamps = read_stamp_index(fd, size, limits, pread)
        return None if isinstance(self.stamps, str) else self.stamps

    def frame_details(
        self,
        fd: int,
        details_at: tuple[int, Any] | None,
        version: tuple[int, int],
        chunks: int,
        limits: ReadLimits,
    ) -> FrameDetails | None:
        """The frame details the INDEX at ``details_at[0]`` points at, once; ``fd`` is
        ``-2`` when the footer is not used, ``-1`` when the file is closed."""
        if self.details is None:
            if fd == -2:
                self.details = "the footer is not used"
            elif details_at is None:
                self.details = "the file has no footer index"
            elif details_at[1] is None:
                self.details = (
                    f"the file has no frame details (format {version[0]}."
                    f"{version[1]}; they came in 1.6)"
                )
            elif fd < 0:
                self.details = "the recording is closed"
            else:
                at, pointer = details_at
                found = read_details(fd, at, pointer, limits)
                if not isinstance(found, str) and found.chunks != chunks:
                    found = (
                        f"the frame details describe {found.chunks} chunks; the file has {chunks}"
                    )
                self.details = found
        return None if isinstance(self.details, str) else self.details

    @staticmethod
    def summaries(found: Any) -> dict[str, dict[str, Any] | str] | None:
        """The INDEX's ``summaries`` as decoded, if they are a map of names to maps or
        reasons; ``None`` otherwise."""
        if not isinstance(found, dict) or not all(
            type(k) is str and isinstance(v, dict | str) for k, v in found.items()
        ):
            return None
        return found
