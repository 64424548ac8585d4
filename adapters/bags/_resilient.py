"""Reading a bag's messages past damage: a bad chunk costs that chunk only.

:func:`read_resilient` drives :meth:`BagReader.messages
<adapters.bags._reader.BagReader.messages>` and, when ``rosbags`` fails inside
the bag, resumes window by window between the chunk starts the index lists,
reporting the window that fails (its log-time range and about how many
messages it held) through a :data:`Damage` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.bags._reader import BagReader

Damage = Callable[[str, str, int], None]
"""``(reason, message, about how many messages lost)``: how :func:`read_resilient` reports."""


def read_resilient(
    reader: BagReader,
    connections: Collection[Any],
    start: int | None,
    end: int | None,
    report: Damage,
) -> Generator[tuple[Any, int, bytes], None, None]:
    """``reader``'s messages in log-time order, a damaged chunk skipped and reported.

    The fast path is one ``rosbags`` iteration. When it fails, reading goes
    on window by window from the last message delivered, each window running
    from one chunk's first log time to the next one's, until the window that
    fails; that one is reported (``damaged_chunk``, with its log-time range
    and about how many messages it held) and skipped, and the fast path
    resumes after it. Messages at the last delivered log time are not
    delivered twice. Storage without chunk indexes (sqlite3) stops at the
    damage (``damaged``).
    """
    pos, skip = start, 0
    while True:
        last, at_last = None, 0
        it = reader.messages(connections, start=pos, stop=end)
        try:
            for item in it:
                if skip and item[1] == pos:
                    skip -= 1
                    continue
                if item[1] == last:
                    at_last += 1
                else:
                    last, at_last = item[1], 1
                yield item
            return
        except Exception as err:  # rosbags' reader errors have no common base
            failure = err
        finally:
            it.close()
        reader.forget_open_chunk()
        if last is not None:
            pos, skip = last, at_last
        spans = reader.chunk_spans()
        if spans is None:
            report(
                "damaged",
                f"bag '{reader.path}' is damaged after log time {pos} ns ({failure}); "
                "it has no chunk index to resume from, so reading stops here",
                0,
            )
            return
        bounds = sorted({s for s, _, _ in spans if pos is None or s > pos})
        if end is not None:
            bounds = [b for b in bounds if b < end] + [end]
        else:
            bounds.append(1 << 63)
        a = pos
        for b in bounds:
            try:
                window = list(reader.messages(connections, start=a, stop=b))
            except Exception as err:
                reader.forget_open_chunk()
                _damaged_window(reader, a, b, spans, err, report)
                pos, skip = b, 0
                break
            if skip:
                window = window[min(skip, len(window)) :]
                skip = 0
            yield from window
            a = b
        else:
            return
        if pos >= (1 << 63) or (end is not None and pos >= end):
            return


def _damaged_window(
    reader: BagReader,
    a: int | None,
    b: int,
    spans: list[tuple[int, int, int]],
    err: Exception,
    report: Damage,
) -> None:
    inside = [(s, e, n) for s, e, n in spans if (a is None or s >= a) and s < b]
    lost = sum(n for _, _, n in inside)
    first = min((s for s, _, _ in inside), default=a)
    last = max((e for _, e, _ in inside), default=b)
    report(
        "damaged_chunk",
        f"bag '{reader.path}': the chunk of log time {first}..{last} ns is damaged ({err}); "
        f"about {lost} messages lost, reading goes on after it",
        lost,
    )
