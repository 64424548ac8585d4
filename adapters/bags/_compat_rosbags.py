"""Every reach into ``rosbags``' bag readers' internals, in one place (principle 12).

What is used, and why (none of it is in ``rosbags``' documented API, which is
``rosbag1.Reader``/``rosbag2.Reader`` with ``connections``, ``messages()``, ``close()``):

* ``rosbags.rosbag2.Reader.__new__`` with ``path``, ``is_open`` and ``storage`` set to a
  ``rosbags.rosbag2.storage_mcap.McapReader`` (a module not in ``rosbag2.__all__``):
  a ROS 2 MCAP file whose name does not end ``.mcap`` (``Reader`` picks the storage by
  suffix) is read by rosbags' own MCAP reader (:func:`rosbag2_mcap_file`);
* ``Reader.storage`` (the rosbag2 storage wrapper), its ``storages`` (one reader per file of
  a split bag: files are read one by one and matched on topic and type only, not QoS) and
  its ``metadata`` (``compression_mode``, ``compression_format``, ``ros_distro``);
* a sqlite3 storage's ``msgtypes`` rows (``name``, ``encoding``, ``msgdef``): a service
  event's stored definition, which rosbags looks up under the wrong name;
* an MCAP storage's ``chunks`` (its chunk index records, MCAP's field names) and ``bio``
  (its open file): chunks read with ``struct``, 3-6x rosbags' per-message objects;
* the ROS 1 reader's ``indexes`` (connection id -> ``(time, chunk_pos, offset)`` entries),
  ``chunks`` (``chunk_pos`` -> ``Chunk(datasize, datapos, decompressor)``), ``bio``,
  ``chunk_infos`` (``start_time``, ``end_time``, ``connection_counts``) and
  ``current_chunk`` (its one cached chunk, reset after a read error).

Every accessor answers ``None``/``False``/``[]`` when an attribute is missing, so a rosbags
release that renames one costs the fast path or the damage report, never a bag: the bag is
then read through rosbags' documented ``messages()``. Checked against rosbags
:data:`CHECKED` (``tests/interop/test_compat_rosbags.py`` runs each accessor on real bags
and fails, naming this module, on a release outside that range).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

DISTRIBUTION = "rosbags"
CHECKED = ">=0.11.8,<=0.11.9"
"""The releases this module was read against and the bag tests passed with (0.11.8, 0.11.9:
``tests/interop/test_compat_rosbags.py`` and the bag, damage and ROS 1 export tests).
0.11.6 fails two damage tests (its zstd chunk reader), 0.11.0 six of
``tests/interop/test_bag_storage.py`` (sqlite3 bags, a directory named ``*.bag``); 0.10 had
another rosbag2 reader (no ``storages``, ``metadata`` a dict)."""


# -- opening ---------------------------------------------------------------------------


def ros1_reader(path: Path) -> Any:
    """rosbags' ROS 1 reader of ``path`` (not opened)."""
    from rosbags.rosbag1 import Reader

    return Reader(path)


def rosbag2_reader(path: Path) -> Any:
    """rosbags' rosbag2 reader of a directory, a ``.mcap`` or a ``.db3`` file (not opened)."""
    from rosbags.rosbag2 import Reader

    return Reader(path)


def rosbag2_mcap_file(path: Path) -> Any:
    """rosbags' rosbag2 reader over its MCAP storage for an MCAP file of any name."""
    from rosbags.rosbag2 import Reader
    from rosbags.rosbag2.storage_mcap import McapReader

    reader = Reader.__new__(Reader)
    reader.path, reader.is_open, reader.storage = path, False, McapReader(path)
    return reader


# -- a rosbag2 reader's storage ----------------------------------------------------------


def storages(reader: Any) -> list[Any]:
    """The storage readers of an open rosbag2 reader (one per file of a directory)."""
    storage = getattr(reader, "storage", None)
    if storage is None:
        return []
    return list(getattr(storage, "storages", None) or [storage])


def metadata(reader: Any) -> Any:
    """The rosbag2 reader's metadata (``compression_mode``, ``compression_format``,
    ``ros_distro``), or ``None``."""
    return getattr(getattr(reader, "storage", None), "metadata", None)


def stored_definitions(storage: Any) -> list[tuple[str, str, str]]:
    """``(type name, encoding, definition)`` rows a sqlite3 storage keeps (else ``[]``)."""
    rows = getattr(storage, "msgtypes", None) or []
    return [(row["name"], row["encoding"], row["msgdef"]) for row in rows]


def mcap_chunks(storage: Any) -> list[Any]:
    """An MCAP storage's chunk index records (MCAP's ``ChunkIndex`` fields), else ``[]``."""
    return list(getattr(storage, "chunks", None) or [])


def mcap_file(storage: Any) -> Any:
    """An open MCAP storage's file object, or ``None``."""
    return getattr(storage, "bio", None)


# -- a ROS 1 reader ----------------------------------------------------------------------


def ros1_indexed(reader: Any) -> bool:
    """Whether an open ROS 1 reader exposes its index, chunks and file (the fast path)."""
    return all(hasattr(reader, a) for a in ("indexes", "chunks", "bio")) and reader.bio is not None


def ros1_entries(reader: Any, connection_id: int) -> list[tuple[int, int, int]]:
    """``(log time, chunk position, offset in the chunk)`` of one connection's messages."""
    return [(int(t), int(c), int(o)) for t, c, o in reader.indexes[connection_id]]


def ros1_chunk(reader: Any, chunk_pos: int) -> bytes | None:
    """The decompressed records of the chunk at ``chunk_pos``; ``None`` if the file is cut
    short inside it."""
    chunk = reader.chunks[chunk_pos]
    bio = reader.bio
    bio.seek(chunk.datapos)
    raw = bio.read(chunk.datasize)
    if len(raw) != chunk.datasize:
        return None
    return bytes(chunk.decompressor(raw))


def ros1_chunk_spans(reader: Any) -> list[tuple[int, int, int]]:
    """``(first, last log time, messages)`` of every chunk, from the ROS 1 index."""
    return [
        (int(c.start_time), int(c.end_time), sum(c.connection_counts.values()))
        for c in getattr(reader, "chunk_infos", None) or []
    ]


def forget_ros1_chunk(reader: Any) -> None:
    """Drop the ROS 1 reader's cached chunk (after a read error it may be half-replaced)."""
    if isinstance(getattr(reader, "current_chunk", None), tuple):
        reader.current_chunk = (-1, io.BytesIO())
