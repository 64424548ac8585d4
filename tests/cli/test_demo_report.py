"""The demo's summary, its replay check and its report image, on a short session."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hyperframes.cli import build_parser, main
from hyperframes.cli._demo import DEFAULT_REPORT, report_path
from hyperframes.demo import _session as session
from hyperframes.demo._report import ReportData, write_report

MS = 1_000_000


def _png_pixels(path: Path) -> np.ndarray:
    from matplotlib import image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels: np.ndarray = image.imread(str(path))
    return pixels


def test_demo_prints_summary_checks_replay_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "out" / "report.png"
    assert main(["demo", "--seconds", "2", "--report", str(png)]) == 0
    out = capsys.readouterr().out
    for text in (
        "Sensors: captured -> link -> hub",
        "Clocks: OnlineClock estimate vs truth",
        "Models: ONNX Runtime batch workers",
        "edges (cam)",
        "occupancy (lidar)",
        "replay check passed: 19 groups, same order, same members, same model results",
        f"report: {png}",
    ):
        assert text in out
    for sensor, captured in (("cam", 60), ("lidar", 20), ("imu", 400)):
        assert any(
            line.split()[1:2] == [sensor] and str(captured) in line for line in out.splitlines()
        )
    assert out.strip().splitlines()[-1].startswith("demo ok: 19 groups from 479 frames")
    pixels = _png_pixels(png)
    assert pixels.shape[:2] == (850, 1300)
    # Four panels of plots, not a blank canvas.
    assert float(pixels[..., :3].std()) > 0.05
    assert png.stat().st_size > 50_000


def test_demo_fails_when_the_replay_does_not_reproduce_the_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = session.compare

    def lossy(live: Any, replay: Any) -> list[str]:
        return real(live, replay[:-1])  # as if the replay had lost its last group

    monkeypatch.setattr(session, "compare", lossy)
    assert main(["demo", "--seconds", "1", "--no-report"]) == 1
    out = capsys.readouterr().out
    assert "replay mismatch: live run gave 9 groups, replay 8" in out
    assert out.strip().splitlines()[-1] == "demo FAILED: replay did not reproduce the 9 live groups"


async def test_session_aligns_every_sensor_to_the_truth_and_replays_identically(
    tmp_path: Path,
) -> None:
    result = await session.run_session(2.0, tmp_path, tmp_path / "s.hfr", seed=3)
    assert result.replay_ok
    assert [g.key for g in result.live] == [g.key for g in result.replay]
    assert result.camera_decoded == result.sensors["cam"].sent
    for name, truth in result.sensors.items():
        # Every frame was recorded with its ground truth, and the online clock
        # put it within 2 ms of its true capture time (the links jitter by more).
        assert len(truth.align_err) == truth.sent, name
        assert np.percentile(np.abs(truth.align_err), 99) < 2 * MS, name
        assert truth.clock.skew_ppm is not None
    groups = result.stats.hub.groups_emitted
    assert groups == len(result.live) >= 18
    assert all(g.results["occupancy"] > 0 for g in result.live)
    assert all(0.0 < g.results["edges"] < 1.0 for g in result.live)


def test_compare_names_the_first_differences() -> None:
    def record(t: int, members: tuple[tuple[str, int], ...], edges: float) -> session.GroupRecord:
        return session.GroupRecord((t, members, ()), {"edges": edges}, {}, {}, 0)

    a = [record(10, (("cam", 0), ("lidar", 0)), 0.5), record(20, (("cam", 3), ("lidar", 1)), 0.25)]
    assert session.compare(a, list(a)) == []
    other = [a[0], record(20, (("cam", 2), ("lidar", 1)), 0.25)]
    assert session.compare(a, other) == [
        "group 1: live t=20 members=[('cam', 3), ('lidar', 1)] missing=[] != "
        "replay t=20 members=[('cam', 2), ('lidar', 1)] missing=[]"
    ]
    drifted = [a[0], record(20, (("cam", 3), ("lidar", 1)), 0.3)]
    assert session.compare(a, drifted) == [
        "group 1 (t=20): results {'edges': 0.25} != {'edges': 0.3}"
    ]
    assert session.compare(a, a[:1]) == ["live run gave 2 groups, replay 1"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], DEFAULT_REPORT),
        (["--quiet"], None),
        (["--quiet", "--report", "r.png"], Path("r.png")),
        (["--no-report"], None),
        (["--report", "x/y.png"], Path("x/y.png")),
    ],
)
def test_report_goes_to_cwd_by_default_and_nowhere_when_quiet(
    argv: list[str], expected: Path | None
) -> None:
    args: argparse.Namespace = build_parser().parse_args(["demo", *argv])
    assert report_path(args) == expected


def test_report_and_no_report_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--report", "a.png", "--no-report"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_write_report_draws_any_run_from_plain_arrays(tmp_path: Path) -> None:
    t = np.linspace(0, 5, 200)
    data = ReportData(
        title="a run",
        alignment={"a": (t, np.sin(t) * 0.1), "b": (t[:10], np.zeros(10)), "empty": (t[:0], t[:0])},
        spread_ms=np.array([1.0, 2.0, 3.0]),
        true_spread_ms=np.array([1.0, 2.1, 2.9]),
        latency=(t[:50], np.linspace(10, 20, 50)),
        throughput={"decode": 500.0, "model": 40.0},
        realtime={"decode": 30.0},
        tolerance_ms=5.0,
        notes={"model": "3 batches"},
    )
    path = write_report(data, tmp_path / "deep" / "r.png", dpi=50)
    assert path == tmp_path / "deep" / "r.png"
    assert _png_pixels(path).shape[:2] == (425, 650)


def test_importing_fusion_does_not_import_matplotlib() -> None:
    code = (
        "import sys, fusion, hyperframes.demo._report, hyperframes.cli._demo; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("ratio", "text"), [(1.45, "x1.45"), (0.5, "x0.50"), (12.34, "x12.3"), (480.2, "x480")]
)
def test_real_time_factors_keep_their_digits(ratio: float, text: str) -> None:
    from hyperframes.demo._report import times_real_time

    assert times_real_time(ratio) == text


def test_the_throughput_legend_covers_no_label() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    from hyperframes.demo._report import _throughput

    data = ReportData(
        title="a run",
        alignment={},
        spread_ms=np.array([1.0]),
        true_spread_ms=np.array([1.0]),
        latency=(np.zeros(1), np.zeros(1)),
        throughput={  # the demo's stages; a fast replay's long label ends at the bottom right
            "H.264 encode": 900.0,
            "camera decode (VideoSource)": 500.0,
            "sync hub (frames in)": 3_000.0,
            "model: detector": 40.0,
            "recorder (frames)": 3_000.0,
            "replay (frames)": 60_000.0,
        },
        realtime={
            "H.264 encode": 30.0,
            "camera decode (VideoSource)": 30.0,
            "sync hub (frames in)": 240.0,
            "model: detector": 27.6,
            "recorder (frames)": 240.0,
            "replay (frames)": 240.0,
        },
        tolerance_ms=5.0,
        notes={"model: detector": "3 batches"},
    )
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5), dpi=100)  # write_report's grid
    ax = axes[1][1]
    try:
        _throughput(ax, data)
        fig.tight_layout(rect=(0, 0, 1, 0.93))
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        legend = ax.get_legend().get_window_extent(renderer)
        labels = [t for t in ax.texts if "real time" in t.get_text()]
        shown = " | ".join(t.get_text() for t in labels)
        assert "x1.45 real time" in shown  # model: 40/s against 27.6/s, not "x1"
        assert "x250 real time" in shown
        for text in labels:
            assert not legend.overlaps(text.get_window_extent(renderer)), text.get_text()
    finally:
        plt.close(fig)
