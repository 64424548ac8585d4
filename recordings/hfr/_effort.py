"""How hard to compress each chunk: zstd level 3, level 1, or not at all (``"auto"``).

Why. zstd's levels differ in how hard they look for repeated strings; the entropy
coding of what is left (Huffman literals) is the same at every positive level. Raw
sensor payloads are often noise-like: a camera's sensor noise, LiDAR float mantissas.
There repeats are rare and the whole gain is entropy coding, so level 3 spends twice
level 1's CPU for about 1 % of the size (174 MB of noisy camera frames and LiDAR
sweeps: 0.49 against 0.24 CPU-s, 152.9 against 154.7 MB). On structured payloads
(real LiDAR packets, point cloud files, bags) the search pays: level 3 is 4-9 %
smaller. Already-compressed payloads (video packets) gain nothing at any level.

How. :class:`AutoEffort` probes a chunk every :data:`PROBE_EVERY` raw bytes: a
64 KiB sample (four 16 KiB slices spread over the chunk) compressed at level 1 and
level 3. The chunks up to the next probe are

* stored as they are (``Compression.NONE``, which every reader reads) when level 1
  cannot make the sample :data:`RAW_SAVING` smaller;
* compressed at level 3 when it makes the sample at least :data:`MIN_GAIN` smaller
  than level 1 does;
* compressed at level 1 otherwise.

The probe costs about 1 % of compressing the bytes it speaks for at level 1. Its
verdict holds until the next probe, so a change of content costs at most
:data:`PROBE_EVERY` bytes compressed at the wrong level; a wrong "store as is" costs
at most that much compression, never data. The policy is shared by the recorder's
compression threads without a lock: a race only moves a probe by a chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from fusion.errors import ConfigError

AUTO: Final = "auto"
"""The ``compression_level`` that lets :class:`AutoEffort` choose per chunk (the default)."""

Level = int | Literal["auto"]
"""A recorder's ``compression_level``: a zstd level (-7 to 22) or ``"auto"``."""

LOW: Final = 1
"""Level for noise-like payloads: entropy coding only, in effect."""

HIGH: Final = 3
"""Level for payloads whose repeats pay for the search (zstd's own default)."""

PROBE_EVERY: Final = 16 * 1024 * 1024
"""Raw bytes between two probes."""

PROBE_SLICES: Final = 4
PROBE_SLICE: Final = 16 * 1024

MIN_GAIN: Final = 0.02
"""Level 3 when it makes the probe at least this much smaller than level 1 (noisy camera
frames and LiDAR sweeps: 0-2 %; real LiDAR captures and point clouds: 4-5 %)."""

RAW_SAVING: Final = 0.01
"""Stored as is when level 1 saves less than this share of the probe."""


def check_level(level: Any) -> Level:
    """``level`` if it is ``"auto"`` or a zstd level, else :class:`~fusion.errors.ConfigError`."""
    if level == AUTO:
        return AUTO
    if isinstance(level, bool) or not isinstance(level, int) or not -7 <= level <= 22:
        raise ConfigError(
            f"compression_level: expected 'auto' or a zstd level -7..22, got {level!r}"
        )
    return level


def probe_sample(parts: Sequence[Any], raw_size: int) -> bytes:
    """About 64 KiB spread over a chunk's largest part (the whole chunk when small)."""
    if raw_size <= PROBE_SLICES * PROBE_SLICE:
        return b"".join(parts)
    big = memoryview(max(parts, key=len)).cast("B")
    n = len(big)
    if n <= PROBE_SLICES * PROBE_SLICE:
        return bytes(big)
    step = n // PROBE_SLICES
    return b"".join(
        big[i * step + (step - PROBE_SLICE) // 2 :][:PROBE_SLICE] for i in range(PROBE_SLICES)
    )


class AutoEffort:
    """The ``"auto"`` compression policy of one recorder (see the module docstring)."""

    __slots__ = ("_due", "_level", "probes")

    def __init__(self) -> None:
        self._level: int | None = HIGH
        self._due = 0  # the first chunk is probed
        self.probes: list[tuple[int, int, int]] = []
        """``(sample bytes, level 1 bytes, level 3 bytes)`` of the last probes (at most 16)."""

    def level(
        self, parts: Sequence[Any], raw_size: int, compress: Callable[[int, bytes], int]
    ) -> int | None:
        """The zstd level for this chunk, or None to store it as is.

        ``compress(level, data)`` returns the compressed size of ``data`` at ``level``
        (the calling thread's own compressors).
        """
        due = self._due - raw_size
        if due > 0:
            self._due = due
            return self._level
        self._due = PROBE_EVERY
        sample = probe_sample(parts, raw_size)
        low = compress(LOW, sample)
        high = compress(HIGH, sample) if low < len(sample) * (1 - RAW_SAVING) else low
        self.probes = [*self.probes[-15:], (len(sample), low, high)]
        self._level = decide(len(sample), low, high)
        return self._level


def decide(sample: int, low: int, high: int) -> int | None:
    """The verdict of a probe: ``sample`` bytes, ``low`` at level 1, ``high`` at level 3."""
    if low >= sample * (1 - RAW_SAVING):
        return None
    return HIGH if high <= low * (1 - MIN_GAIN) else LOW
