"""``export_recording``: a ``.hfr`` recording to what other tools open (ROS 2 / Foxglove
MCAP, ROS 1, MP4/MKV, WAV, PCD, Parquet, Rerun).

:func:`export_recording` is what ``hyperframes export`` runs. The writers
(:class:`Ros2McapWriter`, :class:`FoxgloveMcapWriter`, :class:`RerunSink`)
take frames and groups one at a time, so a live pipeline can feed them too;
:class:`FoxgloveServer` serves the ``foxglove`` profile live over WebSocket;
:class:`Ros2Publisher` publishes the ``ros2`` profile live as ROS 2 topics over DDS.
Third-party packages (``rosbags``, ``mcap``, ``foxglove-sdk``, ``rerun-sdk``,
PyAV) are imported only by the writer that needs them.

Frames that came from a bag go out as their original messages
(:mod:`adapters.ros._passthrough`); everything else by payload
(:mod:`recordings.outputs.encoders._kinds`). Internal sensors (``cam#keyframes``) are
never exported nor grouped. The :class:`ExportReport` counts frames read and
written per sensor and every frame left out with its reason, so a caller (the
``export`` command) can refuse an incomplete export.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fusion import Frame, SensorSpec, WallClock
from recordings.hfr import open_recording
from recordings.outputs.encoders._groups import (
    make_policy,
    sync_groups,
)
from recordings.outputs.encoders._kinds import is_internal
from recordings.outputs.files._media import export_mp4, export_pcd, remux_mp4

Target = Literal["ros2", "ros1", "foxglove", "mp4", "mkv", "wav", "pcd", "rerun", "parquet"]


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
    read: Counter[str] = field(default_factory=Counter)
    """Frames read from the recording, per sensor."""
    exported: Counter[str] = field(default_factory=Counter)
    """Frames written, per sensor (a frame is one message, file or video frame)."""
    generic: dict[str, str] = field(default_factory=dict)
    """Sensors written with a schema made for them (no standard type fits), and its name."""
    notes: list[str] = field(default_factory=list)
    """Anything else worth a line (a stored type that did not parse, ...)."""

    @property
    def frames_read(self) -> int:
        return sum(self.read.values())

    @property
    def frames_written(self) -> int:
        return sum(self.exported.values())

    @property
    def complete(self) -> bool:
        """Whether every frame read was written."""
        return not self.skipped and self.frames_written == self.frames_read

    def summary(self) -> str:
        """One line: frames written of frames read, and how many were skipped."""
        skipped = sum(self.skipped.values())
        line = f"wrote {self.frames_written} of {self.frames_read} frames read"
        if skipped:
            line += f"; {skipped} could not be exported"
        return line + f" ({self.target} -> {self.out})"


def export_recording(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    to: Target = "ros2",
    sensors: Sequence[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    groups: str = "approximate",
    reencode: bool = False,
    types: Mapping[str, str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Export the recording at ``path`` to ``out``.

    ``to``: ``"ros2"`` or ``"foxglove"`` (an MCAP file; ``"ros2"`` writes a bag
    directory when ``out`` has no ``.mcap`` suffix), ``"ros1"`` (a ROS 1 ``.bag``
    file, :mod:`recordings.outputs.files._ros1_bag`), ``"mp4"`` (one camera
    sensor), ``"pcd"`` (a folder of sweeps), ``"rerun"`` (an ``.rrd`` file,
    or a running viewer) or ``"parquet"`` (a table per time-series, CAN or
    radar sensor: :mod:`recordings.outputs.files._parquet`). ``sensors``/``start``/``end``
    select frames (``t``, ns, half-open). ``groups`` re-forms sync groups for the MCAP and Rerun
    targets: ``"approximate"``, ``"exact"``, ``"nearest:REF[:TOL_MS]"`` or
    ``"none"`` (see :func:`make_policy`). A sensor recorded as encoded video
    goes to MP4 by copying its packets; ``reencode=True`` decodes and encodes
    them again instead. Internal sensors (``cam#keyframes``) are never exported.
    ``types`` forces a sensor's message type in the MCAP profiles (``{"imu":
    "sensor_msgs/msg/Imu"}``; :mod:`recordings.outputs.encoders._shapes`), over the
    ``export_type`` its spec was recorded with. ``progress(n)`` is told every
    ``n`` frames read (for a progress bar).
    """
    from recordings.output_files import refuse_overlap, safe_output

    final = Path(out)
    refuse_overlap(final, [path])
    if to in ("ros2", "foxglove") and final.suffix != ".mcap" and final.exists():
        raise FileExistsError(f"'{final}' exists; not overwriting a bag directory")
    with safe_output(final, [path]) as staged:
        report = _export(path, staged, to, sensors, start, end, groups, reencode, types, progress)
    report.out = final
    return report


@dataclass(slots=True)
class _Plan:
    """What an export walks: the sensors asked for (checked against the recording)."""

    names: list[str]
    """The sensors to export, in the order asked."""
    specs: dict[str, SensorSpec]
    kinds: dict[str, str]
    """Each sensor's kind (``camera``, ``audio``, ...), from its spec."""
    overrides: dict[str, Any]
    """``--type`` overrides, each checked (:mod:`recordings.outputs.encoders._shapes`)."""
    encoded: set[str]
    """Sensors recorded as encoded video."""


def _plan(
    path: str | os.PathLike[str],
    summary: Any,
    sensors: Sequence[str] | None,
    types: Mapping[str, str] | None,
) -> _Plan:
    """The sensors an export of the recording at ``path`` walks; ``ValueError`` (one line)
    for a sensor, or a ``--type`` sensor, the recording does not have."""
    from recordings.hfr.video import video_sensors
    from recordings.outputs.encoders._shapes import shape_of_type

    visible = [s for s in summary.sensors if not is_internal(s)]
    names = visible if sensors is None else list(sensors)
    unknown = [s for s in names if s not in visible]
    if unknown:
        raise ValueError(
            f"recording '{path}' has no sensor {', '.join(map(repr, unknown))}; "
            f"it has {', '.join(visible) or 'none'}"
        )
    specs = {name: summary.sensors[name].spec for name in names}
    overrides = {k: shape_of_type(v) for k, v in (types or {}).items()}
    stray = [k for k in overrides if k not in visible]
    if stray:
        raise ValueError(
            f"--type names sensor(s) {', '.join(map(repr, stray))} the recording does not "
            f"have; it has {', '.join(visible) or 'none'}"
        )
    kinds: dict[str, str] = {name: specs[name].kind for name in names}
    encoded = set(video_sensors(list(summary.sensors)))
    return _Plan(names, specs, kinds, overrides, encoded)


def _export(
    path: str | os.PathLike[str],
    out: Path,
    to: Target,
    sensors: Sequence[str] | None,
    start: int | None,
    end: int | None,
    groups: str,
    reencode: bool,
    types: Mapping[str, str] | None,
    progress: Callable[[int], None] | None,
) -> ExportReport:
    """:func:`export_recording` writing to ``out`` (its staging path): plan the walk
    (:func:`_plan`), walk it once per target, each frame read counted in the report."""
    with open_recording(path) as log:
        summary = log.summary()
        plan = _plan(path, summary, sensors, types)
        names, kinds = plan.names, plan.kinds
        report = ExportReport(out, to)

        wall = summary.wall_clock
        dated = summary.dated

        def frames() -> Iterator[Frame]:
            selected = log.frames(names, start, end)
            if wall is None or not dated:
                return selected
            return (in_epoch(f, wall) if f.sensor in dated else f for f in selected)

        def counted(it: Iterable[Frame]) -> Iterator[Frame]:
            for frame in it:
                report.read[frame.sensor] += 1
                if progress is not None:
                    progress(1)
                yield frame

        window = _Window(log, start, end, counted)
        if to in ("mp4", "mkv"):
            _export_media(window, plan, to, reencode, report)
        elif to == "wav":
            picked = names if sensors is not None else [n for n in names if kinds[n] == "audio"]
            _export_wav(log, picked, kinds, out, start, end, counted, report)
        elif to == "parquet":
            from recordings.outputs.files._parquet import export_parquet, pick_tables

            names[:], single = pick_tables(names, kinds, sensors is not None, out)
            tables = export_parquet(counted(frames()), out, plan.specs, single=single)
            report.written.update(tables.rows)
            report.exported.update(tables.frames)
            report.skipped.update(tables.skipped)
        elif to == "pcd":
            for name in names:
                n, skipped = export_pcd(counted(log.frames([name], start, end)), out)
                report.written[name] = report.exported[name] = n
                report.skipped.update({(name, r): c for r, c in skipped.items()})
        elif to in ("ros2", "ros1", "foxglove", "rerun"):
            # A window may open between key frames: the writers learn each video
            # track's codec from its first packet, so no packet is left out.
            tracks = {}
            if start is not None:
                tracks = {s: _first_key_meta(log, s) for s in names if s in plan.encoded}
            # Groups over the sensors that have frames: one that never sends a
            # frame (a bag topic with no messages) would hold every group back.
            grouped = [n for n in names if summary.sensors[n].count > 0]
            _export_stream(
                to, frames, counted, grouped, plan.specs, kinds, groups, report, tracks,
                plan.overrides,
            )  # fmt: skip
        else:
            raise ValueError(f"unknown export target {to!r}")
    return report


@dataclass(slots=True)
class _Window:
    """The open recording and the ``[start, end)`` window an export reads, with the
    wrapper that counts each frame read."""

    log: Any
    start: int | None
    end: int | None
    counted: Callable[[Iterable[Frame]], Iterator[Frame]]


def _export_media(
    window: _Window, plan: _Plan, to: str, reencode: bool, report: ExportReport
) -> None:
    """``--to mp4|mkv``: one camera sensor (its recorded packets copied, or its pictures
    encoded) and at most one audio sensor beside it."""
    log, start, end, counted = window.log, window.start, window.end, window.counted
    name, sound = _media_sensors(to, plan.names, plan.kinds)
    fmt = "matroska" if to == "mkv" else "mp4"
    if name in plan.encoded and not reencode:
        track, (n, skipped) = _remux_media(window, name, sound, fmt, report)
    elif name in plan.encoded:
        from recordings.hfr.video import VideoReader

        reader = VideoReader(log)
        track = _audio_track(log, sound, name, start, start, end, counted)
        zero = None if track is None else track.timeline.zero
        n, skipped = export_mp4(
            counted(reader.frames([name], start, end)), report.out, fmt=fmt, audio=track, zero=zero
        )
        # Packets the decoder lost were read too: each counted, by reason.
        for reason, lost in reader.errors.items():
            report.read[name] += lost
            skipped[f"{reason} packet"] += lost
        if reader.last_error:
            report.notes.append(f"{name}: last decode error: {reader.last_error}")
    else:
        track = _audio_track(log, sound, name, start, start, end, counted)
        zero = None if track is None else track.timeline.zero
        n, skipped = export_mp4(
            counted(log.frames([name], start, end)), report.out, fmt=fmt, audio=track, zero=zero
        )
    report.written[name] = report.exported[name] = n
    report.skipped.update({(name, r): c for r, c in skipped.items()})
    if track is not None:
        _audio_report(report, track.sensor, track.close())


def _remux_media(
    window: _Window, name: str, sound: str | None, fmt: str, report: ExportReport
) -> tuple[Any, tuple[int, Counter[str]]]:
    """A video sensor's recorded packets copied into ``report.out`` (:func:`remux_mp4`):
    ``(audio track or None, (packets written, skipped by reason))``."""
    log, start, end, counted = window.log, window.start, window.end, window.counted
    # An MP4 starts at a key frame: from the last one at or before start.
    begin = start
    if start is not None:
        from recordings.hfr.video import VideoReader

        key_t = VideoReader(log).keyframe_before(name, start)
        if key_t is not None and key_t < start:
            begin = key_t
            report.notes.append(
                f"{name}: the MP4 starts at the key frame "
                f"{(start - key_t) / 1e6:.1f} ms before --start"
            )

    def packets() -> Iterator[Frame]:
        return log.frames([name], begin, end)  # type: ignore[no-any-return]

    track = _audio_track(log, sound, name, begin, start, end, counted)
    zero = None if track is None else track.timeline.zero
    passes = [counted(packets())]  # count the first of remux_mp4's two passes
    result = remux_mp4(
        lambda: passes.pop() if passes else packets(), report.out, fmt=fmt, audio=track, zero=zero
    )
    return track, result


def _media_sensors(to: str, names: list[str], kinds: dict[str, str]) -> tuple[str, str | None]:
    """The video sensor and the audio sensor (if any) of an MP4/MKV export."""
    sound = [n for n in names if kinds[n] == "audio"]
    video = [n for n in names if kinds[n] != "audio"]
    if len(video) != 1 or len(sound) > 1:
        raise ValueError(
            f"--to {to} takes one camera sensor and at most one audio sensor "
            f"(--sensors CAM [MIC]), got {names}"
        )
    return video[0], sound[0] if sound else None


def _audio_track(
    log: Any,
    sound: str | None,
    video: str,
    begin: int | None,
    start: int | None,
    end: int | None,
    counted: Callable[[Iterable[Frame]], Iterator[Frame]],
) -> Any:
    """The :class:`~recordings.outputs.files._audio.AudioTrack` of ``sound`` beside ``video``
    (both timed from the earlier first ``t``), or ``None`` without an audio sensor."""
    if sound is None:
        return None
    from recordings.outputs.files._audio import AudioTrack

    firsts = [
        t
        for t in (
            AudioTrack.first_t(log.frames([video], begin, end)),
            AudioTrack.first_t(log.frames([sound], start, end)),
        )
        if t is not None
    ]
    zero = min(firsts) if firsts else 0
    return AudioTrack(sound, counted(log.frames([sound], start, end)), zero)


def _audio_report(report: ExportReport, sensor: str, result: Any) -> None:
    report.written[sensor] = report.exported[sensor] = result.written
    report.skipped.update({(sensor, r): c for r, c in result.skipped.items()})
    report.notes.extend(result.notes)


def _export_wav(
    log: Any,
    names: list[str],
    kinds: dict[str, str],
    out: Path,
    start: int | None,
    end: int | None,
    counted: Callable[[Iterable[Frame]], Iterator[Frame]],
    report: ExportReport,
) -> None:
    """``--to wav``: ``OUT.wav`` for one audio sensor, else ``OUT/<sensor>.wav`` for each
    (``names``: the audio sensors asked for; any other is refused)."""
    from recordings.outputs.files._audio import export_wav
    from recordings.outputs.files._names import inside, safe_filename

    sound = [n for n in names if kinds[n] == "audio"]
    others = [f"{n} ({kinds[n]})" for n in names if kinds[n] != "audio"]
    if others or not sound:
        what = f"not {', '.join(others)}" if others else "the recording has none"
        raise ValueError(f"--to wav takes audio sensors (kind audio): {what}")
    single = out.suffix.lower() == ".wav"
    if single and len(sound) != 1:
        raise ValueError(
            f"-o {out.name} is one WAV file: name one audio sensor (--sensors), not {sound}"
        )
    if not single:
        out.mkdir(parents=True, exist_ok=True)
    for sensor in sound:
        target = out if single else inside(out, f"{safe_filename(sensor)}.wav")
        result = export_wav(counted(log.frames([sensor], start, end)), target, sensor)
        _audio_report(report, sensor, result)


def _first_key_meta(log: Any, sensor: str) -> dict[str, Any]:
    """The meta of a video sensor's first key packet (its track parameters), or ``{}``."""
    from recordings.hfr.video import META_KEY

    for frame in log.frames([sensor]):
        video = frame.meta.get(META_KEY)
        if isinstance(video, dict) and isinstance(video.get("params"), dict):
            return dict(frame.meta)
    return {}


def in_epoch(frame: Frame, wall: WallClock) -> Frame:
    """``frame`` with ``t`` and ``t_arrival`` dated (Unix-epoch ns) by the recording's wall
    clock, so viewers show the day it was recorded. ``t_sensor`` stays the sensor's own;
    a recording without anchors (its ``t`` already epoch stamps, from a bag) is not changed."""
    t_arrival = frame.t_arrival
    return dataclasses.replace(
        frame,
        t=wall.to_utc(frame.t),
        t_arrival=None if t_arrival is None else wall.to_utc(t_arrival),
    )


def _export_stream(
    to: str,
    frames: Callable[[], Iterator[Frame]],
    counted: Callable[[Iterable[Frame]], Iterator[Frame]],
    grouped: list[str],
    specs: dict[str, SensorSpec],
    kinds: dict[str, str],
    groups: str,
    report: ExportReport,
    tracks: dict[str, dict[str, Any]] | None = None,
    types: Mapping[str, str] | None = None,
) -> None:
    policy = make_policy(groups, grouped)
    if to == "rerun":
        from recordings.outputs.files._rerun import RerunSink

        with RerunSink(report.out) as sink:
            if policy is None:
                for frame in counted(frames()):
                    sink.log_frame(frame, kinds[frame.sensor])
                    report.written[frame.sensor] += 1
            else:
                in_groups: set[tuple[str, int, int]] = set()
                for group in sync_groups(counted(frames()), policy):
                    sink.log_group(group, kinds)
                    report.groups += 1
                    for frame in group.members():
                        report.written[frame.sensor] += 1
                        in_groups.add((frame.sensor, frame.seq, frame.t))
                for frame in frames():  # frames no group took: on the t timeline only
                    if (frame.sensor, frame.seq, frame.t) not in in_groups:
                        sink.log_frame(frame, kinds[frame.sensor])
                        report.written[frame.sensor] += 1
            report.skipped.update(sink.skipped)
        for sensor, n in report.written.items():
            report.exported[sensor] = n - sum(
                c for (s, _), c in sink.skipped.items() if s == sensor
            )
        return
    writer: Any
    if to == "ros2":
        from recordings.outputs.files._mcap_ros2 import Ros2McapWriter

        writer = Ros2McapWriter(report.out, types=types)
    elif to == "ros1":
        from recordings.outputs.files._ros1_bag import Ros1BagWriter

        writer = Ros1BagWriter(report.out, types=types)
    else:
        from recordings.outputs.encoders._foxglove import FoxgloveMcapWriter

        writer = FoxgloveMcapWriter(report.out, types=types)
    with writer:
        for spec in specs.values():
            writer.declare(spec)
        for sensor, meta in (tracks or {}).items():
            writer.declare_video(sensor, meta)
        for frame in counted(frames()):
            writer.write(frame, kinds[frame.sensor])
        if policy is not None:
            # A second pass: frames are written in recorded order, markers after
            # them (an MCAP reader orders by log time, so viewers interleave them).
            for group in sync_groups(frames(), policy):
                writer.write_group(group)
                report.groups += 1
    report.written.update(writer.counts)
    report.exported.update(writer.frames)
    report.skipped.update(writer.skipped)
    report.generic.update(writer.generic)
    report.notes.extend(writer.notes)
