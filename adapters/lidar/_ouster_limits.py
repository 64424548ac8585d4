"""What an Ouster metadata JSON may ask for, checked before anything is sized by it.

A scan's arrays, the beam tables and the packet layout are all sized by the
metadata: ``columns_per_frame x pixels_per_column`` points, ``columns_per_packet``
columns a packet. A parser that takes any number there makes any size (1.4 kB of
JSON asked ouster-sdk for 12 GiB of beam tables with ``columns_per_frame =
16777216``; a ``columns_per_packet`` of 0 ended in an ``IndexError``; an unknown
lidar mode in ``ValueError: default_data_format``). Before the parser
(:mod:`adapters.lidar._ouster_meta`) sizes anything, :func:`stated_mode_problem`
and :func:`stated_bounds_problem` check the JSON's lidar mode and data-format
numbers; :func:`metadata_problem` then checks the parsed sensor info against what
Ouster sensors are:

* ``columns_per_frame`` one of the lidar modes' widths, :data:`MODE_COLUMNS`, and
  the ``lidar_mode``'s own width when it names one (``1024x10``: 1024);
* ``pixels_per_column`` (beams) from 1 to :data:`MAX_BEAMS`;
* ``columns_per_packet`` from 1 to :data:`MAX_COLUMNS_PER_PACKET`, dividing the frame;
* ``column_window`` inside the frame, ``pixel_shift_by_row`` one shift per beam;
* each number in the JSON's data format a 32-bit unsigned integer (ouster-sdk wraps
  or drops numbers it cannot hold: ``2**40`` columns became 0);
* the lidar packet the profile makes fits a UDP datagram (:data:`MAX_PACKET`).

So the largest scan is 4096 x 256 points. The packets themselves are then
checked against this layout one by one (a wrong size is ``bad_length``; when
the first packets all misfit the source names the mismatch).
"""

from __future__ import annotations

import re
from typing import Any

MODE_COLUMNS = (512, 1024, 2048, 4096)
"""``columns_per_frame`` of Ouster's lidar modes (512x10 .. 4096x5)."""
MAX_BEAMS = 256
"""``pixels_per_column``: Ouster sensors have 16, 32, 64 or 128."""
MAX_COLUMNS_PER_PACKET = 64
"""``columns_per_packet``: Ouster sensors send 16 (8 on some firmware)."""
MAX_PACKET = 65507
"""The largest UDP payload over IPv4: a lidar packet is one datagram."""

_MODE = re.compile(r"^(\d+)x(\d+)$")
_DATA_FORMAT_KEYS = ("data_format", "lidar_data_format")  # legacy, current


def metadata_problem(info: Any) -> str | None:
    """What is out of bounds in a parsed metadata ``info`` (an
    :class:`~adapters.lidar._ouster_meta.OusterInfo`), in one phrase; ``None`` when it
    describes a scan an Ouster sensor can send."""
    fmt = info.format
    columns, beams = int(fmt.columns_per_frame), int(fmt.pixels_per_column)
    per_packet = int(fmt.columns_per_packet)
    if str(fmt.udp_profile_lidar) == "OFF":
        return (
            "its lidar stream is off (config_params udp_port_lidar 0 or udp_dest empty): "
            "no lidar packet fits it"
        )
    if columns not in MODE_COLUMNS:
        widths = ", ".join(map(str, MODE_COLUMNS))
        return f"columns_per_frame = {columns} is not the width of an Ouster lidar mode ({widths})"
    mode = _MODE.match(str(info.config.lidar_mode or ""))
    if mode is not None and int(mode.group(1)) != columns:
        return (
            f"lidar_mode {info.config.lidar_mode} has {mode.group(1)} columns, the data "
            f"format's columns_per_frame says {columns}"
        )
    if not 1 <= beams <= MAX_BEAMS:
        return f"pixels_per_column = {beams} is outside 1..{MAX_BEAMS}"
    if not 1 <= per_packet <= MAX_COLUMNS_PER_PACKET or columns % per_packet:
        return (
            f"columns_per_packet = {per_packet} is not from 1 to {MAX_COLUMNS_PER_PACKET} "
            f"dividing the {columns} columns of a frame"
        )
    start, stop = (int(x) for x in fmt.column_window)
    if not 0 <= start < columns or not 0 <= stop < columns:
        return f"column_window [{start}, {stop}] is not inside the {columns} columns of a frame"
    shifts = list(fmt.pixel_shift_by_row)
    if len(shifts) != beams or any(abs(int(s)) >= columns for s in shifts):
        return (
            f"pixel_shift_by_row has {len(shifts)} shifts (of at most {columns - 1} columns "
            f"each expected, one per beam: {beams})"
        )
    return _packet_problem(info)


MODES = ("512x10", "512x20", "1024x10", "1024x20", "2048x10", "4096x5")
"""Ouster's lidar modes (``config_params.lidar_mode``, or ``lidar_mode`` in legacy files)."""


def stated_mode_problem(doc: Any) -> str | None:
    """Why the JSON's ``lidar_mode`` (``config_params``, or the legacy top level) is none
    of :data:`MODES` (``None``: it is, or is absent)."""
    if not isinstance(doc, dict):
        return None
    params = doc.get("config_params")
    mode = params.get("lidar_mode") if isinstance(params, dict) else doc.get("lidar_mode")
    if mode is None or mode in MODES:
        return None
    return f"lidar_mode {str(mode)[:40]!r} is not an Ouster lidar mode ({', '.join(MODES)})"


_UINT32 = 1 << 32


def stated_bounds_problem(doc: Any) -> str | None:
    """Why a number of the JSON's data format (``lidar_data_format``, or the legacy
    ``data_format``) cannot be an Ouster sensor's, before anything is sized by it."""
    for key in _DATA_FORMAT_KEYS:
        part = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(part, dict):
            continue
        for name in ("columns_per_frame", "columns_per_packet", "pixels_per_column", "fps"):
            value = part.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < _UINT32:
                shown = f"an integer of {len(str(abs(value)))} digits" if _long(value) else value
                return f"data format {name} = {shown} is out of range"
        beams = part.get("pixels_per_column")
        if isinstance(beams, int) and not 1 <= beams <= MAX_BEAMS:
            return f"pixels_per_column = {beams} is outside 1..{MAX_BEAMS}"
    return None


def _long(value: Any) -> bool:
    return isinstance(value, int) and abs(value) >= 10**15


def _packet_problem(info: Any) -> str | None:
    from adapters.lidar._ouster_layout import lidar_packet_size

    size = lidar_packet_size(info.format)
    if size > MAX_PACKET:
        return f"its lidar packets would be {size} bytes, over a UDP datagram's {MAX_PACKET}"
    return None
