"""What an independent reader finds in a bag, per topic: ``(log time, stamp)`` of every message.

The stamp is the message's ``header.stamp`` in ns, or its log time where it has
no header or a zero stamp (BagSource's ``t_sensor`` rule). Readers:

* MCAP files (bare or in a rosbag2 directory): the ``mcap`` reader, headers
  deserialised by rosbags from each channel's own schema;
* rosbag2 sqlite3 files: Python's ``sqlite3`` over the ``messages`` table
  (zstd-decompressed with ``zstandard`` where the bag is file- or
  message-compressed), deserialised by rosbags with the bag's stored
  definitions or, without any, the Humble type store;
* ROS 1 bags: rosbags' ``AnyReader``.

None of them goes through hyperframes.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

Reference = dict[str, list[tuple[int, int]]]
"""topic -> ``(log time, stamp)`` of its messages, in the reader's order."""


def _stamp(msg: Any, log_time: int) -> int:
    header = getattr(msg, "header", None)
    stamp = getattr(header, "stamp", None)
    if stamp is None:
        return log_time
    ns = int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
    return ns or log_time


def _store(defs: dict[str, tuple[str, str]], fallback: str = "ROS2_HUMBLE") -> Any:
    """A rosbags type store of ``{type: (encoding, text)}``; the fallback store's types under."""
    from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore

    store = get_typestore(Stores.EMPTY)
    typs: dict[str, Any] = {}
    if not defs:
        return get_typestore(Stores[fallback])
    for name, (encoding, text) in defs.items():
        try:
            if encoding.endswith("idl"):
                typs.update(get_types_from_idl(text))
            else:
                typs.update(get_types_from_msg(text, name))
        except Exception:  # a schema rosbags cannot parse (a service event): no stamps
            continue
    store.register(typs)
    return store


def _deserialize(store: Any, raw: bytes, msgtype: str, cdr: bool) -> Any:
    if msgtype not in store.fielddefs:
        return None
    return store.deserialize_cdr(raw, msgtype) if cdr else store.deserialize_ros1(raw, msgtype)


def mcap_reference(files: list[Path], zstd_messages: bool = False) -> Reference:
    from mcap.reader import make_reader

    out: Reference = defaultdict(list)
    for file in files:
        with open(file, "rb") as f:
            reader = make_reader(f)
            summary = reader.get_summary()
            assert summary is not None
            defs = {s.name: (s.encoding, s.data.decode()) for s in summary.schemas.values()}
            store = _store(defs)
            for channel in summary.channels.values():
                out.setdefault(channel.topic, [])
            for schema, channel, message in reader.iter_messages(log_time_order=True):
                raw = message.data
                if zstd_messages:
                    import zstandard

                    raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
                msg = _deserialize(store, raw, schema.name, cdr=True) if schema else None
                out[channel.topic].append((message.log_time, _stamp(msg, message.log_time)))
    return dict(out)


def sqlite_reference(db: Path, metadata: dict[str, Any] | None) -> Reference:
    import zstandard

    mode = (metadata or {}).get("compression_mode", "").lower()
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "file":
            plain = Path(tmp) / "plain.db3"
            with open(db, "rb") as src, open(plain, "wb") as dst:
                zstandard.ZstdDecompressor().copy_stream(src, dst)
            db = plain
        con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
            defs = {}
            if "message_definitions" in tables:
                defs = {
                    name: (enc, text)
                    for name, enc, text in con.execute(
                        "SELECT topic_type, encoding, encoded_message_definition "
                        "FROM message_definitions"
                    )
                    if text
                }
            store = _store(defs)
            topics = {i: (n, t) for i, n, t in con.execute("SELECT id, name, type FROM topics")}
            out: Reference = defaultdict(list)
            rows = con.execute("SELECT topic_id, timestamp, data FROM messages ORDER BY timestamp")
            for tid, log_time, data in rows:
                name, msgtype = topics[tid]
                raw = bytes(data)
                if mode == "message":
                    raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
                msg = _deserialize(store, raw, msgtype, cdr=True)
                out[name].append((log_time, _stamp(msg, log_time)))
            for name, _ in topics.values():
                out.setdefault(name, [])
            return dict(out)
        finally:
            con.close()


def ros1_reference(path: Path) -> Reference:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out: Reference = defaultdict(list)
    reader = AnyReader([path], default_typestore=get_typestore(Stores.ROS1_NOETIC))
    with reader:
        for conn in reader.connections:
            out.setdefault(conn.topic, [])
        for conn, log_time, raw in reader.messages():
            msg = reader.deserialize(raw, conn.msgtype)
            out[conn.topic].append((log_time, _stamp(msg, log_time)))
    return dict(out)


def reference(path: Path) -> Reference:
    """Every message of the bag at ``path`` by the readers above (see the module docstring)."""
    if path.is_dir():
        from ruamel.yaml import YAML  # rosbags' own YAML dependency

        text = (path / "metadata.yaml").read_text()
        meta = YAML(typ="safe").load(text)["rosbag2_bagfile_information"]
        files = [path / Path(p).name for p in meta["relative_file_paths"]]
        mode = meta.get("compression_mode", "").lower()
        if meta["storage_identifier"] == "mcap":
            with tempfile.TemporaryDirectory() as tmp:
                if mode == "file":
                    files = [_unzstd(f, Path(tmp) / f.stem) for f in files]
                return _with_topics(mcap_reference(files, mode == "message"), meta)
        out: Reference = defaultdict(list)
        for file in files:
            for topic, items in sqlite_reference(file, meta).items():
                out[topic] += items
        return _with_topics(dict(out), meta)
    if path.suffix == ".mcap":
        return mcap_reference([path])
    if path.suffix == ".db3":
        return sqlite_reference(path, None)
    return ros1_reference(path)


def _unzstd(src: Path, dst: Path) -> Path:
    import zstandard

    with open(src, "rb") as i, open(dst, "wb") as o:
        zstandard.ZstdDecompressor().copy_stream(i, o)
    return dst


def _with_topics(ref: Reference, meta: dict[str, Any]) -> Reference:
    for entry in meta["topics_with_message_count"]:
        ref.setdefault(entry["topic_metadata"]["name"], [])
    return ref
