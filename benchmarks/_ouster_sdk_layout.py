"""The Ouster packet layout as OusterSource learnt it from ouster-sdk before it had its own
(adapters/lidar/_ouster_fast.py up to commit eb95688^): markers written into a blank packet
with ``PacketFormat``'s setters, found again, then checked against its readers on a packet
of random bytes. Kept only for ``bench_lidar.ouster_setup_rows``, the set-up cost it had
against our written-down layout (adapters/lidar/_ouster_layout.py)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

FIELDS = ("RANGE", "SIGNAL", "REFLECTIVITY", "NEAR_IR")
_WORD = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _find(blank: bytes, marked: bytes) -> int:
    """The first byte offset where two buffers differ (-1: none)."""
    a = np.frombuffer(blank, np.uint8)
    b = np.frombuffer(marked, np.uint8)
    diff = np.flatnonzero(a != b)
    return int(diff[0]) if len(diff) else -1


class SdkLearntLayout:
    """Where each field of a lidar packet is, learnt from ouster-sdk (see the module doc)."""

    def __init__(self, info: Any) -> None:
        from ouster.sdk import core

        self._core = core
        self.format = pf = core.PacketFormat(info)
        self.size = int(pf.lidar_packet_size)
        self.beams = int(info.format.pixels_per_column)
        self.columns = int(info.format.columns_per_packet)
        self.col_size = int(pf.col_size)
        self.first_col = int(pf.packet_header_size)
        self.fields: dict[str, tuple[int, int, np.dtype[Any], int]] = {}
        """name -> (offset in a column of pixel 0, pixel stride, word type, value mask)."""
        self.fields_stride: dict[int, int] = {}
        self.stamp_at = self.id_at = self.status_at = self.frame_id_at = 0
        """Offsets in a column of its timestamp, measurement id, status; of the frame id."""
        self.status_word: np.dtype[Any] = np.dtype("<u4")
        self._header: tuple[Any, int, int, int] | None = None
        self.usable = False
        try:
            self._learn(pf)
            self.usable = self._agrees(pf)
        except (ValueError, RuntimeError, TypeError, KeyError, OverflowError):
            self.usable = False

    def _packet(self) -> Any:
        packet = self._core.LidarPacket(self.format)
        packet.buf[:] = 0
        return packet

    def _learn(self, pf: Any) -> None:
        blank = bytes(self._packet().buf)
        h, c = self.beams, self.columns
        for name in FIELDS:
            if name not in set(pf.fields):
                continue
            bits = next(b for b in sorted(_WORD) if b >= int(pf.field_bitness(name)))
            word = np.dtype(_WORD[bits]).newbyteorder("<")
            mask = int(pf.field_value_mask(name))
            offsets = []
            for row in (0, 1):
                packet = self._packet()
                img = np.zeros((h, c), word)
                img[row, 0] = mask & 0x5A5A5A5A5A5A5A5A
                pf.set_field(packet, name, img)
                offsets.append(_find(blank, bytes(packet.buf)))
            where, stride = offsets[0] - self.first_col, offsets[1] - offsets[0]
            if min(offsets) < 0 or where < 0:
                raise ValueError(f"field {name} not found")
            self.fields[name] = (where, stride, word, mask)
            self.fields_stride[where] = stride
        found = []
        for setter in ("set_col_timestamp", "set_col_measurement_id", "set_col_status"):
            packet = self._packet()
            getattr(pf, setter)(packet, 0, 0x5A)
            at = _find(blank, bytes(packet.buf))
            if at < 0:
                raise ValueError(f"{setter} writes nothing")
            found.append(at - self.first_col)
        self.stamp_at, self.id_at, self.status_at = found
        packet = self._packet()
        pf.set_frame_id(packet, 0x5A)
        self.frame_id_at = _find(blank, bytes(packet.buf))
        # the status word is 32 bits at a column's end (LEGACY) or 16 in its header
        self.status_word = np.dtype("<u2") if self.status_at < 12 else np.dtype("<u4")

    def _agrees(self, pf: Any) -> bool:
        """Whether numpy reads a random packet as ouster-sdk does."""
        rng = np.random.default_rng(7)
        buf = rng.integers(0, 256, self.size, dtype=np.uint8)
        data = buf.tobytes()
        for name in self.fields:
            want = np.asarray(pf.packet_field(name, buf))  # (beams, columns)
            if not np.array_equal(self.field(data, name).T, want):
                return False
        core = self._core
        checks = (
            (core.ColHeader.TIMESTAMP, self.stamps(data)),
            (core.ColHeader.MEASUREMENT_ID, self.ids(data)),
            (core.ColHeader.STATUS, self.status(data)),
        )
        for header, got in checks:
            if not np.array_equal(np.asarray(pf.packet_header(header, buf)), got):
                return False
        return self.frame_id(data) == int(pf.frame_id(buf))

    # -- reading: zero-copy strided views of packets' bytes, (packets * columns, ...) ---

    def _view(self, data: bytes, at: int, word: np.dtype[Any], beams: bool) -> np.ndarray:
        view = self.packed(data, at, word, beams)
        return view.reshape(view.shape[0] * self.columns, *view.shape[2:])

    def packed(self, data: bytes, at: int, word: np.dtype[Any], beams: bool) -> np.ndarray:
        """The ``(packets, columns[, beams])`` view of the words at ``at`` in each column
        (a column header word, or with ``beams`` a pixel field's): no copy, unmasked."""
        packets = len(data) // self.size
        shape: tuple[int, ...] = (packets, self.columns)
        strides: tuple[int, ...] = (self.size, self.col_size)
        if beams:
            shape, strides = (*shape, self.beams), (*strides, self.fields_stride[at])
        return np.ndarray(shape, word, buffer=data, offset=self.first_col + at, strides=strides)

    def stamps(self, data: bytes) -> np.ndarray:
        return self._view(data, self.stamp_at, np.dtype("<u8"), False)

    def ids(self, data: bytes) -> np.ndarray:
        return self._view(data, self.id_at, np.dtype("<u2"), False)

    def status(self, data: bytes) -> np.ndarray:
        return self._view(data, self.status_at, self.status_word, False)

    def field(self, data: bytes, name: str, columns: np.ndarray | None = None) -> np.ndarray:
        """``(n_columns, beams)`` values of a pixel field (of ``columns`` only, if given)."""
        where, _stride, word, mask = self.fields[name]
        values = self._view(data, where, word, True)
        if columns is not None:
            values = values[columns]
        return values & word.type(mask) if mask != (1 << (8 * word.itemsize)) - 1 else values

    def header(self, payload: bytes) -> tuple[int, int, int]:
        """``(first column's id, last column's id, frame id)`` of a packet of the right size."""
        if self._header is None:
            at = self.first_col + self.id_at
            last = at + (self.columns - 1) * self.col_size
            self._header = (struct.Struct("<H").unpack_from, at, last, self.frame_id_at)
        unpack, first, last, frame = self._header
        return unpack(payload, first)[0], unpack(payload, last)[0], unpack(payload, frame)[0]

    def frame_id(self, payload: bytes) -> int:
        return int(struct.unpack_from("<H", payload, self.frame_id_at)[0])
