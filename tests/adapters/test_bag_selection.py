"""Which topics of a bag ``BagSource`` reads: the selection policy, generated and on real bags.

The property: every topic of a bag is either read (with a decoder, under one sensor name)
or not read with its type and reason in ``unsupported``; reading "every readable topic"
reports each topic not read (``skipped``, whose messages the ledger counts as
``unsupported_type``); asking for a topic the bag lacks or cannot read is an error naming
it. On real bags the listing is checked against rosbags' own reader, the reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.bags._reader import BagReader
from adapters.bags._selection import BagTopic, select_topics, sensor_name, summarise
from adapters.bags._tally import TopicTally
from adapters.errors import SourceOpenError
from fusion import InputLedger

NAMES = ["/imu", "/cam/image", "/cam_image", "/gps", "/secret", "/odd/type"]


@st.composite
def listings(draw: st.DrawFn) -> list[BagTopic]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True))
    out = []
    for name in names:
        count = draw(st.integers(0, 50))
        if draw(st.booleans()):
            out.append(BagTopic(name, "pkg/msg/T", count, draw(st.sampled_from(["imu", "raw"]))))
        else:
            out.append(BagTopic(name, "pkg/msg/U", count, None, draw(st.sampled_from(["a", "b"]))))
    return out


asked = st.one_of(
    st.none(),
    st.lists(st.sampled_from(NAMES), unique=True),
    st.dictionaries(st.sampled_from(NAMES), st.sampled_from(["a", "b", "c", "d"])),
)


@given(listing=listings(), topics=asked)
def test_every_topic_is_read_with_a_decoder_or_reported_with_its_reason(
    listing: list[BagTopic], topics: dict[str, str] | list[str] | None
) -> None:
    by_topic = {t.topic: t for t in listing}
    readable = {t.topic for t in listing if t.decoder}
    try:
        chosen = select_topics(listing, topics, "bag 'b.mcap'")
    except SourceOpenError as err:
        message = str(err)
        wants = list(topics) if topics is not None else sorted(readable)
        lacking = [t for t in wants if t not in by_topic]
        refused = [t for t in wants if t in by_topic and t not in readable]
        if lacking:
            assert message.startswith("bag 'b.mcap' has no topic ")
            assert all(repr(t) in message for t in lacking)
        elif refused:
            assert f"topic {refused[0]!r} cannot be read (pkg/msg/U: " in message
        else:
            assert "has no readable topic to replay" in message
            assert not wants
        return
    except ValueError as err:  # two topics, one sensor name
        assert "two topics map to the same sensor name" in str(err)  # noqa: PT017
        wanted = dict(topics) if isinstance(topics, dict) else None
        names = list(wanted.values()) if wanted else [sensor_name(t) for t in topics or readable]
        assert len(set(names)) < len(names)
        return
    assert chosen.unsupported == {
        t.topic: f"pkg/msg/U: {t.reason}" for t in listing if t.decoder is None
    }
    assert chosen.wanted
    assert set(chosen.wanted) <= readable  # everything read has a decoder
    assert len(set(chosen.wanted.values())) == len(chosen.wanted)
    if topics is None:  # all: each topic read or reported, never both, never neither
        assert set(chosen.wanted) == readable
        assert set(chosen.skipped) == set(chosen.unsupported)
        assert set(chosen.wanted) | set(chosen.skipped) == set(by_topic)
        for topic, (sensor, count, reason) in chosen.skipped.items():
            assert (sensor, count, reason) == (
                sensor_name(topic),
                by_topic[topic].count,
                chosen.unsupported[topic],
            )
    else:  # what was asked, as asked; nothing reported as skipped
        assert set(chosen.wanted) == set(topics)
        assert chosen.skipped == {}
        if isinstance(topics, dict):
            assert chosen.wanted == topics


REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "bags"
BAGS = (
    sorted(p for p in REAL.iterdir() if p.suffix not in (".md", ".json")) if REAL.is_dir() else []
)


def _reference(path: Path) -> dict[str, tuple[str | None, int]]:
    """Topic -> (type, messages) as rosbags' own bag readers list them."""
    from rosbags.rosbag1 import Reader as Rosbag1
    from rosbags.rosbag2 import Reader as Rosbag2

    with Rosbag2(path) if path.is_dir() or path.suffix == ".mcap" else Rosbag1(path) as bag:
        return {topic: (info.msgtype, info.msgcount) for topic, info in bag.topics.items()}


@pytest.mark.skipif(not BAGS, reason=f"real bags not found in {REAL}")
@pytest.mark.parametrize("path", BAGS, ids=lambda p: p.name)
def test_real_bags_every_topic_rosbags_lists_is_read_or_reported(path: Path) -> None:
    expected = _reference(path)
    with BagReader(path) as reader:
        listing = summarise(reader)
    assert {t.topic: t.count for t in listing} == {t: n for t, (_, n) in expected.items()}
    for topic in listing:
        if topic.decoder is not None:
            assert topic.msgtype == expected[topic.topic][0]
    if not any(t.decoder for t in listing):  # nothing readable: every topic named, with why
        with pytest.raises(SourceOpenError) as refused:
            select_topics(listing, None, f"bag '{path}'")
        assert all(t.topic in str(refused.value) for t in listing)
        return
    chosen = select_topics(listing, None, f"bag '{path}'")
    assert set(chosen.wanted) | set(chosen.skipped) == set(expected)
    assert not set(chosen.wanted) & set(chosen.skipped)


def test_the_tally_tells_the_ledgers_once_per_flush_and_finds_the_shortfalls() -> None:
    ledgers = {"imu": InputLedger("message"), "cam": InputLedger("message")}
    tally = TopicTally(ledgers)
    tally.receive({"imu": 3, "cam": 1})
    for sensor in ("imu", "imu", "cam"):
        tally.emitted(sensor)
    assert ledgers["imu"].statistics().emitted == 0  # told at the flush, not per frame
    tally.flush()
    tally.flush()  # nothing new: nothing told twice
    assert (ledgers["imu"].statistics().emitted, ledgers["cam"].statistics().emitted) == (2, 1)
    assert ledgers["imu"].statistics().received == 3
    shortfalls = list(tally.shortfalls({"/imu": "imu", "/cam": "cam"}, {"/imu": 5, "/cam": 1}))
    assert shortfalls == [("/imu", "imu", 5, 3)]
