"""``info`` of a recording's audio sensors: sample rate, channels, frames, samples and gaps.

An audio frame (:class:`adapters.AudioSource`) carries its rate and its first sample's
index on the stream (``meta["rate"]``, ``meta["sample_index"]``); a frame that does not
start where the last one ended is a gap (samples missing) or an overlap (repeated), as
the source counted them while recording. The frames' metas are read (not the footer
alone), so the figures are the recorded frames' own.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from hyperframes.cli._common import literal


def audio_details(log: Any) -> dict[str, dict[str, Any]]:
    """Per audio sensor: ``rate``, ``channels``, ``frames``, ``samples``, ``seconds``,
    ``gaps``/``gap_samples``, ``overlaps``/``overlap_samples`` and ``reconnects`` (frames
    that start a live stream's new connection, ``meta["segment_start"]``: a new timeline,
    so neither a gap nor an overlap)."""
    out: dict[str, dict[str, Any]] = {}
    summary = log.summary()
    for name, sensor in summary.sensors.items():
        if sensor.spec.kind != "audio" or not sensor.count:
            continue
        d: dict[str, Any] = {"rate": None, "channels": None, "frames": 0, "samples": 0}
        d |= {"gaps": 0, "gap_samples": 0, "overlaps": 0, "overlap_samples": 0}
        d["reconnects"] = 0
        end = None
        for frame in log.frames([name]):
            d["frames"] += 1
            shape: tuple[int, ...] = tuple(getattr(frame.data, "shape", ()))
            n = int(shape[1]) if len(shape) == 2 else 0
            d["samples"] += n
            if d["channels"] is None and len(shape) == 2:
                d["channels"] = int(shape[0])
            rate, index = frame.meta.get("rate"), frame.meta.get("sample_index")
            if d["rate"] is None and isinstance(rate, int):
                d["rate"] = rate
            if not isinstance(index, int):
                continue
            if frame.meta.get("segment_start"):  # a reconnect: a new timeline, not a gap
                d["reconnects"] = d.get("reconnects", 0) + 1
            elif end is not None and abs(index - end) > 1:
                key = "gap" if index > end else "overlap"
                d[f"{key}s"] += 1
                d[f"{key}_samples"] += abs(index - end)
            end = index + n
        d["seconds"] = d["samples"] / d["rate"] if d["rate"] else None
        out[name] = d
    return out


def audio_table(audio: dict[str, dict[str, Any]]) -> Table:
    """The audio sensors: rate, channels, frames, samples, seconds, gaps, overlaps and
    reconnects."""
    table = Table(title="audio")
    cols = ["sensor", "Hz", "channels", "frames", "samples", "seconds", "gaps", "overlaps"]
    cols.append("reconnects")
    for col in cols:
        table.add_column(col, justify="left" if col == "sensor" else "right")
    for name, d in sorted(audio.items()):
        table.add_row(
            literal(name),
            str(d["rate"] or "-"),
            str(d["channels"] or "-"),
            str(d["frames"]),
            str(d["samples"]),
            "-" if d["seconds"] is None else f"{d['seconds']:.3f}",
            _lost(d, "gap"),
            _lost(d, "overlap"),
            str(d.get("reconnects", 0)),
        )
    return table


def _lost(d: dict[str, Any], key: str) -> str:
    """``"2 (40.0 ms)"``: how many gaps (or overlaps) and their length."""
    n, samples = d[f"{key}s"], d[f"{key}_samples"]
    return f"{n} ({samples / (d['rate'] or 1) * 1000:.1f} ms)" if n else "0"
