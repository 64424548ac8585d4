"""Metrics in the Prometheus text exposition format.

Every counter and gauge of a running pipeline, named the Prometheus way
(``hyperframes_<thing>_<unit>``, ``_total`` for counters) with labels for the
sensor, edge, worker or stage, so they can be scraped, diffed or simply read.
:func:`prometheus_text` renders a :class:`~fusion.PipelineStatistics` (or a
bare :class:`~fusion.HubStatistics`); it has no dependency on a client library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fusion._hub import HubStatistics
from fusion._ledger import LedgerStatistics


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._declared: set[str] = set()

    def metric(
        self,
        name: str,
        kind: str,
        help_text: str,
        value: float | None,
        labels: Mapping[str, Any] | None = None,
    ) -> None:
        if value is None:
            return
        if name not in self._declared:
            self._declared.add(name)
            self.lines.append(f"# HELP {name} {help_text}")
            self.lines.append(f"# TYPE {name} {kind}")
        label = ""
        if labels:
            label = "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"
        self.lines.append(f"{name}{label} {_number(value)}")


def prometheus_text(stats: Any) -> str:
    """Render pipeline or hub statistics as Prometheus text (ends with a newline)."""
    w = _Writer()
    hub: HubStatistics = stats if isinstance(stats, HubStatistics) else stats.hub
    _hub(w, hub)
    if not isinstance(stats, HubStatistics):
        w.metric(
            "hyperframes_pipeline_groups_out_total",
            "counter",
            "Groups handed to sinks or the caller.",
            stats.groups_out,
        )
        w.metric(
            "hyperframes_pipeline_elapsed_seconds",
            "gauge",
            "Wall time since the pipeline started.",
            stats.elapsed_s,
        )
        for st in stats.stages:
            labels = {"stage": st.name}
            w.metric(
                "hyperframes_stage_groups_total",
                "counter",
                "Groups into a stage.",
                st.groups_in,
                labels,
            )
            w.metric(
                "hyperframes_stage_dropped_total",
                "counter",
                "Groups a stage dropped.",
                st.dropped,
                labels,
            )
            w.metric(
                "hyperframes_stage_failed_total",
                "counter",
                "Groups on which a stage raised.",
                st.failed,
                labels,
            )
            w.metric(
                "hyperframes_stage_busy_seconds_total",
                "counter",
                "Time spent inside a stage.",
                st.busy_ns / 1e9,
                labels,
            )
        for name, ws in stats.workers.items():
            _worker(w, name, ws)
        for sensor, ledger in stats.ledgers.items():
            _ledger(w, sensor, ledger)
        if stats.recorder is not None:
            r = stats.recorder
            w.metric("hyperframes_recorder_frames_total", "counter", "Frames recorded.", r.frames)
            w.metric(
                "hyperframes_recorder_bytes_written_total",
                "counter",
                "Bytes written to disk.",
                r.bytes_written,
            )
            w.metric(
                "hyperframes_recorder_pending_chunks",
                "gauge",
                "Chunks waiting to be compressed or written.",
                r.pending_chunks,
            )
    return "\n".join(w.lines) + "\n"


def _ledger(w: _Writer, sensor: str, ledger: LedgerStatistics) -> None:
    labels = {"sensor": sensor, "unit": ledger.unit}
    w.metric(
        "hyperframes_source_received_total",
        "counter",
        "Units a source received (datagrams, packets, messages, rows, files).",
        ledger.received,
        labels,
    )
    w.metric(
        "hyperframes_source_emitted_total",
        "counter",
        "Units that went into a frame.",
        ledger.emitted,
        labels,
    )
    for reason, n in sorted(ledger.lost.items()):
        w.metric(
            "hyperframes_source_lost_total",
            "counter",
            "Units a source lost, by reason (the input ledger).",
            n,
            {**labels, "reason": reason},
        )


# long: a flat list of the hub's Prometheus metrics, one write per counter; splitting it would
#   scatter the exposition's order
def _hub(w: _Writer, hub: HubStatistics) -> None:
    w.metric(
        "hyperframes_hub_frames_in_total", "counter", "Frames received by the hub.", hub.frames_in
    )
    for kind, value in (
        ("complete", hub.groups_complete),
        ("partial", hub.groups_partial),
        ("dropped", hub.groups_dropped),
    ):
        w.metric(
            "hyperframes_hub_groups_total",
            "counter",
            "Groups by outcome.",
            value,
            {"outcome": kind},
        )
    w.metric(
        "hyperframes_hub_groups_expired_total",
        "counter",
        "Groups resolved by the max_latency deadline.",
        hub.groups_expired,
    )
    w.metric(
        "hyperframes_hub_buffer_peak_frames",
        "gauge",
        "Most frames the sync policy held at once.",
        hub.peak_buffer_used,
    )
    for name, s in hub.sensors.items():
        labels = {"sensor": name}
        w.metric(
            "hyperframes_sensor_frames_total",
            "counter",
            "Frames received per sensor.",
            s.frames_in,
            labels,
        )
        for reason, n in s.dropped.items():
            w.metric(
                "hyperframes_sensor_dropped_total",
                "counter",
                "Frames dropped per sensor and reason.",
                n,
                {**labels, "reason": reason},
            )
        w.metric(
            "hyperframes_sensor_lag_seconds",
            "gauge",
            "Receive time minus aligned time of the newest frame.",
            None if s.lag_ns is None else s.lag_ns / 1e9,
            labels,
        )
        for key, value in s.clock.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                w.metric(
                    f"hyperframes_clock_{_snake(key)}",
                    "gauge",
                    f"Clock model estimate: {key}.",
                    value,
                    labels,
                )
    for edge, c in hub.channels.items():
        labels = {"edge": edge}
        w.metric("hyperframes_channel_depth", "gauge", "Items queued on an edge.", c.depth, labels)
        w.metric(
            "hyperframes_channel_high_water",
            "gauge",
            "Most items ever queued on an edge.",
            c.high_water,
            labels,
        )
        w.metric(
            "hyperframes_channel_capacity", "gauge", "Capacity of an edge.", c.capacity, labels
        )
        for reason, n in c.dropped.items():
            w.metric(
                "hyperframes_channel_dropped_total",
                "counter",
                "Items an edge dropped, by reason.",
                n,
                {**labels, "reason": reason},
            )
    if hub.latency is not None:
        for q, value in (
            ("0.5", hub.latency.p50),
            ("0.9", hub.latency.p90),
            ("0.99", hub.latency.p99),
        ):
            w.metric(
                "hyperframes_hub_latency_seconds",
                "summary",
                "Added latency of the hub.",
                value / 1e9,
                {"quantile": q},
            )
        w.metric(
            "hyperframes_hub_latency_seconds_count",
            "counter",
            "Groups in the latency sample.",
            hub.latency.count,
        )


def _worker(w: _Writer, name: str, ws: Any) -> None:
    labels = {"worker": name}
    w.metric(
        "hyperframes_worker_items_total", "counter", "Items through a worker.", ws.items, labels
    )
    w.metric("hyperframes_worker_failed_total", "counter", "Items that failed.", ws.failed, labels)
    w.metric("hyperframes_worker_batches_total", "counter", "Batches run.", ws.batches, labels)
    w.metric(
        "hyperframes_worker_restarts_total", "counter", "Sessions restarted.", ws.restarts, labels
    )
    for q, value in (("0.5", ws.latency_p50), ("0.99", ws.latency_p99)):
        w.metric(
            "hyperframes_worker_latency_seconds",
            "summary",
            "Item latency in a worker.",
            value / 1e9,
            {**labels, "quantile": q},
        )
    for size, n in sorted(ws.batch_sizes.items()):
        w.metric(
            "hyperframes_worker_batch_size_total",
            "counter",
            "Batches by size.",
            n,
            {**labels, "size": size},
        )
    for provider in ws.providers[:1]:
        w.metric(
            "hyperframes_worker_info",
            "gauge",
            "The live execution provider.",
            1,
            {**labels, "provider": provider},
        )


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _snake(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).lower()


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def parse_prometheus(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Parse our own output back (for tests and tools): ``{(name, labels): value}``."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        labels: Iterable[tuple[str, str]] = ()
        if "{" in head:
            name, rest = head.split("{", 1)
            pairs = [p for p in rest.rstrip("}").split('",') if p]
            labels = [(k, v.strip('"')) for k, v in (p.split("=", 1) for p in pairs)]
        else:
            name = head
        out[(name, frozenset(labels))] = float(value)
    return out
