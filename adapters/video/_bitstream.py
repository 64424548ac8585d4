"""Whether a packet is meant to put a picture on screen, read from its first header bits.

Loss accounting (:mod:`~adapters.video._ledger`) expects a frame out of every
packet it tracks. Two kinds of packet legitimately give none, and counting
them as lost would invent gaps in ``seq``:

* packets the container marks *discard* (MP4 edit lists: pre-roll decoded
  only as a reference); the decoder drops their frame itself. PyAV says so in
  ``Packet.is_discard``; that check is in the decoder thread.
* VP8/VP9 *hidden* frames (alternate references, ``show_frame = 0``), which a
  WebM muxer may store as packets of their own (``roadtrip-vp92-10bit.webm``:
  80 packets, 72 shown frames). :func:`shows_frame` reads the bit.

VP9 packets may be *superframes* (several frames and an index at the end);
one shows a picture if any frame in it does. Anything that does not parse as
the codec's header counts as "shows a frame", so a damaged packet is still
reported lost when nothing comes out of it.

:func:`starts_anew` tells whether an H.264 key frame is an IDR picture, which
the key-frame spans (:mod:`~adapters.video._spans`) may start a decoder at:
a non-IDR I picture leaves the earlier pictures referable to the ones after it.

Sans-I/O: bytes in, a bool out.
"""

from __future__ import annotations

from collections.abc import Iterator


def shows_frame(codec: str, data: bytes | memoryview) -> bool:
    """Whether decoding this packet should output a picture (see the module docstring)."""
    if codec == "vp9":
        return any(_vp9_shows(frame) for frame in _vp9_frames(bytes(data)))
    if codec == "vp8":
        raw = bytes(data[:1])
        # Frame tag: bit 0 key frame (inverted), bits 1-3 version, bit 4 show_frame.
        return not raw or bool(raw[0] & 0x10)
    return True


def _vp9_frames(data: bytes) -> Iterator[bytes]:
    """The frames of a VP9 packet: the superframe's parts, or the packet itself."""
    if data:
        marker = data[-1]
        if marker & 0xE0 == 0xC0:
            count = (marker & 0x07) + 1
            size_bytes = ((marker >> 3) & 0x03) + 1
            index_len = 2 + size_bytes * count
            if len(data) >= index_len and data[-index_len] == marker:
                pos = len(data) - index_len + 1
                start = 0
                for _ in range(count):
                    size = int.from_bytes(data[pos : pos + size_bytes], "little")
                    pos += size_bytes
                    if size == 0 or start + size > len(data) - index_len:
                        yield data  # an index that does not fit: judge the packet as a whole
                        return
                    yield data[start : start + size]
                    start += size
                return
    yield data


def _vp9_shows(frame: bytes) -> bool:
    """``show_existing_frame`` or ``show_frame`` of one VP9 uncompressed header."""
    if not frame:
        return True
    bits = int.from_bytes(frame[:2].ljust(2, b"\0"), "big")
    if bits >> 14 != 0b10:  # frame_marker: not a VP9 header, let the ledger decide
        return True
    profile = ((bits >> 13) & 1) | (((bits >> 12) & 1) << 1)  # low bit first
    pos = 10 if profile == 3 else 11  # show_existing_frame (after reserved_zero in profile 3)
    if (bits >> pos) & 1:
        return True
    return bool((bits >> (pos - 2)) & 1)  # frame_type, then show_frame


def starts_anew(codec: str, data: bytes | memoryview, length_size: int | None) -> bool:
    """Whether a key-frame packet lets a decoder start there with nothing before it:
    for H.264 an IDR slice (NAL type 5) in the packet, read with ``length_size``-byte
    NAL lengths (the ``avcC`` record's; ``None``: Annex B start codes). HEVC's and
    VP8/VP9's key frames do (an HEVC CRA's leading pictures, the ones that may refer
    back, are the span before's). Anything that does not parse says no."""
    if codec != "h264":
        return True
    raw = bytes(data)
    return any(nal & 0x1F == 5 for nal in _h264_nal_headers(raw, length_size))


def _h264_nal_headers(raw: bytes, length_size: int | None) -> Iterator[int]:
    """The first byte of each NAL unit of an H.264 packet."""
    if length_size is None:
        at = 0
        while (at := raw.find(b"\0\0\1", at)) >= 0 and at + 3 < len(raw):
            yield raw[at + 3]
            at += 3
        return
    at = 0
    while at + length_size < len(raw):
        size = int.from_bytes(raw[at : at + length_size], "big")
        if size == 0 or at + length_size + size > len(raw):
            return
        yield raw[at + length_size]
        at += length_size + size
