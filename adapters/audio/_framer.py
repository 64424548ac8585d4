"""Cutting decoded audio into frames of a fixed number of samples (sans-I/O).

Theory. Decoders hand out chunks of PCM samples whose sizes follow the codec
(1024 for AAC, 1152 for MP2/MP3, 960 or 480 for Opus ...), each with the index
of its first sample on the stream's own timeline (its PTS in samples). A
:class:`Framer` re-cuts that stream into frames of ``size`` samples, so a
frame's first sample index, hence its time, is exact: ``t = index * 1e9 //
rate`` (ns, floored) with ``index`` the stream's, not a count of what we were
given.

A chunk that does not start where the last one ended is a *discontinuity*:
forward (samples missing: a packet lost on the network, a PTS gap in the
file) it is a ``gap`` of that many samples; backward (samples repeated, a
clock reset) an ``overlap``. Either way the frame being filled goes out short
(``partial``) and framing restarts at the new chunk's index; no sample is
invented or dropped. A difference of up to ``slack`` samples is taken as
rounding in a resampler's PTS and ignored.

Ledger: a chunk carries the input units it came from (one demuxed packet); a
unit goes with the frame that holds the chunk's last sample, so every unit
ends in exactly one frame once :meth:`Framer.flush` has run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Cut:
    """One frame's worth: ``samples`` (channels x n float32), its first sample's index."""

    index: int
    samples: np.ndarray
    units: int
    partial: bool


@dataclass(frozen=True, slots=True)
class Discontinuity:
    """A chunk that did not start where the stream was: ``samples`` > 0 missing (``gap``),
    < 0 repeated (``overlap``)."""

    expected: int
    found: int

    @property
    def samples(self) -> int:
        return self.found - self.expected

    @property
    def reason(self) -> str:
        return "gap" if self.samples > 0 else "overlap"


class Framer:
    """Chunks in (:meth:`push`), fixed-size :class:`Cut` s and discontinuities out."""

    def __init__(self, size: int, channels: int, *, slack: int = 1) -> None:
        if size < 1 or channels < 1:
            raise ValueError(f"size and channels must be >= 1, got {size}, {channels}")
        self.size = size
        self.channels = channels
        self.slack = slack
        self._parts: list[np.ndarray] = []
        self._held = 0  # samples in _parts
        self._start: int | None = None  # index of the first held sample
        self._next: int | None = None  # index the next chunk should start at
        self._units_done = 0  # units whose chunks are wholly in held samples
        self.samples_in = 0
        self.gaps = 0
        self.gap_samples = 0
        self.overlaps = 0

    @property
    def next_index(self) -> int | None:
        """The index the next chunk is expected at (``None`` before the first)."""
        return self._next

    def push(
        self, samples: np.ndarray, index: int | None, units: int = 1
    ) -> list[Cut | Discontinuity]:
        """One chunk (channels x n) starting at sample ``index`` (``None``: right after the
        last one); the frames it completes and, first, a discontinuity if it is one."""
        if samples.ndim != 2 or samples.shape[0] != self.channels:
            raise ValueError(f"expected {self.channels} x n samples, got shape {samples.shape}")
        out: list[Cut | Discontinuity] = []
        n = samples.shape[1]
        self.samples_in += n
        if index is None:
            index = self._next if self._next is not None else 0
        if self._next is not None and abs(index - self._next) > self.slack:
            jump = Discontinuity(self._next, index)
            out.append(jump)
            if jump.samples > 0:
                self.gaps += 1
                self.gap_samples += jump.samples
            else:
                self.overlaps += 1
            out += self._flush_partial()
        elif self._next is not None:
            index = self._next  # within slack: contiguous
        if self._start is None:
            self._start = index
        self._parts.append(samples)
        self._held += n
        self._next = index + n
        emitted = len(out)
        out += self._cut_full()
        if self._held == 0:  # this chunk ended on a frame boundary: its unit goes now
            if len(out) > emitted:
                last = out[-1]
                assert isinstance(last, Cut)
                out[-1] = Cut(last.index, last.samples, last.units + units, last.partial)
            else:  # an empty chunk
                self._units_done += units
        else:
            self._units_done += units  # rides with the frame holding its last sample
            # (a later frame: the one that takes the held remainder)
        return out

    def flush(self, units: int = 0) -> list[Cut]:
        """The end of the stream: the frame being filled, short (``partial``); ``units``
        that made no samples at all ride with it (or with an empty frame)."""
        self._units_done += units
        return self._flush_partial()

    def _cut_full(self) -> list[Cut]:
        cuts: list[Cut] = []
        if self._held < self.size:
            return cuts
        data = np.concatenate(self._parts, axis=1) if len(self._parts) > 1 else self._parts[0]
        assert self._start is not None
        whole = self._held // self.size
        for k in range(whole):
            frame = np.ascontiguousarray(data[:, k * self.size : (k + 1) * self.size])
            cuts.append(Cut(self._start + k * self.size, frame, 0, False))
        rest = data[:, whole * self.size :]
        self._start += whole * self.size
        self._held = rest.shape[1]
        self._parts = [rest] if self._held else []
        if self._held == 0:
            self._start = None
        # units of chunks wholly inside the frames cut now (not the last chunk's, whose
        # remainder is still held) go with the first of them
        if cuts and self._units_done:
            first = cuts[0]
            cuts[0] = Cut(first.index, first.samples, self._units_done, False)
            self._units_done = 0
        return cuts

    def _flush_partial(self) -> list[Cut]:
        if not self._held:
            if self._units_done:  # empty chunks only: nothing to carry them
                units, self._units_done = self._units_done, 0
                return [Cut(self._next or 0, np.zeros((self.channels, 0), np.float32), units, True)]
            return []
        data = np.concatenate(self._parts, axis=1) if len(self._parts) > 1 else self._parts[0]
        assert self._start is not None
        cut = Cut(self._start, np.ascontiguousarray(data), self._units_done, True)
        self._parts, self._held, self._start, self._units_done = [], 0, None, 0
        return [cut]
