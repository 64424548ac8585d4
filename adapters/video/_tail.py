"""The last packets of a stream, from a key frame on, kept to decode its end again.

Why. With frame threading FFmpeg reports a decode error late, when the
failed packet's turn to output comes, and PyAV's ``decode(None)`` (the
end-of-stream drain) raises on it and cannot be called again: every frame
still held for B-frame reordering or in another thread is thrown away. The
same file gives 29 frames with ``threads=1`` and 27 with frame threads. So the
decoder thread keeps the tail of the stream here and, when the drain leaves
packets unaccounted for, decodes it once more on a fresh single-threaded
decoder and delivers the frames that never came out. Decoding is bit-exact
whatever the threading, so the result equals a ``threads=1`` run.

What is kept: every packet since the newest key frame that has at least
``reach`` packets after it (the frames a drain can strand are the last few:
reorder depth plus thread count), so replaying starts at a key frame and
covers them. Bounded by ``max_packets`` and ``max_bytes``; past either the
tail is dropped until the next key frame (then a failed drain reports its
losses as before). Holding a packet holds its demuxer buffer; nothing is copied.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class _PacketLike(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def is_keyframe(self) -> bool: ...


P = TypeVar("P", bound=_PacketLike)


class Tail(Generic[P]):
    """Packets since a key frame far enough back (see the module docstring)."""

    __slots__ = ("_bytes", "_keys", "_packets", "complete", "max_bytes", "max_packets", "reach")

    def __init__(
        self, *, reach: int = 48, max_packets: int = 4096, max_bytes: int = 64 << 20
    ) -> None:
        self.reach = reach
        self.max_packets = max_packets
        self.max_bytes = max_bytes
        self._packets: list[P] = []
        self._keys: list[int] = [0]  # the start of the stream counts as a key frame
        self._bytes = 0
        self.complete = True
        """The kept packets start at a key frame (or the stream's start)."""

    def add(self, packet: P) -> None:
        if packet.is_keyframe:
            if not self.complete:
                self._packets, self._keys, self._bytes, self.complete = [], [0], 0, True
            elif self._packets:
                self._keys.append(len(self._packets))
        if not self.complete:
            return
        self._packets.append(packet)
        self._bytes += packet.size
        while len(self._keys) > 1 and len(self._packets) - self._keys[1] >= self.reach:
            cut = self._keys[1]
            self._bytes -= sum(p.size for p in self._packets[:cut])
            del self._packets[:cut]
            self._keys = [k - cut for k in self._keys[1:]]
        if len(self._packets) > self.max_packets or self._bytes > self.max_bytes:
            self._packets, self._keys, self._bytes, self.complete = [], [0], 0, False

    def __iter__(self) -> Iterator[P]:
        return iter(self._packets if self.complete else ())

    def __len__(self) -> int:
        return len(self._packets) if self.complete else 0
