"""Signals of a database message decoded for many frames at once, with numpy.

Theory of operation. cantools describes each signal by its start bit, length,
byte order, signedness, float flag, scale and offset, choices and (for a
multiplexed message) the multiplexer values it is present under. A
:class:`MessagePlan` turns that description into a few integer operations on
a ``(n, 64)`` uint8 array of payloads: each signal's bytes are gathered into
one unsigned 64-bit word per frame (at most 8 bytes: a signal that straddles
9 bytes, an unaligned 64-bit one, is decoded by cantools frame by frame), the
word is shifted and masked, sign-extended or reinterpreted as IEEE float, and
scaled. The result equals ``cantools``' ``decode_message(...,
decode_choices=False)`` for every frame (a hypothesis property in the tests
checks it); a column is ``int64`` (``uint64`` for an unsigned 64-bit raw
value) when cantools' result is an integer, else ``float64``. A signal absent
from a frame (another multiplexer value) is NaN in a float column: the columns
of multiplexed signals are always float64.

Bit numbering: a little-endian (Intel) signal's ``start`` is its least
significant bit counted from bit 0 of byte 0 upwards; a big-endian (Motorola)
signal's ``start`` is its most significant bit in DBC's sawtooth numbering,
which is ``8 * (start // 8) + 7 - start % 8`` counted from the most
significant bit of byte 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_PAYLOAD = 64
"""Bytes of a CAN FD payload, the widest a frame holds."""


@dataclass(frozen=True)
class SignalPlan:
    """How to pull one signal out of a payload array."""

    name: str
    lo: int  # first byte
    nbytes: int  # bytes gathered into the word (1..8; 0: cantools decodes it)
    shift: int  # right shift of the gathered word
    length: int
    little: bool
    signed: bool
    is_float: bool
    scale: float | int
    offset: float | int
    integral: bool  # cantools returns an int (scale and offset integral, not float)
    mux: str | None  # the multiplexer signal it depends on
    mux_ids: tuple[int, ...]
    dtype: np.dtype[Any]


class MessagePlan:
    """The vectorised decoder of one cantools message (its signals' columns)."""

    def __init__(self, message: Any) -> None:
        self.message = message
        self.length = int(message.length)
        # cantools decodes into a dict: of two signals with one name, the last one stays
        by_name = {s.name: _plan(s) for s in message.signals}
        self.signals = list(by_name.values())
        muxed = any(p.mux is not None for p in self.signals)
        if muxed:  # absent signals are NaN
            self.signals = [
                _replace_dtype(p, np.dtype(np.float64)) if p.mux is not None else p
                for p in self.signals
            ]
        self.dtype = np.dtype([(p.name, p.dtype) for p in self.signals])

    def decode(self, data: np.ndarray) -> np.ndarray:
        """The signals of ``data`` (``(n, 64)`` uint8, each row at least :attr:`length`
        bytes of real payload, zero-padded) as a structured array of ``n`` rows."""
        n = len(data)
        out = np.zeros(n, self.dtype)
        raws: dict[str, np.ndarray] = {}
        for p in self.signals:
            if p.nbytes == 0:
                out[p.name] = [self._one(bytes(row[: self.length]), p.name) for row in data]
                continue
            raw = _raw(data, p)
            raws[p.name] = raw
            out[p.name] = _scaled(raw, p)
        for p in self.signals:
            if p.mux is not None:
                present = self._present(p, raws, n)
                out[p.name][~present] = np.nan
        return out

    def _present(self, p: SignalPlan, raws: dict[str, np.ndarray], n: int) -> np.ndarray:
        ok = np.ones(n, bool)
        while p.mux is not None:
            parent = next(s for s in self.signals if s.name == p.mux)
            ok &= np.isin(raws[parent.name], np.array(p.mux_ids, dtype=raws[parent.name].dtype))
            p = parent
        return ok

    def _one(self, payload: bytes, name: str) -> Any:
        decoded = self.message.decode(payload, decode_choices=False)
        return decoded.get(name, np.nan)


def _plan(signal: Any) -> SignalPlan:
    length = int(signal.length)
    little = signal.byte_order == "little_endian"
    if little:
        first, last = signal.start, signal.start + length - 1  # LSB-first bit indices
        lo, hi = first // 8, last // 8
        shift = first - 8 * lo
    else:
        msb = 8 * (signal.start // 8) + 7 - signal.start % 8  # MSB-first bit index
        lo, hi = msb // 8, (msb + length - 1) // 8
        shift = 8 * (hi - lo + 1) - (msb - 8 * lo) - length
    nbytes = hi - lo + 1
    if nbytes > 8 or hi >= MAX_PAYLOAD:
        nbytes = 0
    scale, offset = signal.scale, signal.offset
    is_float = bool(signal.is_float)
    integral = (
        not is_float
        and float(scale).is_integer()
        and float(offset).is_integer()
        and isinstance(scale, int)
        and isinstance(offset, int)
    )
    dtype: np.dtype[Any]
    if integral and not signal.is_signed and length == 64 and scale >= 0 and offset >= 0:
        dtype = np.dtype(np.uint64)
    elif integral:
        dtype = np.dtype(np.int64)
    else:
        dtype = np.dtype(np.float64)
    return SignalPlan(
        name=signal.name,
        lo=lo,
        nbytes=nbytes,
        shift=shift,
        length=length,
        little=little,
        signed=bool(signal.is_signed),
        is_float=is_float,
        scale=scale,
        offset=offset,
        integral=integral,
        mux=signal.multiplexer_signal,
        mux_ids=tuple(signal.multiplexer_ids or ()),
        dtype=dtype,
    )


def _replace_dtype(p: SignalPlan, dtype: np.dtype[Any]) -> SignalPlan:
    from dataclasses import replace

    return replace(p, dtype=dtype)


def _raw(data: np.ndarray, p: SignalPlan) -> np.ndarray:
    """The raw (unscaled) value of ``p`` in every row: uint64, or int64 when signed."""
    word = np.zeros(len(data), np.uint64)
    for k in range(p.nbytes):
        byte = data[:, p.lo + k].astype(np.uint64)
        at = 8 * k if p.little else 8 * (p.nbytes - 1 - k)
        word |= byte << np.uint64(at)
    word >>= np.uint64(p.shift)
    if p.length < 64:
        word &= np.uint64((1 << p.length) - 1)
    if p.is_float:
        return word
    if p.signed:
        if p.length < 64:  # two's complement in uint64 arithmetic, which wraps
            sign = np.uint64(1 << (p.length - 1))
            word = (word ^ sign) - sign
        return word.view(np.int64)
    return word


def _scaled(raw: np.ndarray, p: SignalPlan) -> np.ndarray:
    if p.is_float:
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf payloads are data
            if p.length == 32:
                value: np.ndarray = raw.astype(np.uint32).view(np.float32).astype(np.float64)
            else:
                value = raw.view(np.float64)
            return value * p.scale + p.offset
    if p.integral:
        if p.dtype == np.uint64:
            return raw * np.uint64(p.scale) + np.uint64(p.offset)
        return raw.astype(np.int64) * np.int64(p.scale) + np.int64(p.offset)
    return raw.astype(np.float64) * float(p.scale) + float(p.offset)
