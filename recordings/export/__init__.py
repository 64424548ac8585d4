"""Export a ``.hfr`` recording to what other tools open: ROS 2 / Foxglove MCAP, MP4, PCD, Rerun.

:func:`export_recording` is what ``hyperframes export`` runs. The writers
(:class:`Ros2McapWriter`, :class:`FoxgloveMcapWriter`, :class:`RerunSink`)
take frames and groups one at a time, so a live pipeline can feed them too.
Third-party packages (``rosbags``, ``mcap``, ``foxglove-sdk``, ``rerun-sdk``,
PyAV) are imported only by the writer that needs them.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fusion.frames import Frame
from recordings.export.groups import GROUP_TOPIC, group_json, group_record, make_policy, sync_groups
from recordings.export.media import export_mp4, export_pcd, write_pcd
from recordings.reader import open_recording

Target = Literal["ros2", "foxglove", "mp4", "pcd", "rerun"]

__all__ = [
    "GROUP_TOPIC",
    "ExportReport",
    "FoxgloveMcapWriter",
    "RerunSink",
    "Ros2McapWriter",
    "Target",
    "export_mp4",
    "export_pcd",
    "export_recording",
    "group_json",
    "group_record",
    "make_policy",
    "sync_groups",
    "write_pcd",
]


@dataclass(slots=True)
class ExportReport:
    """What an export wrote and what it left out."""

    out: Path
    target: str
    written: Counter[str] = field(default_factory=Counter)
    """Messages (or files, or frames) written per topic or sensor."""
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Frames left out, by ``(sensor, reason)``."""
    groups: int = 0
    """Sync-group markers written."""


def export_recording(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    to: Target = "ros2",
    sensors: Sequence[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    groups: str = "approximate",
) -> ExportReport:
    """Export the recording at ``path`` to ``out``.

    ``to``: ``"ros2"`` or ``"foxglove"`` (an MCAP file), ``"mp4"`` (one camera
    sensor), ``"pcd"`` (a folder of sweeps) or ``"rerun"`` (an ``.rrd`` file,
    or a running viewer). ``sensors``/``start``/``end`` select frames (``t``,
    ns, half-open). ``groups`` re-forms sync groups for the MCAP and Rerun
    targets: ``"approximate"``, ``"exact"``, ``"nearest:REF[:TOL_MS]"`` or
    ``"none"`` (see :func:`make_policy`).
    """
    with open_recording(path) as log:
        summary = log.summary()
        names = list(summary.sensors) if sensors is None else list(sensors)
        unknown = [s for s in names if s not in summary.sensors]
        if unknown:
            raise ValueError(
                f"recording '{path}' has no sensor {', '.join(map(repr, unknown))}; "
                f"it has {', '.join(summary.sensors) or 'none'}"
            )
        kinds: dict[str, str] = {name: summary.sensors[name].spec.kind for name in names}
        report = ExportReport(Path(out), to)

        def frames() -> Iterator[Frame]:
            return log.frames(names, start, end)

        if to == "mp4":
            if len(names) != 1:
                raise ValueError(f"--to mp4 takes one camera sensor (--sensors NAME), got {names}")
            n, skipped = export_mp4(frames(), out)
            report.written[names[0]] = n
            report.skipped.update({(names[0], r): c for r, c in skipped.items()})
        elif to == "pcd":
            for name in names:
                n, skipped = export_pcd(log.frames([name], start, end), out)
                report.written[name] = n
                report.skipped.update({(name, r): c for r, c in skipped.items()})
        elif to in ("ros2", "foxglove", "rerun"):
            _export_stream(to, frames, names, kinds, groups, report)
        else:
            raise ValueError(f"unknown export target {to!r}")
    return report


def _export_stream(
    to: str,
    frames: Any,
    names: list[str],
    kinds: dict[str, str],
    groups: str,
    report: ExportReport,
) -> None:
    policy = make_policy(groups, names)
    if to == "rerun":
        from recordings.export.rerun import RerunSink

        with RerunSink(report.out) as sink:
            if policy is None:
                for frame in frames():
                    sink.log_frame(frame, kinds[frame.sensor])
                    report.written[frame.sensor] += 1
            else:
                for group in sync_groups(frames(), policy):
                    sink.log_group(group, kinds)
                    report.groups += 1
                    for frame in group.members():
                        report.written[frame.sensor] += 1
            report.skipped.update(sink.skipped)
        return
    writer: Any
    if to == "ros2":
        from recordings.export.ros2 import Ros2McapWriter

        writer = Ros2McapWriter(report.out)
    else:
        from recordings.export.foxglove import FoxgloveMcapWriter

        writer = FoxgloveMcapWriter(report.out)
    with writer:
        for frame in frames():
            writer.write(frame, kinds[frame.sensor])
        if policy is not None:
            # A second pass: frames are written in recorded order, markers after
            # them (an MCAP reader orders by log time, so viewers interleave them).
            for group in sync_groups(frames(), policy):
                writer.write_group(group)
                report.groups += 1
    report.written.update(writer.counts)
    report.skipped.update(writer.skipped)


def __getattr__(name: str) -> Any:
    # The writers pull in optional packages; load them on first use.
    if name == "Ros2McapWriter":
        from recordings.export.ros2 import Ros2McapWriter

        return Ros2McapWriter
    if name == "FoxgloveMcapWriter":
        from recordings.export.foxglove import FoxgloveMcapWriter

        return FoxgloveMcapWriter
    if name == "RerunSink":
        from recordings.export.rerun import RerunSink

        return RerunSink
    raise AttributeError(f"module 'recordings.export' has no attribute {name!r}")
