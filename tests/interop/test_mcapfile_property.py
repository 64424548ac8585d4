"""Properties of :class:`~adapters.bags._mcapfile.McapFile` against the ``mcap`` Python writer.

* Whatever the writer's options (chunked or not, chunk size, compression, channels and
  schemas repeated or not, statistics and indexes or not) and whatever the profile,
  every message comes back, in log-time order with equal times in the order written,
  and the counts per channel are the data's.
* Damaged bytes (flipped, cut short) cost only what they touch: opening raises
  ``McapFormatError`` (a ``ValueError``) or succeeds, reading raises ``DamagedChunk`` or
  ``McapFormatError`` or succeeds; never another exception, never a hang.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.bags._mcapchunks import DamagedChunk
from adapters.bags._mcapfile import McapFile, McapFormatError

MESSAGES = st.lists(
    st.tuples(st.integers(1, 3), st.integers(0, 40), st.binary(max_size=24)),
    max_size=60,
)
OPTIONS = st.fixed_dictionaries(
    {
        "use_chunking": st.booleans(),
        "chunk_size": st.sampled_from([64, 256, 1 << 20]),
        "compression": st.sampled_from(["NONE", "ZSTD", "LZ4"]),
        "repeat_channels": st.booleans(),
        "repeat_schemas": st.booleans(),
        "use_statistics": st.booleans(),
        "index_types": st.sampled_from(["ALL", "NONE", "CHUNK"]),
        "use_summary_offsets": st.booleans(),
    }
)


def write(messages: list[tuple[int, int, bytes]], options: dict[str, Any], profile: str) -> bytes:
    from mcap.writer import CompressionType, IndexType, Writer

    out = io.BytesIO()
    opts = {
        **options,
        "compression": CompressionType[options["compression"]],
        "index_types": IndexType[options["index_types"]],
    }
    w = Writer(out, **opts)
    w.start(profile=profile, library="hypothesis")
    schema = w.register_schema("Example", "c", b"\x04\x05\x06")
    channels = {c: w.register_channel(f"/t{c}", "a", schema if c != 3 else 0) for c in (1, 2, 3)}
    for seq, (c, t, data) in enumerate(messages):
        w.add_message(channels[c], t, data, t + 1, seq)
    w.finish()  # type: ignore[no-untyped-call]
    return out.getvalue()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(MESSAGES, OPTIONS, st.sampled_from(["", "ros2", "foxglove"]))
def test_every_message_in_log_time_order(
    tmp_path: Path, messages: list[tuple[int, int, bytes]], options: dict[str, Any], profile: str
) -> None:
    path = tmp_path / "p.mcap"
    path.write_bytes(write(messages, options, profile))
    want = sorted(
        ((f"/t{c}", t, t + 1, seq, data) for seq, (c, t, data) in enumerate(messages)),
        key=lambda m: m[1],
    )
    with McapFile(path) as mcap:
        assert mcap.profile == profile
        got = [
            (mcap.channels[m.channel_id].topic, m.log_time, m.publish_time, m.sequence, m.data)
            for m in mcap.messages()
        ]
        counts = {mcap.channels[c].topic: n for c, n in mcap.counts.items() if n}
        assert mcap.damage == []
    assert got == want
    expected: dict[str, int] = {}
    for topic, *_ in want:
        expected[topic] = expected.get(topic, 0) + 1
    assert counts == expected


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(MESSAGES, OPTIONS, st.data())
def test_damaged_bytes_cost_only_what_they_touch(
    tmp_path: Path, messages: list[tuple[int, int, bytes]], options: dict[str, Any], data: Any
) -> None:
    raw = bytearray(write(messages, options, ""))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    for _ in range(data.draw(st.integers(1, 4))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "bad.mcap"
    path.write_bytes(bytes(raw))
    assert _messages_read(path) <= len(messages) + len(raw)


def _messages_read(path: Path) -> int:
    """The messages a damaged file gives: each chunk read on its own, then all in order; 0
    when it does not open or its messages do not read. Any exception but the two a damaged
    file may raise (``McapFormatError``, ``DamagedChunk``) goes through."""
    try:
        mcap = McapFile(path)
    except McapFormatError:
        return 0
    with mcap:
        for seg in mcap.segments:
            with contextlib.suppress(DamagedChunk, McapFormatError):
                mcap.segment_messages(seg)
        try:
            return sum(1 for _ in mcap.messages())
        except (DamagedChunk, McapFormatError):
            return 0


def test_every_byte_of_a_chunked_file_flipped_in_turn_costs_only_what_it_touches(
    tmp_path: Path,
) -> None:
    """The low bit of every byte of a small chunked, indexed file flipped in turn. A flip
    high in an index's u64 offset points up to 2^56 bytes past the end, where a seek itself
    fails (EINVAL past the file system's largest file): that was an ``OSError``, found by
    the property above in a fresh clone."""
    messages = [(1 + i % 3, i, bytes(i % 4)) for i in range(11)]
    options = {
        "use_chunking": True,
        "chunk_size": 64,
        "compression": "ZSTD",
        "repeat_channels": True,
        "repeat_schemas": True,
        "use_statistics": True,
        "index_types": "ALL",
        "use_summary_offsets": False,
    }
    raw = write(messages, options, "")
    path = tmp_path / "flipped.mcap"
    read = 0
    for at in range(len(raw)):
        flipped = bytearray(raw)
        flipped[at] ^= 1
        path.write_bytes(bytes(flipped))
        read += _messages_read(path)
    assert read > 0  # most flips touch a payload or a time, and the rest reads


def test_a_chunk_index_pointing_outside_the_file_is_a_damaged_chunk() -> None:
    """rosbags' reader hands its chunk indexes on as read: an offset or a size from a
    damaged index is checked against the file before anything is sought or read (a seek
    2^48 bytes out fails with EINVAL; a read of 2^40 bytes would allocate them)."""
    from types import SimpleNamespace

    from adapters.bags._mcapchunks import _chunk_records

    options = {"use_chunking": True, "compression": "NONE", "index_types": "ALL"}
    raw = write([(1, i, b"x") for i in range(5)], options, "")
    bio = io.BytesIO(raw)
    for start, size in ((1 << 48, 10), (-1, 10), (8, 1 << 40), (8, len(raw))):
        chunk = SimpleNamespace(chunk_start_offset=start, compression="", compressed_size=size)
        with pytest.raises(DamagedChunk, match="past the file's end"):
            _chunk_records(bio, chunk, len(raw))


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
@pytest.mark.parametrize("claimed", [1000, 1 << 33])
def test_a_chunk_that_decompresses_past_its_header_allocates_only_what_the_header_says(
    compression: str, claimed: int
) -> None:
    """64 MiB of zeros stored in 2-260 KiB, under a header that says ``claimed`` bytes:
    a damaged chunk, found before more than ``claimed`` bytes (or, over the limit, any) are
    allocated."""
    import tracemalloc

    import lz4.frame  # type: ignore[import-untyped]
    import zstandard

    from adapters.bags._mcapchunks import MAX_CHUNK_BYTES, decompress_chunk

    records = bytes(64 << 20)
    data = (
        zstandard.ZstdCompressor().compress(records)
        if compression == "zstd"
        else lz4.frame.compress(records)
    )
    del records
    tracemalloc.start()
    try:
        with pytest.raises(DamagedChunk, match="chunk at byte 77") as raised:
            decompress_chunk(compression, data, claimed, 0, "chunk at byte 77")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < min(claimed, 1 << 20) + (1 << 20), peak
    assert ("over the" in str(raised.value)) == (claimed > MAX_CHUNK_BYTES)
