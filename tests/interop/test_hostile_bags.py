"""Bags with hostile message definitions: one clear reason for the hostile topic, its
messages counted as lost, the good topic read in full (rosbags' reader and the mcap
reader are the reference), memory bounded; the CLI prints every name literally."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from adapters import BagSource
from hyperframes.cli import main as cli
from tests.interop.hostile_bags import HOSTILE, N, good_text, write

REASONS = {
    "recursive": "its type is recursive (evil/msg/Loop -> evil/msg/Loop), which no message can be",
    "wide": "its type definition has 10000 fields, over the limit of 2000",
    "pathname": "its type definition does not parse",
    "ctrlname": "its type definition does not parse",
    "fieldname": "its type definition does not parse",
}


def reference(path: Path) -> list[str]:
    """The /good messages as the vendors' readers see them."""
    if path.suffix == ".mcap":
        from mcap.reader import make_reader

        with path.open("rb") as f:
            return [
                m.data[8:-1].decode()
                for _, c, m in make_reader(f).iter_messages(topics=["/good"])
                if c.topic == "/good"
            ]
    from rosbags.rosbag1 import Reader

    with Reader(path) as r:
        conns = [c for c in r.connections if c.topic == "/good"]
        return [raw[4:].decode() for _, _, raw in r.messages(connections=conns)]


async def read(path: Path) -> tuple[list[str], BagSource]:
    source = BagSource(path)
    out = []
    async with source:
        async for frame in source.frames():
            assert frame.sensor == "good"
            out.append(str(frame.data["data"]))
    return out, source


@pytest.mark.parametrize("kind", ["ros1", "mcap"])
@pytest.mark.parametrize("name", list(HOSTILE))
async def test_a_hostile_definition_costs_its_topic_only(
    tmp_path: Path, name: str, kind: str
) -> None:
    path = write(tmp_path, name, kind)
    tracemalloc.start()
    try:
        got, source = await read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == reference(path) == [good_text(i) for i in range(N)]
    assert REASONS[name] in source.unsupported["/evil"]
    assert dict(source.ledger("evil").statistics().lost) == {"unsupported_type": N}
    assert peak < 64 << 20


@pytest.mark.parametrize("name", ["ctrlname", "fieldname", "recursive"])
def test_info_prints_hostile_names_literally_with_one_reason(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, name, "mcap")
    assert cli(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\x07" not in out
    lines = [line for line in out.splitlines() if line.startswith("not readable: /evil")]
    assert len(lines) == 1
    assert REASONS[name] in " ".join(out.split())
