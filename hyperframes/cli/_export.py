"""``hyperframes export FILE.hfr -o OUT``: a recording as ROS 2 / Foxglove MCAP, MP4/MKV, WAV,
PCD or Rerun.

Examples::

    hyperframes export s.hfr -o s.mcap                      # ROS 2 CDR MCAP (ros2 bag play)
    hyperframes export s.hfr -o s_bag                       # the same as a bag directory
    hyperframes export s.hfr -o s.bag                       # a ROS 1 bag (rosbag 2.0 format)
    hyperframes export s.hfr -o s_bag --format ros2         # a rosbag2 directory, whatever its name
    hyperframes export s.hfr -o s.fox.mcap --profile foxglove
    hyperframes export s.hfr -o cam.mp4 --to mp4 --sensors cam
    hyperframes export s.hfr -o cam.mkv --to mkv --sensors cam mic   # video + audio
    hyperframes export s.hfr -o mic.wav --to wav --sensors mic       # or -o wavs/: each
    hyperframes export s.hfr -o s.mcap --sensors cam lidar --start 10 --end 20
    hyperframes export s.hfr -o sweeps/ --to pcd --sensors lidar
    hyperframes export s.hfr -o s.rrd --view rerun          # viewer if running, else s.rrd
    hyperframes export s.hfr -o tables/ --to parquet        # a .parquet per CAN/series/radar sensor
    hyperframes export s.hfr -o sig.parquet --sensors can.ExampleMessage   # one sensor, one file
    hyperframes export s.hfr -o s.mcap --type imu=sensor_msgs/msg/Imu

Time series whose fields fit a standard message go out as it (ax..gz:
sensor_msgs/Imu, lat/lon/alt: NavSatFix, poses: PoseStamped/Odometry; the
table is in docs/interop.md); --type SENSOR=TYPE forces one, or
std_msgs/msg/Float64MultiArray for a plain array.

Every frame read is written or accounted for: when some cannot be exported,
a table gives the count and reason per sensor and the command exits 1
(``--skip-unsupported`` accepts that and exits 0). The last line always says
how many frames were written of how many were read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from hyperframes.cli._common import NamesAction
from hyperframes.cli._units import seconds_arg

if TYPE_CHECKING:
    from recordings.outputs import ExportReport, Target


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export a .hfr recording to ROS 2/Foxglove MCAP, MP4, PCD or Rerun",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .hfr recording")
    p.add_argument("-o", "--output", required=True, help="output file (or folder for --to pcd)")
    p.add_argument("--out", dest="output", help=argparse.SUPPRESS)
    p.add_argument(
        "--profile",
        choices=("ros2", "foxglove"),
        default="ros2",
        help="MCAP flavour: ROS 2 CDR messages (default) or Foxglove schemas",
    )
    p.add_argument(
        "--format",
        dest="bag_format",
        choices=("ros1", "ros2"),
        help="a bag: ros1 (a ROS 1 .bag file, the default for an output named *.bag) or ros2 "
        "(rosbag2 MCAP: a bag directory unless the output ends in .mcap)",
    )
    p.add_argument(
        "--to",
        choices=("mcap", "mp4", "mkv", "wav", "pcd", "parquet"),
        default="mcap",
        help="mcap (default); mp4 or mkv for one camera sensor (and one audio sensor beside "
        "it); wav for audio sensors (a file each); pcd for point-cloud sweeps; parquet for "
        "time-series, CAN and radar tables (a file per sensor; the default for -o *.parquet)",
    )
    p.add_argument("--view", choices=("rerun",), help="log groups to Rerun instead of a file")
    p.add_argument(
        "--sensors",
        nargs="+",
        action=NamesAction,
        metavar="NAME",
        help="sensors to export (default: all)",
    )
    p.add_argument(
        "--start", type=seconds_arg("--start"), help="seconds from the recording's start"
    )
    p.add_argument("--end", type=seconds_arg("--end"), help="seconds from the recording's start")
    p.add_argument(
        "--groups",
        default="approximate",
        help="re-form sync groups for the markers topic: approximate (default), exact, "
        "nearest:REF[:TOL_MS] or none",
    )
    p.add_argument(
        "--type",
        dest="types",
        action="append",
        default=[],
        metavar="SENSOR=TYPE",
        help="export SENSOR's time series as TYPE (sensor_msgs/msg/Imu, sensor_msgs/msg/NavSatFix, "
        "nav_msgs/msg/Odometry, geometry_msgs/msg/PoseStamped, std_msgs/msg/Float64MultiArray); "
        "repeatable",
    )
    p.add_argument(
        "--skip-unsupported",
        action="store_true",
        help="exit 0 even when some frames cannot be exported (they are still listed)",
    )
    p.add_argument(
        "--reencode",
        action="store_true",
        help="--to mp4 of an encoded-video sensor: decode and encode again instead of copying",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import HyperframesError
    from hyperframes.cli._common import console_for, error

    console = console_for(args)
    if args.to == "mcap" and Path(args.output).suffix.lower() == ".parquet":
        args.to = "parquet"  # -o x.parquet: a table, not an MCAP
    try:
        report = _export(args, console, _target(args))
    except (OSError, HyperframesError, ValueError, RuntimeError) as err:
        error(console, err)
        return 2
    return _report(args, console, report)


def _target(args: argparse.Namespace) -> Target:
    """What the options ask to write: ``--view``, else ``--to``, an MCAP's profile or bag format."""
    target: Target = "rerun" if args.view == "rerun" else args.to
    if args.to == "mcap" and args.view is None:
        target = args.profile
        if args.bag_format is not None:
            target = args.bag_format
        elif args.profile == "ros2" and Path(args.output).suffix.lower() == ".bag":
            target = "ros1"  # a .bag file is a ROS 1 bag; --format ros2 for a rosbag2 directory
    return target


def _export(args: argparse.Namespace, console: Any, target: Target) -> ExportReport:
    """Export the selected span and sensors, with a progress bar over the frames selected."""
    from hyperframes.cli._progress import progress_bar
    from recordings import open_recording
    from recordings.outputs import export_recording, parse_types

    sensors = args.sensors or None
    types = parse_types(args.types)
    with open_recording(args.file) as log:
        summary = log.summary()
        t0 = summary.t_start or 0
        total = sum(s.count for n, s in summary.sensors.items() if sensors is None or n in sensors)
    start = None if args.start is None else t0 + int(args.start * 1e9)
    end = None if args.end is None else t0 + int(args.end * 1e9)
    with progress_bar(console, f"export {Path(args.file).name}", total) as advance:
        return export_recording(
            args.file,
            args.output,
            to=target,
            sensors=sensors,
            start=start,
            end=end,
            groups=args.groups,
            reencode=args.reencode,
            types=types,
            progress=advance,
        )


def _sensor_table(report: ExportReport) -> Table:
    """Frames read, written and not exported per sensor."""
    from hyperframes.cli._common import literal

    table = Table(title=literal(f"exported to {report.out} ({report.target})"))
    table.add_column("sensor")
    table.add_column("read", justify="right")
    table.add_column("written", justify="right")
    table.add_column("not exported", justify="right")
    skipped_by: dict[str, int] = {}
    for (sensor, _), n in report.skipped.items():
        skipped_by[sensor] = skipped_by.get(sensor, 0) + n
    for name in sorted(set(report.read) | set(report.exported) | set(skipped_by)):
        table.add_row(
            literal(name),
            str(report.read.get(name, 0)),
            str(report.exported.get(name, 0)),
            str(skipped_by.get(name, 0) or ""),
        )
    return table


def _report(args: argparse.Namespace, console: Any, report: ExportReport) -> int:
    """What was exported, generic types, notes, what was not and why; the exit status."""
    from hyperframes.cli._common import error, literal, printable, warn

    console.print(_sensor_table(report))
    if report.groups:
        console.print(f"{report.groups} sync groups")
    for sensor, msgtype in sorted(report.generic.items()):
        console.print(
            literal(f"{sensor}: no standard type fits; written as {msgtype} (every field kept)"),
            soft_wrap=True,
        )
    for note in report.notes:
        warn(console, "note:", note)
    if report.skipped:
        reasons = Table(title="frames not exported")
        reasons.add_column("sensor")
        reasons.add_column("frames", justify="right")
        reasons.add_column("reason")
        for (sensor, reason), n in sorted(report.skipped.items()):
            reasons.add_row(literal(sensor), str(n), literal(reason))
        console.print(reasons)
    print(printable(report.summary(), lines=True))  # the final result: printed with -q too
    if report.frames_read == 0:
        where = []
        if args.start is not None or args.end is not None:
            where.append(f"--start {args.start} --end {args.end}")
        if args.sensors:
            where.append("--sensors " + " ".join(args.sensors))
        warn(
            console,
            "warning:",
            f"nothing exported: {' '.join(where) or 'the recording'} selects no frames",
        )
    if report.frames_written == 0:
        return 1
    if not report.complete and not args.skip_unsupported:
        error(console, "some frames were not exported (--skip-unsupported accepts that)")
        return 1
    return 0
