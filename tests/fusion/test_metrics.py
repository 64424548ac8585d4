"""Prometheus text rendering of pipeline metrics."""

from __future__ import annotations

import anyio

from adapters import SyntheticCamera, SyntheticLidar
from fusion import Nearest, Pipeline, VirtualClock
from fusion._metrics import parse_prometheus, prometheus_text

MS = 1_000_000


async def test_pipeline_metrics_render_and_parse_back() -> None:
    clock = VirtualClock()
    pipeline = Pipeline(
        [SyntheticLidar(duration_s=2, points=32), SyntheticCamera(duration_s=2, width=4, height=4)],
        Nearest("lidar", ["lidar", "cam"], tolerance=20 * MS),
        max_latency=100 * MS,
        clock=clock,
    )
    with anyio.fail_after(10):
        async with clock.autojump():
            stats = await pipeline.run()
    text = prometheus_text(stats)
    values = parse_prometheus(text)
    assert values[("hyperframes_sensor_frames_total", frozenset({("sensor", "cam")}))] == 60
    assert values[("hyperframes_hub_groups_total", frozenset({("outcome", "complete")}))] == 20
    assert values[("hyperframes_pipeline_groups_out_total", frozenset())] == 20
    dropped = (
        "hyperframes_sensor_dropped_total",
        frozenset({("sensor", "cam"), ("reason", "unmatched")}),
    )
    assert values[dropped] == 40
    # Every sample line has a HELP and a TYPE declared before it, once per metric.
    names = {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    for name in names:
        assert text.count(f"# TYPE {name} ") == 1
    assert text.endswith("\n")


def test_label_values_are_escaped() -> None:
    from fusion._metrics import _escape

    assert _escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
