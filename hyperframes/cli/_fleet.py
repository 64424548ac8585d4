"""``hyperframes fleet RUN.toml [--address ray://...]``: process many recordings on Ray."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from hyperframes.cli._common import console_for, error, literal
from hyperframes.cli._units import count_arg


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fleet",
        help="process a fleet of recordings on Ray (local Ray when no --address)",
        description=(
            "Replay and synchronise every recording a RUN.toml names, run its models on a "
            "Ray actor pool (GPUs when the cluster has them) and write one results .hfr per "
            "recording. Needs the ray extra: pip install '.[ray]' in the hyperframes clone."
        ),
    )
    p.add_argument("run", help="the RUN.toml: [fleet], [sync], [[stages]], [[workers]]")
    p.add_argument(
        "--address",
        help="Ray cluster address (ray://head:10001, or 'auto'); default: start a local Ray",
    )
    p.add_argument("--local", action="store_true", help="no Ray: the plain one-machine loop")
    p.add_argument(
        "--actors", type=count_arg("--actors"), help="inference actors (overrides fleet.actors)"
    )
    p.add_argument("--overwrite", action="store_true", help="redo recordings already done")
    p.add_argument("--no-progress", action="store_true", help="hide Ray's progress bars")
    p.add_argument(
        "--num-cpus", type=count_arg("--num-cpus"), help="CPUs of the local Ray (default: all)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusion.errors import ConfigError
    from hyperframes.fleet import load_fleet_config

    console = console_for(args)
    try:
        config = load_fleet_config(args.run)
        if args.actors is not None:
            fleet = config.fleet.model_copy(update={"actors": args.actors})
            config = config.model_copy(update={"fleet": fleet})
        report = _execute(config, args, console)
    except ConfigError as err:
        error(console, err)
        return 2
    except ImportError as err:
        error(console, err)
        return 2
    # The console prints literally (markup off): styles go in Text objects.
    table = Table(title=f"fleet: {len(report.recordings)} recording(s) in {report.elapsed_s:.1f} s")
    for column in ("recording", "status", "groups", "parts", "results / error"):
        table.add_column(column, justify="right" if column in ("groups", "parts") else "left")
    for r in report.recordings:
        colour = {"written": "green", "skipped": "cyan"}.get(r.status, "red")
        table.add_row(
            literal(r.path),
            literal(r.status, colour),
            str(r.groups) if r.status == "written" else "",
            str(r.parts or ""),
            literal(r.error or r.output),
        )
    console.print(table)
    if report.plan is not None:
        console.print(literal(f"resources: {report.plan.note}"), soft_wrap=True)
    return 0 if report.ok else 1


def _execute(config: Any, args: argparse.Namespace, console: Console) -> Any:
    from hyperframes.fleet import run_fleet, run_local

    overwrite = True if args.overwrite else None
    if args.local:
        from hyperframes.cli._progress import progress_bar
        from hyperframes.fleet import expand_recordings

        total = len(expand_recordings(config.absolute().fleet.recordings))
        with progress_bar(console, "fleet --local", total, unit="recordings") as advance:
            return run_local(config, overwrite=overwrite, on_done=lambda _: advance(1))
    init: dict[str, Any] = {"include_dashboard": False}
    if args.address is None and args.num_cpus is not None:
        init["num_cpus"] = args.num_cpus
    where = args.address or "a local Ray"
    console.print(f"fleet: running on {where}")
    return run_fleet(
        config,
        address=args.address,
        progress=not (args.no_progress or args.quiet),
        overwrite=overwrite,
        **init,
    )
