"""Hesai packets in, checked arrays out: lengths, signatures, return modes, CRCs, stamps.

:func:`prepare` takes a batch of payloads of one model and keeps the ones that
can be decoded; each other one is returned with its reason (``bad_length``,
``bad_header``, ``bad_return_mode``, ``bad_crc``, ``bad_azimuth``) and a one-line
message, for the source's ledger. The packet stamp is nebula's
``get_timestamp_ns``: the tail's date and time (UTC) plus its microseconds.
The CRC is CRC-32/MPEG-2 (checked against real QT128 packets: body and tail).

Also here: the packets of a bag message, ``pandar_msgs/msg/PandarScan`` (each
packet a fixed 1500-byte array and its ``size``) and
``nebula_msgs/msg/NebulaPackets`` (each a byte sequence), read straight from
the CDR bytes (:func:`bag_packets`): neither type is in a ROS type store.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from adapters.lidar._hesai_models import RETURN_MODES, HesaiModel, point_time_offset

PACKET_TYPES = ("pandar_msgs/msg/PandarScan", "nebula_msgs/msg/NebulaPackets")
"""Bag message types holding Hesai packets (ROS 1 spellings without ``/msg/`` too)."""


@functools.cache
def _crc_table() -> npt.NDArray[np.uint32]:
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
            c &= 0xFFFFFFFF
        table[i] = c
    return table


def crc32_mpeg2(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    """CRC-32/MPEG-2 of each row of ``rows`` (P, n), byte column by byte column."""
    table = _crc_table()
    crc = np.full(len(rows), 0xFFFFFFFF, np.uint32)
    for col in range(rows.shape[1]):
        crc = (crc << np.uint32(8)) ^ table[(crc >> np.uint32(24)) ^ rows[:, col]]
    return crc


def _days_from_civil(y: Any, m: Any, d: Any) -> Any:
    """Days since 1970-01-01 of a proleptic Gregorian date (vectorised, any month 1..12)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@dataclass
class Batch:
    """The decodable packets of a batch, as arrays (P rows)."""

    raw: npt.NDArray[np.uint8]
    """(P, model.size) bytes."""
    index: npt.NDArray[np.int64]
    """Each row's position in the batch given to :func:`prepare`."""
    stamps: npt.NDArray[np.int64]
    """Packet stamp, ns since the Unix epoch (UTC)."""
    returns: npt.NDArray[np.int64]
    """Returns per firing (1, 2, 3)."""
    modes: npt.NDArray[np.uint8]
    dis_unit: npt.NDArray[np.float64]
    time_key: npt.NDArray[np.int64]
    """What else the firing times depend on (see point_time_offset)."""


def _u16(raw: npt.NDArray[np.uint8], at: int) -> npt.NDArray[np.int64]:
    return raw[:, at].astype(np.int64) | (raw[:, at + 1].astype(np.int64) << 8)


def _u32(raw: npt.NDArray[np.uint8], at: int) -> npt.NDArray[np.int64]:
    return _u16(raw, at) | (_u16(raw, at + 2) << 16)


def block_azimuths(model: HesaiModel, raw: npt.NDArray[np.uint8], block: int) -> Any:
    """Each row's azimuth of ``block`` in the model's counts (1/100° or 1/25600°)."""
    at = model.block_offset(block) + model.azimuth_at
    az = _u16(raw, at)
    if model.fine_azimuth:
        az = (az << 8) | raw[:, at + 2].astype(np.int64)
    return az


def prepare(
    model: HesaiModel,
    payloads: list[bytes],
    *,
    check_crc: bool = True,
    fields: Callable[[Any], Any] | None = None,
) -> tuple[Batch, list[tuple[int, str, str]]]:
    """Check ``payloads`` as packets of ``model``; ``(kept batch, [(index, reason, message)])``.

    ``fields`` (AT128): block azimuths in, each one's mirror field out (-1: none);
    a packet with a block in no field of the correction is ``bad_azimuth``."""
    rejected: list[tuple[int, str, str]] = []
    size = model.size
    keep = []
    for i, p in enumerate(payloads):
        if len(p) < size:
            rejected.append(
                (i, "bad_length", f"expected at least {size} bytes ({model.name}), got {len(p)}")
            )
        else:
            keep.append(i)
    buf = b"".join(payloads[i][:size] for i in keep)
    raw = np.frombuffer(buf, np.uint8).reshape(len(keep), size)
    index = np.asarray(keep, np.int64)
    ok = np.ones(len(keep), bool)

    def reject(mask: Any, reason: str, message: Any) -> None:
        for row in np.flatnonzero(mask & ok):
            rejected.append((int(index[row]), reason, message(row)))
        ok[mask] = False

    reject(*_bad_headers(model, raw))
    modes = raw[:, model.tail + model.t_return_mode]
    known = np.zeros(256, bool)
    nret = np.zeros(256, np.int64)
    for code, (_name, n) in RETURN_MODES.items():
        if n <= model.max_returns:
            known[code], nret[code] = True, n
    reject(~known[modes], "bad_return_mode", lambda r: f"return mode 0x{modes[r]:02x} unknown")
    if check_crc:
        for span in (model.body_crc, model.tail_crc):
            if span is None or not ok.any():
                continue
            first, end, where = span
            got = crc32_mpeg2(raw[:, first:end])
            want = _u32(raw, where).astype(np.uint32)
            reject(
                got != want,
                "bad_crc",
                lambda r, f=first, e=end: f"CRC of bytes {f}..{e} does not match",
            )
    unit = model.angle_unit
    for b in range(model.blocks):
        az = block_azimuths(model, raw, b)
        reject(
            az >= 360 * unit,
            "bad_azimuth",
            lambda r, az=az, b=b: f"block {b} azimuth {az[r] / unit:.2f}° is not below 360°",
        )
        if fields is not None:
            reject(
                fields(np.minimum(az, 360 * unit - 1)) < 0,
                "bad_azimuth",
                lambda r, az=az, b=b: (
                    f"block {b} azimuth {az[r] / unit:.4f}° is in no mirror field of the correction"
                ),
            )
    raw, index, modes = raw[ok], index[ok], modes[ok]
    if model.fixed_dis_unit is not None:
        dis = np.full(len(raw), model.fixed_dis_unit)
    else:
        dis = raw[:, 5 if model.header == 8 else 9] / 1000.0
    stamps = _stamps(model, raw).astype(np.int64)
    batch = Batch(raw, index, stamps, nret[modes], modes, dis, _timing_key(model, raw))
    rejected.sort()
    return batch, rejected


def _bad_headers(model: HesaiModel, raw: Any) -> tuple[Any, str, Callable[[int], str]]:
    """The packets (rows of ``raw``) whose header or block starts are not ``model``'s:
    ``(mask, reason, message of a row)``."""
    if model.sob:
        sob = np.zeros(len(raw), bool)
        for b in range(model.blocks):
            at = model.block_offset(b)
            sob |= (raw[:, at] != 0xFF) | (raw[:, at + 1] != 0xEE)
        return sob, "bad_header", lambda r: "a block does not start FF EE (Pandar40P)"
    pre = (raw[:, 0] != 0xEE) | (raw[:, 1] != 0xFF)
    if model.header == 8:
        pre |= (raw[:, 2] != model.channels) | (raw[:, 3] != model.blocks)
    else:
        pre |= (raw[:, 6] != model.channels) | (raw[:, 7] != model.blocks)
    return (
        pre,
        "bad_header",
        lambda r: f"header {raw[r, :12].tobytes().hex(' ')} is not {model.name}'s",
    )


def _stamps(model: HesaiModel, raw: Any) -> Any:
    """Each packet's stamp (ns since the Unix epoch) from its tail's date and time."""
    t = model.tail + model.t_date
    if model.epoch_seconds:  # a zero byte, then 5 big-endian bytes of seconds
        secs = np.zeros(len(raw), np.int64)
        for i in range(1, 6):
            secs = (secs << 8) | raw[:, t + i].astype(np.int64)
    else:
        year = raw[:, t].astype(np.int64) + model.year_base
        m, d = raw[:, t + 1].astype(np.int64), raw[:, t + 2].astype(np.int64)
        hms = raw[:, t + 3 : t + 6].astype(np.int64)
        secs = _days_from_civil(year, m, d) * 86400 + hms[:, 0] * 3600 + hms[:, 1] * 60 + hms[:, 2]
    return secs * 1_000_000_000 + _u32(raw, model.tail + model.t_timestamp) * 1000


def _timing_key(model: HesaiModel, raw: Any) -> Any:
    """Each packet's firing-time table key: mode flag, operational state, azimuth states."""
    key = np.zeros(len(raw), np.int64)
    if model.t_mode_flag is not None:
        key |= raw[:, model.tail + model.t_mode_flag] & 1
    if model.t_operational_state is not None:
        key |= raw[:, model.tail + model.t_operational_state].astype(np.int64) << 8
    if model.t_azimuth_state is not None:
        state = _u16(raw, model.tail + model.t_azimuth_state)
        for b in range(model.blocks):
            key |= ((state >> (14 - 2 * b)) & 0b11) << (16 + 2 * b)
    return key


@functools.cache
def time_table(model: HesaiModel, n_ret: int, key: int) -> npt.NDArray[np.int32]:
    """(blocks, channels) firing-time offsets (ns from the packet stamp)."""
    out = np.empty((model.blocks, model.channels), np.int32)
    for b in range(model.blocks):
        for c in range(model.channels):
            out[b, c] = point_time_offset(model, b, c, n_ret, key)
    return out


# -- bags --------------------------------------------------------------------------------


class BadMessage(ValueError):
    """A bag message whose bytes do not hold what its type says."""


def bag_packets(raw: bytes | memoryview, msgtype: str, cdr: bool = True) -> list[bytes]:
    """The packets of one ``PandarScan`` / ``NebulaPackets`` message (CDR or ROS 1 bytes)."""
    data = bytes(raw)
    pandar = "pandar" in msgtype.lower()
    pos = 4 if cdr else 0  # CDR: 4-byte encapsulation header; alignment is from after it

    def align(n: int) -> None:
        nonlocal pos
        if cdr:
            rel = pos - 4
            pos += (-rel) % n

    def take(fmt: str) -> Any:
        nonlocal pos
        width = struct.calcsize(fmt)
        if pos + width > len(data):
            raise BadMessage(f"message ends at byte {len(data)}, {fmt!r} needed at byte {pos}")
        value = struct.unpack_from("<" + fmt, data, pos)
        pos += width
        return value[0] if len(value) == 1 else value

    try:
        if not cdr:
            take("I")  # ROS 1 Header.seq
        take("ii")  # stamp
        n = take("I")
        if n > len(data):
            raise BadMessage(f"frame_id length {n} is larger than the message")
        pos += n
        align(4)
        count = take("I")
        if count > len(data) // 8:
            raise BadMessage(f"{count} packets cannot fit in {len(data)} bytes")
        packets = []
        for _ in range(count):
            align(4)
            take("ii")
            if pandar:
                if pos + 1500 > len(data):
                    raise BadMessage(f"packet data runs past the message end ({len(data)} bytes)")
                body = data[pos : pos + 1500]
                pos += 1500
                align(4)
                size = take("I")
                if size > 1500:
                    raise BadMessage(f"packet size {size} is larger than the 1500-byte array")
                packets.append(body[:size])
            else:
                size = take("I")
                if pos + size > len(data):
                    raise BadMessage(f"packet of {size} bytes runs past the message end")
                packets.append(data[pos : pos + size])
                pos += size
    except struct.error as err:  # pragma: no cover - take() checks sizes first
        raise BadMessage(str(err)) from err
    return packets
