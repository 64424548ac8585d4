"""The input ledger: received == emitted + lost + pending, for any mix of units."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import Frame, InputLedger, LedgerStatistics, SensorSpec, Source
from fusion._source import ERROR_SAMPLES

events = st.lists(
    st.one_of(
        st.tuples(st.just("good"), st.integers(1, 5)),
        st.tuples(st.sampled_from(["bad_length", "undecodable", "foreign_sender"]), st.just(1)),
        st.tuples(st.just("kernel_overflow"), st.integers(0, 50)),
    ),
    max_size=200,
)


@given(events)
def test_every_unit_is_a_frame_or_a_counted_loss(mix: list[tuple[str, int]]) -> None:
    ledger = InputLedger("datagram")
    ledger.receive(0)  # explicit from the start
    sent = good = 0
    for kind, n in mix:
        if kind == "good":
            ledger.receive(n)
            ledger.emit(n)
            good += n
        elif kind == "kernel_overflow":
            ledger.lose(kind, n, arrived=False)
        else:
            ledger.receive(n)
            ledger.lose(kind, n)
        sent += n
    stats = ledger.statistics()
    assert stats.received == sent
    assert stats.emitted == good
    assert stats.received == stats.emitted + stats.lost_total
    assert stats.pending == 0
    assert LedgerStatistics.from_dict(stats.as_dict()) == stats


class Counting(Source):
    """A plain custom source: it never counts what it receives."""

    def __init__(self, pattern: list[bool]) -> None:
        super().__init__(SensorSpec("thermo", kind="timeseries"))
        self.pattern = pattern

    async def frames(self) -> AsyncIterator[Frame]:
        for i, good in enumerate(self.pattern):
            if good:
                yield self.make_frame(i, None)
            else:
                self.count_error("undecodable", f"thermo: sample {i} unreadable")


@given(st.lists(st.booleans(), max_size=50))
async def test_an_implicit_source_balances_with_no_bookkeeping(pattern: list[bool]) -> None:
    source = Counting(pattern)
    frames = [f async for f in source.frames()]
    stats = source.ledgers()["thermo"]
    assert stats.frames == len(frames) == sum(pattern)
    assert stats.received == len(pattern)
    assert stats.lost == ({"undecodable": pattern.count(False)} if False in pattern else {})
    assert source.statistics()["ledger"]["thermo"]["received"] == len(pattern)


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 6)), max_size=60))
def test_a_source_keeps_the_first_few_distinct_messages_of_each_reason(
    errors: list[tuple[str, int]],
) -> None:
    source = Counting([])
    for reason, k in errors:
        source.count_error(reason, f"message {k}", units=0)
    for reason in ("a", "b"):
        said = [f"message {k}" for r, k in errors if r == reason]
        first = list(dict.fromkeys(said))[:ERROR_SAMPLES]
        kept = source.error_messages.get(reason, {})
        assert list(kept) == first  # in the order first said, each once
        assert all(kept[m] == said.count(m) for m in first)
        assert sum(kept.values()) + sum(m not in first for m in said) == source.errors[reason]


def test_units_held_in_a_partial_frame_are_pending() -> None:
    ledger = InputLedger("packet")
    ledger.receive(75)
    ledger.emit(70)
    assert ledger.statistics().pending == 5
    ledger.lose("incomplete", 5)
    assert ledger.statistics().pending == 0


@pytest.mark.parametrize(
    "raw",
    [{"received": -1}, {"received": True}, {"lost": {"x": -2}}, {"lost": [1]}, {"unit": 3}],
)
def test_a_stored_ledger_is_read_strictly(raw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="ledger"):
        LedgerStatistics.from_dict(raw)
