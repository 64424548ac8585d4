"""Velodyne data packets to sweeps, sans I/O.

Theory of operation. :class:`SweepAssembler` takes packets in batches
(:meth:`~SweepAssembler.push_many`; :meth:`~SweepAssembler.push` is a batch
of one) and does its per-packet work in numpy over the whole batch: validate
every packet (length, block flags of the model's layout, azimuths, timestamp,
return mode), unwrap the timestamps across the hour, and find where the
rotation crosses the cut angle, column by column like VeloView (a sweep ends
where the azimuth, measured from the cut angle, decreases). It returns
:class:`~adapters.lidar._velodyne_packets.RawSweep` objects holding the
packets' bytes as one ``(P, 1206)`` array;
:func:`~adapters.lidar._velodyne_decode.decode_sweeps` turns sweeps into points
in one compiled pass (no per-packet or per-point Python). Sources run that step
in a worker thread.

Invariants: every accepted packet contributes each of its blocks to exactly
one sweep, in arrival order (a packet the cut angle splits is in two sweeps,
its columns divided between them); a rejected packet is counted in
``SweepAssembler.rejected`` by reason and contributes nothing; ``push`` never
raises on any input bytes.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from adapters.lidar._velodyne_decode import RawSweep
from adapters.lidar._velodyne_models import (
    BLOCKS,
    HDL64E_LAYOUTS,
    HOUR_US,
    RETURN_DUAL,
    RETURN_STRONGEST,
    PacketLayout,
    VelodyneModel,
    packet_layout,
)
from adapters.lidar._velodyne_packets import MODE_OK, PACKET_SIZE
from fusion.errors import ConfigError

# flags and azimuths of the 12 blocks, then timestamp, return mode, product ID
_HEADERS = struct.Struct("<" + "HH96x" * BLOCKS + "IBB")


@dataclass(frozen=True, slots=True)
class _Headers:
    """The header fields of a batch of packets, as strided views of its bytes."""

    flags: np.ndarray
    """``(P, 12)`` uint16: each block's flag."""
    azimuth: np.ndarray
    """``(P, 12)`` uint16: each block's azimuth (0.01°)."""
    ts: np.ndarray
    """``(P,)`` uint32: µs past the hour."""
    mode: np.ndarray
    """``(P,)`` uint8: the return-mode byte."""
    dual: np.ndarray
    """``(P,)`` bool: dual-return packets (the HDL-64E's: block 2 repeats block 0's azimuth)."""

    def rows(self, keep: np.ndarray) -> _Headers:
        return _Headers(self.flags[keep], self.azimuth[keep], self.ts[keep], self.mode[keep],
                        self.dual[keep])  # fmt: skip


@dataclass(slots=True)
class _Builder:
    """The sweep in progress: row ranges of batch arrays, not yet joined."""

    layout: PacketLayout
    mode: int
    partial: bool
    first_block: int = 0
    end_block: int = BLOCKS
    chunks: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    rows: int = 0
    t_arrival: int | None = None

    def sweep(self) -> RawSweep:
        if len(self.chunks) == 1:
            packets, stamps = self.chunks[0]
        else:
            packets = np.concatenate([c[0] for c in self.chunks])
            stamps = np.concatenate([c[1] for c in self.chunks])
        return RawSweep(
            packets,
            stamps,
            self.layout,
            self.mode,
            self.first_block,
            self.end_block,
            self.t_arrival,
            self.partial,
        )


def _header_problem(
    flags: Sequence[int],
    azimuth: Sequence[int],
    ts: int,
    mode: int,
    expected: Sequence[int],
    used_blocks: int,
    hdl64e: bool,
) -> tuple[str, str] | None:
    """``(reason, message)`` of the first thing wrong with one packet's header, or None:
    the rules :func:`adapters.lidar._velodyne_kernel.check` applies to a batch."""
    for b in range(used_blocks):
        if flags[b] != expected[b]:
            return _bad_flag(b, flags[b], expected[b])
    for b in range(used_blocks):
        if azimuth[b] > 36000:
            return _bad_azimuth(b, azimuth[b])
    if ts >= HOUR_US:
        return _bad_timestamp(ts)
    if not hdl64e and not MODE_OK[mode]:
        return _bad_mode(mode)
    return None


def _bad_flag(block: int, got: int, want: int) -> tuple[str, str]:
    return "bad_block_flag", (
        f"block {block} flag is 0x{got:04X} at byte {block * 100}, "
        f"expected 0x{want:04X} (bytes {want & 0xFF:02X} {want >> 8:02X})"
    )


def _bad_azimuth(block: int, azimuth: int) -> tuple[str, str]:
    return "bad_azimuth", f"block {block} azimuth {azimuth} is above 36000"


def _bad_timestamp(ts: int) -> tuple[str, str]:
    return "bad_timestamp", f"timestamp {ts} µs is not within an hour (< {HOUR_US})"


def _bad_mode(mode: int) -> tuple[str, str]:
    return "bad_return_mode", (
        f"return mode 0x{mode:02X} is unknown (expected 0x37 strongest, 0x38 last or 0x39 dual)"
    )


class SweepAssembler:
    """Cut a stream of packets into rotations (sans I/O; never raises on input).

    ``cut_angle`` (degrees) is where one sweep ends and the next begins; the
    default 0° reproduces VeloView's frames. A sweep also ends early (marked
    ``partial``) when the next packet is more than ``max_gap_ns`` after the
    previous one, so a pause in the data never produces a sweep spanning it,
    when the return mode changes, and when it holds ``max_sweep_packets``
    packets (default: twice a full rotation at 5 Hz, the slowest rate), so a
    stream whose azimuth never crosses the cut angle costs bounded memory:
    such a sweep is emitted as partial and counted (``sweep_too_long``,
    through ``on_reject``, which is told every rejected packet too).
    """

    def __init__(
        self,
        model: VelodyneModel,
        *,
        cut_angle: float = 0.0,
        max_gap_ns: int = 100_000_000,
        max_sweep_packets: int | None = None,
        on_reject: Callable[[str, str], None] | None = None,
    ) -> None:
        if not 0.0 <= cut_angle < 360.0:
            raise ConfigError(f"cut_angle must be in [0, 360) degrees, got {cut_angle}")
        self.model = model
        self.cut = round(cut_angle * 100)
        self.max_gap_us = max_gap_ns // 1000
        self.max_sweep_packets = (
            max(1, max_sweep_packets)
            if max_sweep_packets is not None
            else math.ceil(2 * 200_000 / model.packet_us())  # two rotations' worth at 5 Hz
        )
        self.long_sweeps = 0
        """Sweeps cut at ``max_sweep_packets`` (the azimuth did not cross the cut angle)."""
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        """Packets dropped, by reason: bad_length, bad_block_flag, bad_azimuth,
        bad_timestamp, bad_return_mode."""
        self.last_error: str | None = None
        self.product_ids: Counter[int] = Counter()
        self.dual_packets = 0
        self.last_index = -1
        """Index (in arrival order) of the packet last rejected."""
        self._on_reject = on_reject
        self._hdl64e = model.layout in HDL64E_LAYOUTS
        self._single = packet_layout(model, False)
        self._dual = packet_layout(model, True)
        expected = [np.zeros(BLOCKS, np.int64), np.zeros(BLOCKS, np.int64)]
        for i, lay in enumerate((self._single, self._dual)):
            expected[i][: lay.used_blocks] = lay.flags
        self._flags = np.stack(expected)  # (2, 12): single, dual
        self._flag_tuples = (self._single.flags, self._dual.flags)
        self._used_blocks = np.array([self._single.used_blocks, self._dual.used_blocks])
        self._hours = 0
        self._last_ts: int | None = None
        self._last_stamp: int | None = None
        self._last_shifted: int | None = None
        self._last_kind: tuple[bool, int] | None = None
        self._current: _Builder | None = None

    # -- input -----------------------------------------------------------------------------

    def push(self, payload: bytes, t_arrival: int | None = None) -> list[RawSweep]:
        """Take one UDP payload; return the sweeps it completed (usually none).

        The same rules as :meth:`push_many` in plain Python: a live packet at a
        time costs microseconds, not the fixed cost of a dozen numpy calls.
        """
        index = self.accepted + sum(self.rejected.values())
        if len(payload) != PACKET_SIZE:
            self._reject(
                "bad_length",
                f"packet {index}: expected {PACKET_SIZE} bytes, got {len(payload)}",
                index,
            )
            return []
        fields = _HEADERS.unpack(payload)
        flags, azimuth = fields[0:24:2], fields[1:24:2]
        ts, mode, product = fields[24:]
        dual = azimuth[0] == azimuth[2] if self._hdl64e else mode == RETURN_DUAL
        layout = self._dual if dual else self._single
        problem = _header_problem(
            flags, azimuth, ts, mode, self._flag_tuples[dual], layout.used_blocks, self._hdl64e
        )
        if problem is not None:
            self._reject(problem[0], f"packet {index}: {problem[1]}", index)
            return []
        self.accepted += 1
        self.product_ids[product] += 1
        self.dual_packets += dual
        if self._hdl64e:
            mode = RETURN_DUAL if dual else RETURN_STRONGEST
        if self._last_ts is not None and ts < self._last_ts - HOUR_US // 2:
            self._hours += 1
        self._last_ts = ts
        stamp = self._hours * HOUR_US + ts
        last = self._last_stamp
        broken = last is not None and (stamp - last > self.max_gap_us or stamp < last)
        broken |= self._last_kind is not None and self._last_kind != (dual, mode)
        self._last_stamp, self._last_kind = stamp, (dual, mode)
        per = layout.blocks_per_group
        events: list[tuple[int, str]] = [(0, "break")] if broken else []
        previous = None if broken else self._last_shifted
        for g in range(layout.groups):
            shifted = azimuth[g * per] - self.cut
            if shifted < 0:
                shifted += 36000  # 36000 stays 36000 when cut is 0, as VeloView sees it
            if previous is not None and shifted < previous:
                events.append((g, "cut"))
            previous = shifted
        self._last_shifted = previous
        done: list[RawSweep] = []
        row = np.frombuffer(payload, np.uint8).reshape(1, PACKET_SIZE)
        self._emit(row, np.array([stamp], np.int64), [t_arrival], events, layout, mode, done)
        return done

    def push_many(
        self, payloads: Sequence[bytes], arrivals: Sequence[int | None] | None = None
    ) -> list[RawSweep]:
        """Take a batch of payloads in arrival order; return the sweeps they completed."""
        base = self.accepted + sum(self.rejected.values())
        if arrivals is None:
            arrivals = [None] * len(payloads)
        problems: list[tuple[int, str, str]] = []
        good: list[int] | None = None  # None: every payload has the right length
        if set(map(len, payloads)) - {PACKET_SIZE}:
            good = [i for i, p in enumerate(payloads) if len(p) == PACKET_SIZE]
            for i, p in enumerate(payloads):
                if len(p) != PACKET_SIZE:
                    problems.append(
                        (i, "bad_length", f"expected {PACKET_SIZE} bytes, got {len(p)}")
                    )
        done: list[RawSweep] = []
        if good is None or good:
            joined = b"".join(payloads if good is None else [payloads[i] for i in good])
            packets = np.frombuffer(joined, np.uint8).reshape(-1, PACKET_SIZE)
            ok, headers = self._check(packets, good, problems)
            if ok is not None:
                packets, headers = packets[ok], headers.rows(ok)
                where = range(len(payloads)) if good is None else good
                good = [g for g, k in zip(where, ok.tolist(), strict=True) if k]
            if len(packets):
                kept = arrivals if good is None else [arrivals[i] for i in good]
                done = self._assemble(packets, headers, list(kept))
        for i, reason, message in sorted(problems):
            self._reject(reason, f"packet {base + i}: {message}", base + i)
        return done

    def _check(
        self, packets: np.ndarray, where: list[int] | None, problems: list[tuple[int, str, str]]
    ) -> tuple[np.ndarray | None, _Headers]:
        """The batch's headers, and None when every packet is good, else the mask of
        the packets to keep (the others are added to ``problems``)."""
        from adapters.lidar._velodyne_kernel import check  # numba: imported on first use

        n = len(packets)
        codes, blocks = np.empty(n, np.int8), np.empty(n, np.int64)
        stamps, dual = np.empty(n, np.int64), np.empty(n, np.bool_)
        bad_count = check(packets, self._flags, self._used_blocks, MODE_OK, self._hdl64e, codes,
                          blocks, stamps, dual)  # fmt: skip
        words = packets.view("<u2")  # (P, 603): flags and azimuths as strided views
        headers = _Headers(words[:, 0:600:50], words[:, 1:600:50], stamps,
                                           packets[:, 1204], dual)  # fmt: skip
        if not bad_count:
            return None, headers
        bad = codes != 0
        for row in np.flatnonzero(bad).tolist():
            i = row if where is None else where[row]
            b, code = int(blocks[row]), int(codes[row])
            if code == 1:
                want = int(self._flags[int(dual[row]), b])
                problems.append((i, *_bad_flag(b, int(headers.flags[row, b]), want)))
            elif code == 2:
                problems.append((i, *_bad_azimuth(b, int(headers.azimuth[row, b]))))
            elif code == 3:
                problems.append((i, *_bad_timestamp(int(headers.ts[row]))))
            else:
                problems.append((i, *_bad_mode(int(headers.mode[row]))))
        return ~bad, headers

    def _assemble(self, packets: np.ndarray, headers: _Headers,
                  arrivals: list[int | None]) -> list[RawSweep]:  # fmt: skip
        n = len(packets)
        self.accepted += n
        if n == 1:
            self.product_ids[int(packets[0, 1205])] += 1
        else:
            counts = np.bincount(packets[:, 1205], minlength=256)
            products = np.flatnonzero(counts)
            self.product_ids.update(dict(zip(products.tolist(), counts[products].tolist(),
                                             strict=True)))  # fmt: skip
        azimuth = headers.azimuth
        ts = headers.ts.astype(np.int64)
        # Unwrap the hour: a stamp far below the previous one means the hour rolled over.
        previous = np.empty(n, np.int64)
        previous[0] = ts[0] if self._last_ts is None else self._last_ts
        previous[1:] = ts[:-1]
        hours = self._hours + np.cumsum(ts < previous - HOUR_US // 2)
        stamps = hours * HOUR_US + ts
        self._hours, self._last_ts = int(hours[-1]), int(ts[-1])
        mode = headers.mode.astype(np.int64)
        dual = headers.dual
        if self._hdl64e:
            mode = np.where(dual, RETURN_DUAL, RETURN_STRONGEST)
        self.dual_packets += int(dual.sum())
        # Breaks: a gap in time, time going back, or another return mode than the packet before.
        before = np.empty(n, np.int64)
        before[0] = stamps[0] if self._last_stamp is None else self._last_stamp
        before[1:] = stamps[:-1]
        step = stamps - before
        kind_change = np.zeros(n, bool)
        kind_change[1:] = mode[1:] != mode[:-1]
        if self._last_kind is not None:
            kind_change[0] = self._last_kind != (bool(dual[0]), int(mode[0]))
        breaks = (step > self.max_gap_us) | (step < 0) | kind_change
        self._last_stamp = int(stamps[-1])
        self._last_kind = (bool(dual[-1]), int(mode[-1]))
        done: list[RawSweep] = []
        # Runs of one return mode (nearly always the whole batch).
        starts = sorted({0, *(np.flatnonzero(mode[1:] != mode[:-1]) + 1).tolist()})
        for a, b in zip(starts, [*starts[1:], n], strict=True):
            layout = self._dual if dual[a] else self._single
            self._run(
                packets[a:b],
                stamps[a:b],
                azimuth[a:b],
                breaks[a:b],
                arrivals[a:b],
                layout,
                int(mode[a]),
                done,
            )
        return done

    def _run(self, packets: np.ndarray, stamps: np.ndarray, azimuth: np.ndarray,
             breaks: np.ndarray, arrivals: list[int | None], layout: PacketLayout,
             mode: int, done: list[RawSweep]) -> None:  # fmt: skip
        """Cut packets of one layout into sweeps, appending finished ones to ``done``."""
        per = layout.blocks_per_group
        groups = layout.groups
        shifted = azimuth[:, 0 : layout.used_blocks : per].reshape(-1).astype(np.int64)
        shifted -= self.cut
        shifted[shifted < 0] += 36000  # 36000 stays 36000 when cut is 0, as VeloView sees it
        previous = np.empty_like(shifted)
        previous[1:] = shifted[:-1]
        previous[0] = shifted[0] if self._last_shifted is None else self._last_shifted
        crossed = shifted < previous
        heads = np.flatnonzero(breaks) * groups
        crossed[heads] = False  # no crossing is looked for across a break
        self._last_shifted = int(shifted[-1])
        events = sorted(
            [(int(k), "cut") for k in np.flatnonzero(crossed)] + [(int(k), "break") for k in heads]
        )
        self._emit(packets, stamps, arrivals, events, layout, mode, done)

    def _emit(self, packets: np.ndarray, stamps: np.ndarray, arrivals: list[int | None],
              events: list[tuple[int, str]], layout: PacketLayout, mode: int,
              done: list[RawSweep]) -> None:  # fmt: skip
        """Append the run's columns to sweeps, ending one at each cut or break."""
        position = 0
        total = len(packets) * layout.groups
        for k, what in events:
            self._append(packets, stamps, arrivals, position, k, layout, mode, done)
            current = self._current
            if what == "break":
                if current is not None and current.rows:
                    current.partial = True
                    done.append(current.sweep())
                self._current = _Builder(layout, mode, partial=True)
            else:
                if current is not None and current.rows:
                    done.append(current.sweep())
                self._current = _Builder(layout, mode, partial=False)
            position = k
        self._append(packets, stamps, arrivals, position, total, layout, mode, done)

    def _append(self, packets: np.ndarray, stamps: np.ndarray, arrivals: list[int | None],
                start: int, stop: int, layout: PacketLayout, mode: int,
                done: list[RawSweep]) -> None:  # fmt: skip
        """Add columns ``[start, stop)`` of the run to the sweep in progress."""
        if stop <= start:
            return
        groups, per = layout.groups, layout.blocks_per_group
        full = groups * per  # the blocks of a whole packet (8 in a VLS-128 dual-return one)
        first_row, last_row = start // groups, (stop - 1) // groups
        current = self._current
        if current is None or current.layout is not layout or current.mode != mode:
            if current is not None and current.rows:
                current.partial = True
                done.append(current.sweep())
            current = self._current = _Builder(layout, mode, partial=True)
        if not current.rows:
            current.first_block = (start % groups) * per
        elif current.end_block < full:  # this packet is already in the sweep (a cut split it)
            first_row += 1
        row = first_row
        while row <= last_row:
            room = self.max_sweep_packets - current.rows
            take = min(last_row + 1 - row, room)
            current.chunks.append((packets[row : row + take], stamps[row : row + take]))
            current.rows += take
            row += take
            current.t_arrival = arrivals[row - 1]
            current.end_block = ((stop - 1) % groups + 1) * per if row > last_row else full
            if current.rows >= self.max_sweep_packets:
                current.end_block = full if row <= last_row else current.end_block
                current.partial = True
                done.append(current.sweep())
                self.long_sweeps += 1
                self.last_error = (
                    f"a sweep reached {self.max_sweep_packets} packets without the azimuth "
                    "crossing the cut angle; emitted as partial"
                )
                if self._on_reject is not None:
                    self._on_reject("sweep_too_long", self.last_error)
                current = self._current = _Builder(layout, mode, partial=True)
                self._last_shifted = None

    def flush(self) -> list[RawSweep]:
        """End of stream: the sweep in progress, marked partial (if it has packets)."""
        current, self._current = self._current, None
        self._last_shifted = None
        if current is None or not current.rows:
            return []
        current.partial = True
        return [current.sweep()]

    def _reject(self, reason: str, message: str, index: int) -> None:
        self.rejected[reason] += 1
        self.last_error = message
        self.last_index = index
        if self._on_reject is not None:
            self._on_reject(reason, message)
