"""``hyperframes bench``: quick runs of the real benchmark scripts, one table."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperframes.cli import main
from hyperframes.cli._bench import RUNNERS, find_benchmarks


def _rows(out: str, benchmark: str) -> list[list[str]]:
    """Table rows of ``benchmark`` split into cells (rich box drawing)."""
    rows = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and cells[0] == benchmark:
            rows.append(cells)
    return rows


def test_every_shipped_benchmark_has_a_quick_mode() -> None:
    found = find_benchmarks()
    assert {"sync", "clock", "infer", "recording", "video", "lidar", "fleet"} <= set(found)
    for name, path in found.items():
        assert name in RUNNERS or "\ndef quick(" in path.read_text(), f"{name}: no quick mode"


def test_bench_list_names_how_each_script_runs_quickly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--list"]) == 0
    modes = {
        line.split()[0]: line.split("  (", 1)[1] for line in capsys.readouterr().out.splitlines()
    }
    assert modes["fleet"] == "its quick())"  # bench_fleet.py defines quick()
    assert modes["clock"] == "quick runner)"  # a runner in hyperframes.cli._bench
    assert not any("no quick mode" in m for m in modes.values())


def test_bench_only_clock_prints_one_table_with_its_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "--only", "clock"]) == 0
    out = capsys.readouterr().out
    assert "hyperframes bench (quick mode" in out
    header = next(line for line in out.splitlines() if "benchmark" in line and "measure" in line)
    for col in ("value", "baseline ratio", "target", "met"):
        assert col in header
    rows = _rows(out, "clock")
    assert [r[1] for r in rows] == [
        "OnlineClock observe+align",
        "alignment error p99 (headline, 10-20 s)",
        "Nearest grouping = ground truth",
    ]
    cost = rows[0]
    assert cost[2].endswith("us/frame")
    assert cost[3].endswith("x least squares")
    assert cost[4] == "< 5 us"
    assert cost[5] in ("yes", "NO")
    assert not _rows(out, "sync")  # --only ran nothing else


def _write(folder: Path, name: str, body: str) -> None:
    (folder / f"bench_{name}.py").write_text(body)


def test_a_script_quick_hook_is_used_and_missing_quick_modes_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        tmp_path,
        "toy",
        "def quick():\n"
        "    return [{'measure': 'widgets', 'value': '12/s', 'ratio': '3.0x naive',\n"
        "             'target': '>= 10/s', 'met': True}]\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit('main must not run on import')\n",
    )
    _write(tmp_path, "plain", "X = 1\n")
    assert main(["bench", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert _rows(out, "toy") == [["toy", "widgets", "12/s", "3.0x naive", ">= 10/s", "yes"]]
    assert _rows(out, "plain") == [
        ["plain", "no quick mode", "run bench_plain.py itself", "", "", ""]
    ]


def test_a_missed_target_fails_only_with_strict_and_a_broken_benchmark_always_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(
        tmp_path,
        "slow",
        "def quick():\n"
        "    return [{'measure': 'm', 'value': '1', 'target': '>= 2', 'met': False}]\n",
    )
    assert main(["bench", "--dir", str(tmp_path)]) == 0
    assert main(["bench", "--dir", str(tmp_path), "--strict"]) == 1
    _write(tmp_path, "broken", "def quick():\n    raise RuntimeError('no data')\n")
    capsys.readouterr()
    assert main(["bench", "--dir", str(tmp_path), "--only", "broken"]) == 1
    assert _rows(capsys.readouterr().out, "broken") == [
        ["broken", "error", "RuntimeError: no data", "", "", ""]
    ]


def test_unknown_benchmark_names_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path, "one", "X = 1\n")
    assert main(["bench", "--dir", str(tmp_path), "--only", "two"]) == 2
    assert "no benchmark 'two'; choose from one" in capsys.readouterr().out
    assert main(["bench", "--dir", str(tmp_path / "missing")]) == 2
    assert "no bench_*.py found in" in capsys.readouterr().out


def test_list_shows_each_benchmark_and_its_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("sync") and "quick runner" in line for line in lines)


def test_bench_only_infer_runs_its_quick_mode_against_the_script(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The runner calls into benchmarks/bench_infer.py: a change there must not break it."""
    main(["bench", "--only", "infer"])  # targets may be missed on a busy machine: not asserted
    out = capsys.readouterr().out
    rows = _rows(out, "infer")
    assert [r[1] for r in rows] == [
        "VideoSource + BatchWorker (720p -> mid_cnn)",
        "share of the CPU-sum bound",
        "fused path, fraction of the limit",
        "worker.stream(src.frames()), fraction of the limit",
    ]
    assert "error" not in out
