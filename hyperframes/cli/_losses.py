"""What was lost, said the same way by every command: a table, a JSON map, a summary line.

A ledger comes from a running pipeline (:class:`~fusion.LedgerStatistics`, one per
sensor) or from a recording's footer (:class:`~recordings.hfr._ledgers.SensorLedger`,
which adds the pipeline's own drops). Both print through here, so ``record``'s
final lines, ``info``'s table and the ``--json`` documents use the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console

from fusion import LedgerStatistics
from hyperframes.cli._common import literal, warn
from recordings.hfr import SensorLedger

if TYPE_CHECKING:  # rich's tables load when one is printed
    from rich.table import Table

Ledger = LedgerStatistics | SensorLedger


def _parts(ledger: Ledger) -> tuple[LedgerStatistics, dict[str, int]]:
    if isinstance(ledger, SensorLedger):
        return ledger.source, ledger.losses()
    return ledger, dict(ledger.lost)


def reasons_text(losses: Mapping[str, int]) -> str:
    """``kernel_overflow 20, bad_length 1`` (largest first)."""
    items = sorted(losses.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{reason} {n:,}" for reason, n in items if n)


def loss_line(name: str, ledger: Ledger) -> str | None:
    """``imu: lost 21 of 1,000 datagrams (kernel_overflow 20, bad_length 1)``, or None."""
    source, losses = _parts(ledger)
    total = sum(losses.values())
    if not total:
        return None
    unit = source.unit if source.received == 1 else f"{source.unit}s"
    return f"{name}: lost {total:,} of {source.received:,} {unit} ({reasons_text(losses)})"


def print_losses(console: Console, ledgers: Mapping[str, Ledger]) -> int:
    """One warning line per sensor that lost anything; returns how many units were lost."""
    lost = 0
    for name, ledger in sorted(ledgers.items()):
        line = loss_line(name, ledger)
        if line is not None:
            warn(console, "lost:", line)
            lost += sum(_parts(ledger)[1].values())
    return lost


def ledger_table(ledgers: Mapping[str, Ledger], title: str = "input ledger") -> Table:
    """Per sensor: what its source received, made frames of, and lost by reason."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("sensor", "unit", "received", "frames", "lost", "reasons"):
        table.add_column(col, justify="left" if col in ("sensor", "unit", "reasons") else "right")
    for name, ledger in sorted(ledgers.items()):
        source, losses = _parts(ledger)
        table.add_row(
            literal(name),
            literal(source.unit),
            f"{source.received:,}",
            f"{source.frames:,}",
            f"{sum(losses.values()):,}",
            literal(reasons_text(losses) or "-"),
        )
    return table


def ledger_doc(ledgers: Mapping[str, Ledger]) -> dict[str, Any]:
    """The ``ledger`` map of ``--json`` documents."""
    out: dict[str, Any] = {}
    for name, ledger in sorted(ledgers.items()):
        source, losses = _parts(ledger)
        doc = source.as_dict()
        doc["lost"] = dict(sorted(losses.items()))
        doc["lost_total"] = sum(losses.values())
        out[name] = doc
    return out


def skipped_lines(
    errors: Mapping[str, int], messages: Mapping[str, Mapping[str, int]]
) -> list[str]:
    """What a source skipped, each distinct message once: ``2 (damaged): <message>`` per
    message kept (:attr:`fusion.Source.error_messages`, the first few of a reason), then
    ``5 more (damaged) with other messages`` for the rest of that reason."""
    lines = []
    for reason, total in errors.items():
        kept = messages.get(reason, {})
        for message, n in kept.items():
            lines.append(f"{n} ({reason}): {message}")
        rest = total - sum(kept.values())
        if rest > 0:
            lines.append(f"{rest} more ({reason}) with other messages")
    return lines


def silent_message(name: str, ledger: LedgerStatistics, last_error: str | None) -> str:
    """Why a sensor that received input made no frame of it, in one line."""
    unit = ledger.unit if ledger.received == 1 else f"{ledger.unit}s"
    text = f"{name} received {ledger.received:,} {unit} and produced no frame"
    if ledger.lost:
        text += f" ({reasons_text(ledger.lost)})"
    if last_error:
        text += f": {last_error}"
    return text


def report_sources(console: Console, pipeline: Any) -> list[str]:
    """After a run: one ``lost:`` line per sensor that lost input, and the sensors that
    produced no frame at all (each with its reason). Returns those sensors' messages;
    the caller exits non-zero when there are any."""
    from hyperframes.cli._common import error, note

    drops = pipeline.channel_drops()
    print_losses(
        console,
        {
            name: SensorLedger(ledger, drops[name]) if name in drops else ledger
            for name, ledger in pipeline.ledgers().items()
        },
    )
    silent: list[str] = []
    for source in pipeline.sources:
        optional = {spec.name for spec in source.specs if spec.optional}
        for name, ledger in source.ledgers().items():
            if ledger.frames:
                continue
            if name in optional and not ledger.received:
                # a sensor the source offers but nobody asked for (an Ouster's IMU in a
                # capture without IMU packets): said, not failed
                why = source.idle_reason(name) or "nothing arrived"
                note(console, "note:", f"{name} (optional) produced no frame: {why}")
                continue
            if ledger.received:
                message = silent_message(name, ledger, source.last_error)
            else:
                why = source.idle_reason(name) or source.last_error or "nothing arrived"
                message = f"{name} produced no frame for the whole run: {why}"
            error(console, message)
            silent.append(message)
    return silent


def add_allow_loss(parser: Any) -> None:
    """``--allow-loss``: losses are still reported, but do not fail the command."""
    parser.add_argument(
        "--allow-loss",
        action="store_true",
        help="exit 0 even when input was lost or damaged (every loss is still reported)",
    )


def loss_exit(args: Any, lost: bool) -> int:
    """The exit code for a command that finished: 1 when it lost input, unless allowed."""
    return 1 if lost and not getattr(args, "allow_loss", False) else 0
