"""Results on disk: one ``.hfr`` per recording, written whole or not at all.

Rows of a recording arrive from many tasks and actors in any order, possibly
twice (Ray retries a task whose worker died; its generator's outputs are
deduplicated by Ray, and rows are keyed by ``(part, index)`` here as well, so a
repeat replaces nothing and adds nothing). :class:`ResultCollector` holds each
recording's small rows (group info and model results, never frames) until
every part's summary row has arrived and every part has all the groups its
summary counts; then it writes the file to a temporary name in the output
folder and renames it into place, which is atomic on POSIX. A crash at any
point leaves either no results file or a complete one, so rerunning the fleet
is always safe, and a finished file is skipped on the next run when it was
made from the same input with the same config.

The results file holds, per group ``i`` in time order: a frame of sensor
``group`` (``seq`` i, ``t`` the group's time, ``meta`` its members and missing
sensors) and one frame per worker (the value as data; ``meta["error"]`` when
the model failed on that group). :func:`read_results` reads it back.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from fusion import Frame, SensorSpec
from hyperframes.fleet._codec import decode_results, read_info, result_value

GROUP_SENSOR = "group"
FORMAT_TAG = "hyperframes.fleet._results/1"


@dataclass(frozen=True, slots=True)
class ResultGroup:
    """One group of a results file."""

    index: int
    t: int
    members: Mapping[str, int | list[int]]
    """Sensor -> seq of the frame used (a list of seqs for a window sensor)."""
    missing: frozenset[str]
    results: Mapping[str, Any]
    """Worker name -> value, or a ``RuntimeError`` with the failure message."""


@dataclass(slots=True)
class RecordingOutcome:
    """What became of one input recording."""

    path: str
    output: str
    status: str = "pending"
    """``written``, ``skipped`` (already done with this config) or ``failed``."""
    groups: int = 0
    parts: int = 0
    error: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    """Summed hub counters of its parts (frames in, groups dropped...)."""


def output_path(recording: str, folder: str) -> str:
    """``<folder>/<stem>.results.hfr`` for an input recording."""
    return os.path.join(folder, Path(recording).stem + ".results.hfr")


def outputs_for(recordings: Sequence[str], folder: str) -> dict[str, str]:
    """Input -> results path; two inputs with the same file name are refused."""
    from fusion.errors import ConfigError

    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for rec in recordings:
        target = output_path(rec, folder)
        if target in seen:
            raise ConfigError(
                f"recordings {seen[target]!r} and {rec!r} would both write {target!r}; "
                "give them different file names or run them into different output folders"
            )
        seen[target] = rec
        out[rec] = target
    from recordings.output_files import refuse_overlap

    for target in out.values():  # a results file never replaces a recording of the run
        refuse_overlap(target, recordings)
    return out


def is_done(output: str, recording: str, digest: str) -> bool:
    """The results file exists, is complete, and was made from this input and config."""
    from recordings import open_recording

    if not os.path.exists(output):
        return False
    try:
        with open_recording(output) as log:
            meta = log.metadata
            indexed = log.indexed
        size = os.path.getsize(recording)
    except Exception:
        return False
    return bool(
        indexed
        and meta.get("format") == FORMAT_TAG
        and meta.get("config") == digest
        and meta.get("input_size") == size
    )


class ResultCollector:
    """Gathers rows per recording and writes each results file once it is complete."""

    def __init__(self, outputs: Mapping[str, str], *, digest: str, workers: Sequence[str]) -> None:
        self.outcomes = {rec: RecordingOutcome(rec, out) for rec, out in outputs.items()}
        self.digest = digest
        self.workers = list(workers)
        self._rows: dict[str, dict[tuple[int, int], tuple[int, bytes, bytes | None]]] = {}
        self._summaries: dict[str, dict[int, dict[str, Any]]] = {}
        self._parts: dict[str, int] = {}

    def add(self, rows: Iterable[Mapping[str, Any]]) -> list[RecordingOutcome]:
        """Take rows; return the recordings this completed (written or failed)."""
        touched: set[str] = set()
        for row in rows:
            rec = row["recording"]
            if rec not in self.outcomes or self.outcomes[rec].status != "pending":
                continue  # a late repeat of a finished recording
            self._parts[rec] = row["parts"]
            if row["index"] < 0:
                summary = msgpack.unpackb(row["summary"], raw=False)
                self._summaries.setdefault(rec, {})[row["part"]] = summary
            else:
                key = (row["part"], row["index"])
                self._rows.setdefault(rec, {}).setdefault(
                    key, (row["t"], row["info"], row["results"])
                )
            touched.add(rec)
        return [o for rec in sorted(touched) if (o := self._maybe_finish(rec)) is not None]

    def _maybe_finish(self, rec: str) -> RecordingOutcome | None:
        summaries = self._summaries.get(rec, {})
        parts = self._parts[rec]
        if len(summaries) < parts:
            return None
        rows = self._rows.get(rec, {})
        have: dict[int, int] = {}
        for part, _ in rows:
            have[part] = have.get(part, 0) + 1
        if any(have.get(p, 0) < summaries[p]["groups"] for p in summaries):
            return None  # rows still in flight behind the summary
        outcome = self.outcomes[rec]
        outcome.parts = parts
        outcome.stats = _sum_stats(summaries[p] for p in sorted(summaries))
        errors = [f"part {p}: {s['error']}" for p, s in sorted(summaries.items()) if s["error"]]
        if errors:
            outcome.status, outcome.error = "failed", "; ".join(errors)
        else:
            ordered = [rows[k] for k in sorted(rows)]
            try:
                write_results(outcome.output, ordered, self.workers, self._metadata(rec, parts))
            except Exception as err:
                outcome.status, outcome.error = "failed", f"writing results: {err}"
            else:
                outcome.status, outcome.groups = "written", len(ordered)
        self._rows.pop(rec, None)
        self._summaries.pop(rec, None)
        return outcome

    def _metadata(self, rec: str, parts: int) -> dict[str, Any]:
        return {
            "format": FORMAT_TAG,
            "input": rec,
            "input_size": os.path.getsize(rec),
            "config": self.digest,
            "parts": parts,
            "workers": self.workers,
        }

    def pending(self) -> list[str]:
        return [r for r, o in self.outcomes.items() if o.status == "pending"]


def _sum_stats(summaries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"frames_in": 0, "groups_dropped": 0, "replay_errors": {}}
    for s in summaries:
        total["frames_in"] += s.get("frames_in", 0)
        total["groups_dropped"] += s.get("groups_dropped", 0)
        for k, v in (s.get("replay_errors") or {}).items():
            total["replay_errors"][k] = total["replay_errors"].get(k, 0) + v
    return total


def write_results(
    output: str,
    rows: Sequence[tuple[int, bytes, bytes | None]],
    workers: Sequence[str],
    metadata: Mapping[str, Any],
) -> None:
    """Write ``(t, info, results)`` rows as a results file: temp name, then rename."""
    from recordings import Recorder
    from recordings.output_files import safe_output

    specs = [SensorSpec(GROUP_SENSOR), *(SensorSpec(w) for w in workers)]
    inputs = [metadata["input"]] if isinstance(metadata.get("input"), str) else []
    with (
        safe_output(output, inputs) as staged,
        Recorder(staged, sensors=specs, metadata=dict(metadata), flush_interval=None) as rec,
    ):
        for i, (t, info, results) in enumerate(rows):
            d = read_info(info)
            meta = {"members": d["members"], "missing": d["missing"]}
            rec.write(Frame(GROUP_SENSOR, i, t, None, meta=meta))
            if results is None:
                continue
            for name, frame in decode_results(results).items():
                rec.write(Frame(name, i, t, frame.data, meta=dict(frame.meta)))


def read_results(path: str | os.PathLike[str]) -> list[ResultGroup]:
    """Every group of a results file, in order, with each worker's value or error."""
    from recordings import open_recording

    groups: list[ResultGroup] = []
    current: dict[str, Any] | None = None
    results: dict[str, Any] = {}

    def flush() -> None:
        if current is not None:
            groups.append(ResultGroup(results=dict(results), **current))

    with open_recording(path, strict=True) as log:
        for frame in log.frames():
            if frame.sensor == GROUP_SENSOR:
                flush()
                results.clear()
                current = {
                    "index": frame.seq,
                    "t": frame.t,
                    "members": frame.meta["members"],
                    "missing": frozenset(frame.meta["missing"]),
                }
            else:
                results[frame.sensor] = result_value(frame)
        flush()
    return groups
