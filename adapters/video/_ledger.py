"""Which packets went into the decoder and never came out as a frame.

Decoders do not always say when they give up on a packet: H.264 with random
bytes in a slice logs a warning, conceals, and simply outputs nothing for it.
To report such losses with their PTS, we keep a ledger: every packet with a PTS
that enters the decoder is *pending* until a frame with that PTS comes out.

Decoders output frames in presentation order, so once frames with a *later*
PTS have come out, an earlier pending packet is not coming. We wait for
``reorder_window`` later frames before declaring it lost, because H.264
decoders that under-estimate the reorder depth at the start of a stream can
emit a frame a few places late. At the end of the stream everything still
pending is lost.

Packets that give no frame by design (edit-list discard, hidden VP9
frames) are never entered: the decoder thread filters them out first.
Packets without a PTS are not tracked (nothing to report them by). The ledger
holds at most ``limit`` entries; beyond that the oldest is declared lost, so a
decoder that never outputs anything cannot grow it.

Sans-I/O: integers in, lists of lost PTS out.
"""

from __future__ import annotations

from fusion.errors import ConfigError


class PacketLedger:
    """Pending packet PTS values, and the ones that will never decode."""

    __slots__ = ("_pending", "limit", "reorder_window")

    def __init__(self, *, reorder_window: int = 16, limit: int = 1024) -> None:
        if reorder_window < 1 or limit < 1:
            raise ConfigError("reorder_window and limit must be >= 1")
        self.reorder_window = reorder_window
        self.limit = limit
        # [pts, later frames seen]; short (decoder delay + losses), so a list is fine.
        self._pending: list[list[int]] = []

    def sent(self, pts: int | None) -> list[int]:
        """A packet with ``pts`` entered the decoder. Returns PTS evicted by the limit."""
        if pts is None:
            return []
        self._pending.append([pts, 0])
        if len(self._pending) > self.limit:
            self._pending.sort()
            return [self._pending.pop(0)[0]]
        return []

    def received(self, pts: int | None) -> list[int]:
        """A frame with ``pts`` came out. Returns the PTS of packets now known lost, sorted."""
        if pts is None or not self._pending:
            return []
        lost: list[int] = []
        keep: list[list[int]] = []
        matched = False
        for entry in self._pending:
            if not matched and entry[0] == pts:
                matched = True
                continue
            if entry[0] < pts:
                entry[1] += 1
                if entry[1] >= self.reorder_window:
                    lost.append(entry[0])
                    continue
            keep.append(entry)
        self._pending = keep
        lost.sort()
        return lost

    def forget(self, pts: int | None) -> None:
        """Stop tracking ``pts`` (its loss was already reported another way)."""
        if pts is None:
            return
        for i, entry in enumerate(self._pending):
            if entry[0] == pts:
                del self._pending[i]
                return

    def flush(self) -> list[int]:
        """End of stream (or of a connection): every pending packet is lost."""
        lost = sorted(entry[0] for entry in self._pending)
        self._pending = []
        return lost

    def oldest(self) -> int | None:
        """The smallest PTS still pending, or None."""
        return min((entry[0] for entry in self._pending), default=None)

    @property
    def pending(self) -> int:
        """Packets in the decoder that have not come out yet."""
        return len(self._pending)
