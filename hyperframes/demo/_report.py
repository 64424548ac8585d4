"""A one-page PNG report of a pipeline run: is it synchronised, how late, how fast.

:func:`write_report` draws four panels from plain arrays in a
:class:`ReportData` (no pipeline objects, so any run, live or replayed, can
fill one):

1. **Alignment error over time**, per sensor: aligned ``t`` minus the true
   capture time, for every frame. Flat lines near zero mean the clock models
   found each sensor's offset and skew.
2. **Group spread**: the spread of member times within each group, once from
   the aligned times and once from the true capture times. When the two
   histograms coincide, the grouping saw the world as it was; the gap between
   them is what bad clocks would add.
3. **Latency**: from capture of a group's reference frame to its result leaving
   the pipeline, per group.
4. **Throughput per stage**, in items per wall-clock second.

matplotlib is imported only when a report is drawn, with the non-interactive
Agg backend, so importing :mod:`fusion` never pulls it in and a headless
machine needs no display.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ReportData", "write_report"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


@dataclass(frozen=True, slots=True)
class ReportData:
    """What a report shows; times in seconds, durations in milliseconds."""

    title: str
    alignment: Mapping[str, tuple[np.ndarray, np.ndarray]]
    """Per sensor: (true capture time s, alignment error ms), one entry per frame."""
    spread_ms: np.ndarray
    """Per group: spread of its members' aligned times."""
    true_spread_ms: np.ndarray
    """Per group: spread of its members' true capture times."""
    latency: tuple[np.ndarray, np.ndarray]
    """(group time s, capture-to-result latency ms), one entry per group."""
    throughput: Mapping[str, float]
    """Stage name -> items per wall-clock second, in pipeline order."""
    realtime: Mapping[str, float] = field(default_factory=dict)
    """Stage name -> items per second the sensors produce in real time: the rate
    a live run must sustain (drawn as a tick on the stage's bar)."""
    tolerance_ms: float | None = None
    """The sync policy's matching tolerance, drawn on the spread panel."""
    latency_label: str = "capture -> result (ms)"
    subtitle: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Per stage: a short label shown next to its bar (e.g. ``"98 groups"``)."""


def write_report(data: ReportData, path: str | os.PathLike[str], *, dpi: int = 100) -> Path:
    """Draw ``data`` as a 2 x 2 figure and save it as PNG at ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    out = Path(path)
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5), dpi=dpi)
    try:
        _alignment(axes[0][0], data)
        _spread(axes[0][1], data)
        _latency(axes[1][0], data)
        _throughput(axes[1][1], data)
        fig.suptitle(data.title, fontsize=14, fontweight="bold")
        if data.subtitle:
            fig.text(0.5, 0.935, data.subtitle, ha="center", fontsize=10, color="#444444")
        fig.tight_layout(rect=(0, 0, 1, 0.93))
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, format="png")
    finally:
        plt.close(fig)
    return out


def _alignment(ax: Any, data: ReportData) -> None:
    worst = 0.0
    for i, (name, (t_s, err_ms)) in enumerate(data.alignment.items()):
        if len(err_ms) == 0:
            continue
        p99 = float(np.percentile(np.abs(err_ms), 99))
        worst = max(worst, float(np.max(np.abs(err_ms))))
        ax.plot(
            t_s,
            err_ms,
            ".",
            markersize=2.5 if len(err_ms) > 500 else 4,
            color=_COLOURS[i % len(_COLOURS)],
            alpha=0.7,
            label=f"{name}: median {np.median(err_ms):+.3f} ms, |p99| {p99:.3f} ms",
        )
    ax.axhline(0.0, color="black", linewidth=0.8)
    limit = max(1.0, worst * 1.15)
    ax.set_ylim(-limit, limit)
    ax.set_title("Timestamp alignment error per sensor (aligned t - true capture time)")
    ax.set_xlabel("true capture time (s)")
    ax.set_ylabel("error (ms)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, markerscale=3)


def _spread(ax: Any, data: ReportData) -> None:
    aligned, true = np.asarray(data.spread_ms), np.asarray(data.true_spread_ms)
    top = max([float(np.max(a)) for a in (aligned, true) if len(a)] + [data.tolerance_ms or 1.0])
    bins = np.linspace(0.0, top * 1.05, 40)
    if len(true):
        ax.hist(true, bins=bins, color="#bbbbbb", label="true capture times")
    if len(aligned):
        ax.hist(aligned, bins=bins, histtype="step", linewidth=2, color="#1f77b4",
                label="aligned times (what the hub grouped)")  # fmt: skip
    if data.tolerance_ms is not None:
        ax.axvline(data.tolerance_ms, color="#d62728", linestyle="--",
                   label=f"tolerance {data.tolerance_ms:g} ms")  # fmt: skip
    if len(aligned) and len(true) == len(aligned):
        diff = np.abs(aligned - true)
        ax.text(0.98, 0.45, f"|aligned - true| per group:\nmedian {np.median(diff):.3f} ms, "
                f"max {np.max(diff):.3f} ms", transform=ax.transAxes, ha="right", fontsize=9,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "#cccccc"})  # fmt: skip
    ax.set_title(f"Group spread ({len(aligned)} groups): max - min member time")
    ax.set_xlabel("spread (ms)")
    ax.set_ylabel("groups")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)


def _latency(ax: Any, data: ReportData) -> None:
    t_s, lat_ms = (np.asarray(a) for a in data.latency)
    if len(lat_ms):
        ax.plot(t_s, lat_ms, ".-", color="#2ca02c", markersize=3, linewidth=0.6)
        for q, style in ((50, "--"), (99, ":")):
            value = float(np.percentile(lat_ms, q))
            ax.axhline(value, color="#555555", linestyle=style, linewidth=1,
                       label=f"p{q} {value:.1f} ms")  # fmt: skip
        ax.set_ylim(0, float(np.max(lat_ms)) * 1.15)
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"Pipeline latency per group ({data.latency_label})")
    ax.set_xlabel("group time (s)")
    ax.set_ylabel("latency (ms)")
    ax.grid(alpha=0.3)


def times_real_time(ratio: float) -> str:
    """``x1.45``, ``x12.3``, ``x480``: enough digits that x1.45 never reads as x1."""
    if ratio < 10:
        return f"x{ratio:.2f}"
    if ratio < 100:
        return f"x{ratio:.1f}"
    return f"x{ratio:,.0f}"


def _throughput(ax: Any, data: ReportData) -> None:
    names = list(data.throughput)
    values = [data.throughput[n] for n in names]
    positions = np.arange(len(names))
    ax.barh(positions, values, color=[_COLOURS[i % len(_COLOURS)] for i in range(len(names))])
    ax.set_yticks(positions, names)
    ax.invert_yaxis()
    top = max(values, default=1.0) or 1.0
    marked = False
    for y, (name, value) in enumerate(zip(names, values, strict=True)):
        need = data.realtime.get(name)
        parts = [f" {value:,.0f}/s"]
        if need:
            parts.append(f"{times_real_time(value / need)} real time")
            ax.plot([need, need], [y - 0.4, y + 0.4], color="black", linewidth=2,
                    label=None if marked else "real-time rate of the sensors")  # fmt: skip
            marked = True
        if data.notes.get(name):
            parts.append(data.notes[name])
        ax.text(value, y, ", ".join(parts), va="center", fontsize=8)
    # Log scale: a stage handling a few groups per second and one handling
    # thousands of frames both stay readable.
    ax.set_xscale("log")
    low = min([v for v in (*values, *data.realtime.values()) if v > 0], default=1.0)
    ax.set_xlim(low / 3, top * 60)
    ax.set_title("Throughput per stage (items per wall-clock second)")
    ax.set_xlabel("items / s (log scale)")
    if marked:  # below the axes: the bars' labels run to the right edge
        ax.legend(loc="upper right", bbox_to_anchor=(1.0, -0.16), fontsize=8, frameon=False)
    ax.grid(alpha=0.3, axis="x")
