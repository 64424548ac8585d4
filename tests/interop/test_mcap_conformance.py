"""The foxglove/mcap conformance suite: every valid input read as the suite expects.

The suite's inputs are generated in the test by its own generator
(tests/peers/mcap_conformance, vendored from foxglove/mcap, run under Node
with ``@mcap/core``'s record builder), one per combination of its features
(chunked or not, message indexes, statistics, repeated schemas and channels,
attachment and metadata indexes, chunk index, summary offsets, padded
records). Each input is compared with the suite's expected records (its JSON,
vendored beside the generator) the way the suite's indexed readers are
judged: unique schemas and channels, messages in log-time order (equal times
in file order), plus attachments, metadata and the message count per channel.
``McapFile``, ``hyperframes info`` (its summary) and ``BagSource`` (its
frames) must all agree with the JSON; a file that needed a scan says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from adapters.bags import BagSource, read_bag_summary
from adapters.bags._mcapfile import McapFile

PEERS = Path(__file__).resolve().parent.parent / "peers"
SUITE = PEERS / "mcap_conformance"
EXPECTED = sorted((SUITE / "data").rglob("*.json"))


def node_tool(name: str) -> str:
    """A Node tool of tests/peers, or a failure saying how to install it."""
    tool = PEERS / "node_modules" / ".bin" / name
    if shutil.which("node") is None or not tool.exists():
        pytest.fail(
            f"the Node peers are not installed ({tool} missing, or no node): "
            "run `make test` (npm ci in tests/peers; Node.js 18+ with npm needed)"
        )
    return str(tool)


@pytest.fixture(scope="session")
def conformance_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite's 416 inputs, made by its own generator."""
    out = tmp_path_factory.mktemp("mcap-conformance")
    subprocess.run(
        [node_tool("tsx"), str(SUITE / "scripts" / "generate-inputs.ts"), "--data-dir", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return dict(record["fields"])


def _bytes(values: list[str]) -> bytes:
    return bytes(int(v) for v in values)


def expected(path: Path) -> dict[str, Any]:
    """What an indexed reader must find, from the suite's JSON of one input."""
    schemas: dict[int, tuple[Any, ...]] = {}
    channels: dict[int, tuple[Any, ...]] = {}
    messages, attachments, metadata = [], [], []
    for record in json.loads(path.read_text())["records"]:
        kind, f = record["type"], _fields(record)
        if kind == "Schema":
            schemas.setdefault(int(f["id"]), (f["name"], f["encoding"], _bytes(f["data"])))
        elif kind == "Channel":
            channels.setdefault(
                int(f["id"]),
                (f["topic"], int(f["schema_id"]), f["message_encoding"], f["metadata"]),
            )
        elif kind == "Message":
            messages.append(
                (
                    int(f["channel_id"]),
                    int(f["sequence"]),
                    int(f["log_time"]),
                    int(f["publish_time"]),
                    _bytes(f["data"]),
                )
            )
        elif kind == "Attachment":
            attachments.append(
                (f["name"], f["media_type"], int(f["log_time"]), int(f["create_time"]),
                 _bytes(f["data"]))
            )  # fmt: skip
        elif kind == "Metadata":
            metadata.append((f["name"], f["metadata"]))
    messages.sort(key=lambda m: m[2])  # stable: equal log times stay in file order
    counts: dict[int, int] = {}
    for m in messages:
        counts[m[0]] = counts.get(m[0], 0) + 1
    return {
        "schemas": schemas,
        "channels": channels,
        "messages": messages,
        "attachments": attachments,
        "metadata": metadata,
        "counts": counts,
    }


def ours(path: Path) -> dict[str, Any]:
    with McapFile(path) as mcap:
        return {
            "schemas": {k: (s.name, s.encoding, s.data) for k, s in mcap.schemas.items()},
            "channels": {
                k: (c.topic, c.schema_id, c.message_encoding, c.metadata)
                for k, c in mcap.channels.items()
            },
            "messages": [
                (m.channel_id, m.sequence, m.log_time, m.publish_time, m.data)
                for m in mcap.messages()
            ],
            "attachments": [
                (a.name, a.media_type, a.log_time, a.create_time, a.data) for a in mcap.attachments
            ],
            "metadata": [(m.name, m.metadata) for m in mcap.metadata],
            "counts": dict(mcap.counts),
        }


def _input(inputs: Path, json_path: Path) -> Path:
    return inputs / json_path.parent.name / f"{json_path.stem}.mcap"


def test_the_suite_is_whole(conformance_inputs: Path) -> None:
    made = sorted(conformance_inputs.rglob("*.mcap"))
    assert len(EXPECTED) == len(made) == 416
    assert {p.stem for p in made} == {p.stem for p in EXPECTED}


def test_mcapfile_reads_every_input_as_the_suite_expects(conformance_inputs: Path) -> None:
    wrong = []
    for js in EXPECTED:
        want, got = expected(js), ours(_input(conformance_inputs, js))
        bad = [key for key in want if want[key] != got[key]]
        if bad:
            wrong.append(f"{js.stem}: {', '.join(bad)}")
    assert wrong == [], f"{len(wrong)} of {len(EXPECTED)} inputs read wrong"


def test_info_summarises_every_input_as_the_suite_expects(conformance_inputs: Path) -> None:
    wrong = []
    for js in EXPECTED:
        want = expected(js)
        path = _input(conformance_inputs, js)
        info = read_bag_summary(path)
        features = set(js.stem.split("-")[1:])
        rows = sorted(
            (c[0], want["schemas"].get(c[1], ("-",))[0] if c[1] else "-", want["counts"].get(k, 0))
            for k, c in want["channels"].items()
        )
        times = [m[2] for m in want["messages"]]
        checks = {
            "topics": sorted((t.name, t.msgtype, t.count) for t in info.topics) == rows,
            "read": all(t.read == t.count for t in info.topics) and not info.damage,
            "messages": info.messages == len(want["messages"]),
            "span": (info.start_ns, info.end_ns)
            == ((min(times), max(times)) if times else (None, None)),
            "attachments": list(info.attachments) == [a[0] for a in want["attachments"]],
            "metadata": list(info.metadata) == [m[0] for m in want["metadata"]],
            # a file without a summary section is read by scanning, and says so
            "index": info.index is not None
            and ("sum" in features or "st" in features or info.index.startswith("scanned")),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            wrong.append(f"{js.stem}: {', '.join(bad)} ({info.index})")
    assert wrong == [], f"{len(wrong)} of {len(EXPECTED)} inputs summarised wrong"


def test_bagsource_reads_every_input_with_messages_as_the_suite_expects(
    conformance_inputs: Path,
) -> None:
    """Each message a frame: topic, log time, sequence, publish time and bytes as expected."""
    wrong, read = [], 0
    for js in EXPECTED:
        want = expected(js)
        if not want["messages"]:
            continue
        path = _input(conformance_inputs, js)
        source = BagSource(path)

        async def frames(source: BagSource = source) -> list[Any]:
            return [f async for f in source.frames()]

        try:
            got = [
                (f.meta["topic"], f.meta["sequence"], f.t_arrival, f.meta["publish_time"], f.data)
                for f in anyio.run(frames)
            ]
        finally:
            source.close()
        topics = {k: c[0] for k, c in want["channels"].items()}
        if got != [(topics[m[0]], *m[1:]) for m in want["messages"]] or source.reports:
            wrong.append(js.stem)
        read += 1
    assert read == sum(1 for js in EXPECTED if js.stem.split("-")[0] != "NoData") - sum(
        1 for js in EXPECTED if js.stem.startswith(("OneAttachment", "OneMetadata"))
    )
    assert wrong == [], f"{len(wrong)} inputs read wrong by BagSource: {wrong[:10]}"


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("TenMessages/TenMessages-ch", "scanned: no summary section"),
        ("TenMessages/TenMessages-ch-chx-st-sum", "scanned: the summary section does not repeat"),
        ("TenMessages/TenMessages-ch-chx-rch-rsh-sum", "scanned: the summary section has no Stat"),
        ("TenMessages/TenMessages-ch-chx-mx-rch-rsh-st-sum", "indexed (summary section)"),
    ],
)
def test_info_as_a_process_says_how_it_read_the_file(
    conformance_inputs: Path, name: str, how: str
) -> None:
    path = conformance_inputs / f"{name}.mcap"
    env = {**os.environ, "COLUMNS": "200"}
    run = subprocess.run(
        [sys.executable, "-m", "hyperframes", "info", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["index"].startswith(how)
    assert (doc["messages"], doc["missing"], doc["damage"]) == (10, 0, [])
    assert [(t["topic"], t["type"], t["count"], t["read"]) for t in doc["topics"]] == [
        ("example", "Example", 10, 10)
    ]


@pytest.mark.parametrize("profile", ["ros2", "foxglove", "", "x-custom"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"use_chunking": False},
        {"repeat_channels": False, "repeat_schemas": False},
        {"use_statistics": False, "index_types": "NONE"},
        {"use_chunking": False, "use_statistics": False, "repeat_channels": False},
    ],
    ids=["full", "unchunked", "not-repeated", "no-stats-no-index", "bare"],
)
def test_every_profile_written_by_the_mcap_writer(
    tmp_path: Path, profile: str, options: dict[str, Any]
) -> None:
    """The ``mcap`` Python writer (another independent implementation) with each of its
    summary options off, under any profile: a ROS 2 CDR channel is decoded, a JSON one
    read as bytes, every message counted from the data where no statistics say so."""
    from mcap.writer import CompressionType, IndexType, Writer
    from rosbags.typesys import Stores, get_typestore

    if "index_types" in options:
        options = {**options, "index_types": IndexType[options["index_types"]]}

    store = get_typestore(Stores.ROS2_JAZZY)
    string = store.types["std_msgs/msg/String"]
    path = tmp_path / "any.mcap"
    with path.open("wb") as f:
        w = Writer(f, compression=CompressionType.LZ4, chunk_size=200, **options)
        w.start(profile=profile, library="test")
        ros = w.register_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        text = w.register_schema("Note", "jsonschema", b'{"type": "object"}')
        c1 = w.register_channel("/chatter", "cdr", ros)
        c2 = w.register_channel("/notes", "json", text)
        for i in range(40):  # log times out of order on /notes
            w.add_message(
                c1,
                1000 + i,
                bytes(store.serialize_cdr(string(f"hi {i}"), "std_msgs/msg/String")),
                1000 + i,
                i,
            )
            w.add_message(c2, 2000 - i, f'{{"i": {i}}}'.encode(), 2000 - i, i)
        w.finish()  # type: ignore[no-untyped-call]
    info = read_bag_summary(path)
    assert {t.name: (t.msgtype, t.count, t.read) for t in info.topics} == {
        "/chatter": ("std_msgs/msg/String", 40, 40),
        "/notes": ("Note", 40, 40),
    }
    assert (info.start_ns, info.end_ns, info.damage) == (1000, 2000, ())
    source = BagSource(path)

    async def frames(source: BagSource = source) -> list[Any]:
        return [f async for f in source.frames()]

    try:
        got = anyio.run(frames)
    finally:
        source.close()
    assert source.reports == []
    assert [f.t_arrival for f in got] == sorted(f.t_arrival for f in got)
    chatter = [str(f.data["data"]) for f in got if f.meta["topic"] == "/chatter"]
    notes = [f.data for f in got if f.meta["topic"] == "/notes"]
    assert chatter == [f"hi {i}" for i in range(40)]
    assert notes == [f'{{"i": {i}}}'.encode() for i in reversed(range(40))]
