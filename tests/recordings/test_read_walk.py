"""Reading one chunk walks reader -> chunk reader (-> limits) and back (issue 36, DESIGN 13).

The walk is traced, not read off the imports: every Python call made while a
chunk is read is recorded with ``sys.setprofile`` and mapped to its room:

* the shell, :mod:`recordings.hfr._reader` (``pread`` into a scratch buffer,
  threads);
* the sans-I/O chunk reader, :mod:`recordings.hfr._chunk_reader`, with the two
  helpers only it calls (:mod:`recordings.hfr._chunk_records`,
  :mod:`recordings.hfr._chunk_columns`);
* the limits, :mod:`recordings.hfr._limits`, the one module that compares a size
  with a limit or raises :class:`~recordings.errors.LimitExceeded`.

The format's values (:mod:`recordings.hfr._format`: constants and the CRC
function; :mod:`recordings.hfr._layout`: the :class:`ChunkMeta` value) are leaves
with no decision in them and belong to no room. Every call from one room into
another must be shell -> chunk reader or chunk reader -> limits: the shell never
asks the limits itself, the limits never call back.
"""

from __future__ import annotations

import ast
import io
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from fusion import Frame
from recordings import CorruptChunk, LimitExceeded, Recorder, open_recording, read_stream
from recordings.hfr._layout import ChunkMeta

ROOT = Path(__file__).resolve().parents[2]
HFR = "recordings.hfr."
ROOMS = {
    "recordings.hfr._reader": "reader",
    "recordings.hfr._chunk_reader": "chunk reader",
    "recordings.hfr._chunk_records": "chunk reader",
    "recordings.hfr._chunk_columns": "chunk reader",
    "recordings.hfr._limits": "limits",
}
VALUES = frozenset({"recordings.hfr._format", "recordings.hfr._layout"})
ALLOWED = {("reader", "chunk reader"), ("chunk reader", "limits")}
HELPERS = ("recordings.hfr._chunk_records", "recordings.hfr._chunk_columns")
STREAM_ROOMS = {
    **{m: r for m, r in ROOMS.items() if r != "reader"},
    "recordings.hfr._stream": "stream",
    "recordings.hfr._parser": "metas",
}
"""The streaming reader is the other shell; with no index it reads each chunk's meta
from its record (:mod:`recordings.hfr._parser`) before asking the chunk reader."""
STREAM_ALLOWED = {("stream", "chunk reader"), ("stream", "metas"), ("chunk reader", "limits")}
READ_SIDE = (
    "_reader",
    "_chunk_reader",
    "_chunk_records",
    "_chunk_columns",
    "_locate",
    "_parser",
    "_stream",
    "_footer",
    "_chunk_table",
    "_stamp_index",
    "_details",
    "_stamps",
    "_verify",
    "_summary",
    "_seek",
)
"""The read side's modules: none has a size limit of its own (a ``max_bytes``)."""


def traced(action: Callable[[], Any]) -> tuple[list[str], list[tuple[str, str]]]:
    """The modules of ``recordings.hfr`` entered by ``action`` in call order, and every
    (caller module, callee module) pair of a call between two of them."""
    entered: list[str] = []
    calls: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(HFR):
            return
        entered.append(module)
        back = frame.f_back
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if caller.startswith(HFR) and caller != module:
            calls.append((caller, module))

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return entered, calls


def room(module: str, rooms: dict[str, str] = ROOMS) -> str:
    assert module in rooms or module in VALUES, f"reading a chunk entered {module}"
    return rooms.get(module, "value")


def walk(entered: list[str]) -> list[str]:
    """The rooms in the order entered, repeats and values left out."""
    out: list[str] = []
    for name in map(room, entered):
        if name != "value" and (not out or out[-1] != name):
            out.append(name)
    return out


def assert_walk(
    entered: list[str],
    calls: list[tuple[str, str]],
    rooms: dict[str, str] = ROOMS,
    allowed: set[tuple[str, str]] = ALLOWED,
) -> None:
    names = set(rooms.values())
    assert {room(m, rooms) for m in entered} - {"value"} <= names
    for caller, callee in calls:
        a, b = room(caller, rooms), room(callee, rooms)
        if "value" in (a, b) or a == b:
            continue
        assert (a, b) in allowed, f"{caller} called {callee}: {a} -> {b} is not on the walk"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Chunks holding columns (IMU), msgpack records (dicts) and blob arrays (camera)."""
    path = tmp_path_factory.mktemp("walk") / "mixed.hfr"
    rng = np.random.default_rng(7)
    with Recorder(path, chunk_bytes=256 << 10) as rec:
        for i in range(400):
            rec.write(Frame("imu", i, i * 1_000_000, rng.random(6)))
            if i % 4 == 0:
                rec.write(Frame("can", i // 4, i * 1_000_000 + 1, {"id": i % 9}, meta={"k": i}))
            if i % 20 == 0:
                image = rng.integers(0, 255, (120, 160, 3), np.uint8)
                rec.write(Frame("cam", i // 20, i * 1_000_000 + 2, image))
    return path


def test_reading_a_chunk_walks_the_reader_the_chunk_reader_and_the_limits(mixed: Path) -> None:
    with open_recording(mixed, readahead=0) as log:
        chunks = list(log.chunks)
        assert len(chunks) > 1
        log.read_chunk(chunks[0])  # the decoder's modules loaded before tracing
        for chunk in chunks:
            got: list[Frame] = []
            entered, calls = traced(_reading(log.read_chunk, chunk, got))
            assert len(got) == chunk.count
            assert_walk(entered, calls)
            assert walk(entered)[0] == "reader"
            assert {"chunk reader", "limits"} <= set(walk(entered))

            def window(c: ChunkMeta = chunk) -> Any:
                return list(
                    log.decode_chunk(c).frames(frozenset({"imu", "cam"}), c.t_start + 1, c.t_end)
                )

            assert_walk(*traced(window))


def _reading(
    read: Callable[[ChunkMeta], list[Frame]], chunk: ChunkMeta, into: list[Frame]
) -> Callable[[], None]:
    return lambda: into.extend(read(chunk))


def test_a_damaged_chunk_and_one_over_a_limit_keep_to_the_walk(mixed: Path, tmp_path: Path) -> None:
    data = bytearray(mixed.read_bytes())
    with open_recording(mixed) as log:
        chunk = log.chunks[1]
        data[chunk.offset + chunk.stored_size // 2 + 200] ^= 0xFF  # inside its payload
    broken = tmp_path / "broken.hfr"
    broken.write_bytes(bytes(data))
    with open_recording(broken, readahead=0) as log:
        err: list[BaseException] = []
        damaged = log.chunks[1]
        entered, calls = traced(lambda: _catch(lambda: log.read_chunk(damaged), err))
        assert isinstance(err[0], CorruptChunk)
        assert "fails its CRC" in str(err[0])
        assert_walk(entered, calls)
    with open_recording(mixed, readahead=0, max_chunk_frames=5) as log:
        chunk = log.chunks[0]
        err = []
        entered, calls = traced(lambda: _catch(lambda: log.read_chunk(chunk), err))
        assert isinstance(err[0], LimitExceeded)
        assert_walk(entered, calls)
        assert _raised_in(err[0]) == "recordings.hfr._limits"


def test_readahead_keeps_to_the_walk_and_asks_the_limits_through_the_chunk_reader(
    mixed: Path,
) -> None:
    """Reading every frame with readahead in threads: the threads' decodes are not
    traced (``setprofile`` is per thread); the shell's decisions are."""
    with open_recording(mixed, readahead=2) as log:
        chunks = log.select()
        n: list[int] = []

        def read() -> None:
            for frames in log._ahead.run(chunks, log._try_decode, 2, log.limits):
                n.append(len(list(frames[1].frames())))  # type: ignore[union-attr]

        entered, calls = traced(read)
        assert sum(n) == sum(c.count for c in chunks)
        assert_walk(entered, calls)
        assert ("recordings.hfr._chunk_reader", "recordings.hfr._limits") in calls


def test_the_stream_reader_is_a_shell_of_the_same_chunk_reader(mixed: Path) -> None:
    data = mixed.read_bytes()
    got: list[Frame] = []
    stream = read_stream(io.BytesIO(data))
    entered, calls = traced(lambda: got.extend(stream.frames()))
    assert len(got) == 400 + 100 + 20
    assert not stream.damage
    assert_walk(entered, calls, STREAM_ROOMS, STREAM_ALLOWED)
    assert ("recordings.hfr._chunk_reader", "recordings.hfr._limits") in calls
    stream = read_stream(io.BytesIO(data), max_chunk_frames=5)
    entered, calls = traced(lambda: got.extend(stream.frames()))
    assert stream.damage
    assert all(isinstance(err, LimitExceeded) for err in stream.damage)
    assert {_raised_in(err) for err in stream.damage} == {"recordings.hfr._limits"}
    assert_walk(entered, calls, STREAM_ROOMS, STREAM_ALLOWED)


def _catch(action: Callable[[], Any], into: list[BaseException]) -> None:
    try:
        action()
    except Exception as err:
        into.append(err)


def _raised_in(err: BaseException) -> str:
    tb = err.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals["__name__"])


def _library() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted((ROOT / "recordings").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out.append((module.removesuffix(".__init__"), ast.parse(path.read_text("utf-8"))))
    return out


def test_only_the_limits_raise_limit_exceeded_or_compare_with_a_limit() -> None:
    """The footer's parts (chunk table, stamp index, frame details) included: they ask
    :meth:`~recordings.hfr._limits.ReadLimits.footer_fits`, not a ``max_bytes`` of
    their own."""
    limit_names = {"max_chunk_bytes", "max_meta_bytes", "max_decoded_bytes", "max_chunk_frames"}
    read_side = {f"recordings.hfr.{m}" for m in READ_SIDE}
    for module, tree in _library():
        if module == "recordings.hfr._limits":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "LimitExceeded":
                raise AssertionError(f"{module}:{node.lineno} raises LimitExceeded itself")
            if isinstance(node, ast.Compare):
                for part in ast.walk(node):
                    name = getattr(part, "attr", getattr(part, "id", None))
                    if name in limit_names or (name == "max_bytes" and module in read_side):
                        raise AssertionError(f"{module}:{node.lineno} compares with {name}")


def test_the_chunk_readers_helpers_are_imported_by_the_chunk_reader_only() -> None:
    """Lazy and ``TYPE_CHECKING`` imports included; the records helper builds the
    column groups, so it may import the columns helper."""
    importers: dict[str, set[str]] = {h: set() for h in HELPERS}
    for module, tree in _library():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for helper in HELPERS:
                if helper in names:
                    importers[helper].add(module)
    assert importers["recordings.hfr._chunk_records"] == {"recordings.hfr._chunk_reader"}
    assert importers["recordings.hfr._chunk_columns"] <= {
        "recordings.hfr._chunk_reader",
        "recordings.hfr._chunk_records",
    }
