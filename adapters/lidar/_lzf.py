"""LZF decompression, for PCD ``binary_compressed`` data.

LZF (Marc Lehmann's liblzf, used by PCL) is a byte-oriented LZ77 variant. A
control byte ``c`` starts each token:

* ``c < 32``: a literal run; the next ``c + 1`` bytes are copied as they are;
* otherwise a back reference of ``c >> 5`` (7 means "7 plus the next byte")
  plus 2 bytes, starting ``((c & 31) << 8) + next byte + 1`` bytes back in the
  output. The source may overlap the bytes being written (a run).

Pure Python, because no well-kept binding exists on PyPI and open3d's reader
(the alternative) reorders fields and turns PCL's packed ``rgba`` into three
bytes, losing alpha. Decoding works on slices, not bytes, so its cost is per
token, not per byte.
"""

from __future__ import annotations


class LzfError(ValueError):
    """The compressed stream is malformed; the message says where."""


def decompress(data: bytes | memoryview, size: int) -> bytes:
    """Decompress ``data`` into exactly ``size`` bytes (raises :class:`LzfError` otherwise)."""
    src = bytes(data)
    out = bytearray()
    end = len(src)
    ip = 0
    while ip < end:
        ctrl = src[ip]
        ip += 1
        if ctrl < 32:
            run = ctrl + 1
            if ip + run > end:
                raise LzfError(f"literal run of {run} bytes at input byte {ip - 1} passes the end")
            out += src[ip : ip + run]
            ip += run
            continue
        length = ctrl >> 5
        if length == 7:
            if ip >= end:
                raise LzfError(f"back reference at input byte {ip - 1} is cut short")
            length += src[ip]
            ip += 1
        if ip >= end:
            raise LzfError(f"back reference at input byte {ip - 1} is cut short")
        distance = ((ctrl & 31) << 8) + src[ip] + 1
        ip += 1
        length += 2
        start = len(out) - distance
        if start < 0:
            raise LzfError(
                f"back reference at input byte {ip - 2} points {distance} bytes back, "
                f"before the start of the output ({len(out)} bytes so far)"
            )
        if distance >= length:
            out += out[start : start + length]
        else:  # overlapping: the pattern of `distance` bytes repeats
            pattern = out[start:]
            out += (pattern * (length // distance + 1))[:length]
        if len(out) > size:
            break
    if len(out) != size:
        raise LzfError(f"decompressed to {len(out)} bytes, the header promised {size}")
    return bytes(out)


def compress_literal(data: bytes) -> bytes:
    """Encode ``data`` as valid LZF of literal runs only (for tests and writers).

    Not a compressor: the output is 1/32 larger than the input. Any LZF decoder
    reads it back; PCL reads such a PCD.
    """
    out = bytearray()
    for i in range(0, len(data), 32):
        chunk = data[i : i + 32]
        out.append(len(chunk) - 1)
        out += chunk
    return bytes(out)
