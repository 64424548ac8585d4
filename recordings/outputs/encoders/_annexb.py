"""Recorded video packets as ``CompressedVideo`` wants them: Annex B, parameter sets on key frames.

``foxglove_msgs/CompressedVideo`` (and ``foxglove.CompressedVideo``) carry
H.264/H.265 as an Annex B stream (start codes) whose key frames hold their
parameter sets. The encoders of :mod:`recordings.hfr.video` write exactly that,
so their packets go out unchanged. Packets copied from an MP4/MKV file are
length-prefixed (AVCC/HVCC) with the parameter sets in the track's
``extradata``: :class:`VideoTrack` rewrites their framing and puts the
parameter sets in front of each key frame; the NAL units themselves are not
touched. Every other codec (VP9, AV1, FFV1) goes out as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recordings.hfr.video import META_KEY
from recordings.outputs.encoders._kinds import codec_format

START = b"\x00\x00\x00\x01"


def _avcc_sets(extradata: bytes) -> tuple[int, list[bytes]]:
    """``(length size, [SPS..., PPS...])`` of an ``avcC`` record."""
    size = (extradata[4] & 3) + 1
    sets, i = [], 6
    n = extradata[5] & 0x1F
    for _ in range(n):
        ln = int.from_bytes(extradata[i : i + 2], "big")
        sets.append(extradata[i + 2 : i + 2 + ln])
        i += 2 + ln
    n, i = extradata[i], i + 1
    for _ in range(n):
        ln = int.from_bytes(extradata[i : i + 2], "big")
        sets.append(extradata[i + 2 : i + 2 + ln])
        i += 2 + ln
    return size, sets


def _hvcc_sets(extradata: bytes) -> tuple[int, list[bytes]]:
    """``(length size, [VPS, SPS, PPS...])`` of an ``hvcC`` record."""
    size = (extradata[21] & 3) + 1
    sets, i = [], 23
    for _ in range(extradata[22]):
        count = int.from_bytes(extradata[i + 1 : i + 3], "big")
        i += 3
        for _ in range(count):
            ln = int.from_bytes(extradata[i : i + 2], "big")
            sets.append(extradata[i + 2 : i + 2 + ln])
            i += 2 + ln
    return size, sets


def _split(data: bytes, size: int) -> list[bytes]:
    out, i = [], 0
    while i + size <= len(data):
        n = int.from_bytes(data[i : i + size], "big")
        out.append(data[i + size : i + size + n])
        i += size + n
    return out


class VideoTrack:
    """One video sensor's codec, followed from the parameters on its key packets."""

    def __init__(self) -> None:
        self.codec: str | None = None
        self._size = 0
        self._sets: list[bytes] = []
        self._last_log = -(2**63)

    def log_time(self, wanted: int) -> int:
        """A log time for the next packet that keeps the packets in decode order.

        A packet's log time is its frame's arrival; with B-frames those go in
        presentation order, and an MCAP reader (or Foxglove) replaying by log
        time would hand the decoder packets out of order. So each packet gets
        at least the previous packet's log time plus 1 ns.
        """
        self._last_log = max(wanted, self._last_log + 1)
        return self._last_log

    def update(self, meta: Mapping[str, Any]) -> None:
        video = meta.get(META_KEY)
        params = video.get("params") if isinstance(video, Mapping) else None
        if not isinstance(params, Mapping):
            return
        self.codec = str(params.get("codec", ""))
        extradata = params.get("extradata") or b""
        self._size, self._sets = 0, []
        if extradata[:1] == b"\x01" and len(extradata) > 7:
            try:
                if self.codec == "h264":
                    self._size, self._sets = _avcc_sets(bytes(extradata))
                elif self.codec == "hevc" and len(extradata) > 23:
                    self._size, self._sets = _hvcc_sets(bytes(extradata))
            except IndexError:  # a truncated record: send the packets as they are
                self._size, self._sets = 0, []

    @property
    def format(self) -> str | None:
        """``CompressedVideo.format`` (``h264``, ``h265``, ``vp9``, ``av1``, ``ffv1``)."""
        return None if self.codec is None else codec_format(self.codec)

    def annexb(self, data: bytes, key: bool) -> bytes:
        """The packet in Annex B framing (unchanged when it already is, or not H.264/H.265)."""
        if not self._size:
            return bytes(data)
        nals = _split(bytes(data), self._size)
        if key:
            nals = self._sets + nals
        return b"".join(START + n for n in nals)


def packet_key(meta: Mapping[str, Any]) -> bool:
    video = meta.get(META_KEY)
    return bool(video.get("key")) if isinstance(video, Mapping) else False
