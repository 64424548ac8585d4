"""Which packets and frames of one decoder belong to its span of a file, sans-I/O.

Theory of operation. A file decoded by several decoders at once is cut at key
frames into spans ``[start, end)`` of presentation time (PTS, in the stream's
time base); each decoder seeks to its span's key frame and must deliver
exactly the frames presented in the span, so the spans, delivered one after
another, are the frames of one whole decode. :class:`SpanCut` decides, packet
by packet in decode order, what the decoder does with each:

* ``"feed"``: decode it (a reference) but do not count it as the span's: the
  packets a seek landed on before the span's key frame, and the next span's
  key frame when this span still needs it;
* ``"keep"``: decode it and count it as the span's (the packet ledger expects
  a frame from it);
* ``"skip"``: neither: a leading picture of the span's own key frame (an open
  GOP's B-frame presented before the key frame and referring to the GOP
  before it), which belongs to the span before;
* ``"stop"``: the span is complete; flush the decoder;
* ``"rewind"``: the seek landed past the span's key frame (a container that
  seeks by bytes): seek to the file's start and go on (packets before the key
  frame are then fed as references).

At the end: the first packet at or after ``end`` is held back (the next span's
key frame). When a packet presented before ``end`` follows it in decode order
(a leading picture of the next GOP, which is this span's frame), the held key
frame is fed first (it is that picture's reference); the first packet at or
after ``end`` after that stops the span. A closed GOP never decodes the next
key frame. Frames are kept when ``start <= pts < end`` (:meth:`keeps`).
"""

from __future__ import annotations

from typing import Literal

Action = Literal["feed", "keep", "skip", "stop", "rewind"]


class SpanCut:
    """The packet and frame decisions of one span ``[start, end)`` (``None``: open)."""

    __slots__ = ("_at_end", "_started", "end", "held", "start")

    def __init__(self, start: int | None, end: int | None) -> None:
        if start is not None and end is not None and end <= start:
            raise ValueError(f"a span must end after it starts, got [{start}, {end})")
        self.start = start
        self.end = end
        self._started = start is None
        self._at_end = False
        self.held: object | None = None
        """The next span's key frame, held back until this span is known to need it."""

    def packet(
        self, pts: int | None, key: bool, packet: object = None
    ) -> list[tuple[Action, object]]:
        """What to do with ``packet`` (PTS ``pts``, a key frame or not), and with the held
        key frame if it is now needed: ``[(action, packet), ...]`` in decode order."""
        if not self._started:
            if key and pts == self.start:
                self._started = True
                return [("keep", packet)]
            if pts is not None and self.start is not None and pts > self.start:
                return [("rewind", packet)]
            return [("feed", packet)]  # a seek that landed early: references only
        if pts is None:
            return [("keep", packet)]  # nothing to place it by: the ledger ignores it
        if self.start is not None and pts < self.start:
            return [("skip", packet)]
        end = self.end
        if end is None or pts < end:
            if self.held is None:
                return [("keep", packet)]
            held, self.held = self.held, None
            return [("feed", held), ("keep", packet)]
        if self.held is None and not self._at_end:
            self._at_end = True
            self.held = packet
            return []
        return [("stop", packet)]

    def keeps(self, pts: int | None) -> bool:
        """Whether a decoded frame presented at ``pts`` is this span's."""
        if pts is None:
            return True
        return (self.start is None or pts >= self.start) and (self.end is None or pts < self.end)
