"""A command run in-process leaves its caller's logging as it found it.

Found hunting order-dependent failures: ``main([..., "-q"])`` in one test set the root
logger to ERROR and replaced its handlers (``basicConfig(force=True)``) for the rest of
the pytest worker, so a later test in the same worker saw no warning records
(``test_video_parts.py``'s hardware fallback, after ``test_stamp_index.py``'s ``check -q``).
"""

from __future__ import annotations

import contextlib
import io
import logging
from argparse import Namespace
from pathlib import Path

import pytest

from hyperframes.cli import main
from hyperframes.cli._common import command_logging


@pytest.mark.parametrize("flags", [["-q"], ["-v"], []])
def test_the_root_loggers_level_and_handlers_are_restored(
    tmp_path: Path, flags: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["info", str(tmp_path / "missing.hfr"), *flags])
    assert code == 2, out.getvalue()
    assert "missing.hfr" in out.getvalue()
    assert root.level == level
    assert root.handlers == handlers
    logging.getLogger("adapters.video").warning("hardware decode cuda: unavailable")
    assert [r.message for r in caplog.records] == ["hardware decode cuda: unavailable"]


@pytest.mark.parametrize(
    ("quiet", "verbose", "level", "shown"),
    [(True, 0, logging.ERROR, ""), (False, 0, logging.WARNING, "WARNING fusion: said\n")],
)
def test_while_it_runs_the_command_logs_at_its_own_level_to_stderr(
    quiet: bool, verbose: int, level: int, shown: str
) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), command_logging(Namespace(quiet=quiet, verbose=verbose)):
        root = logging.getLogger()
        assert root.level == level
        assert len(root.handlers) == 1
        logging.getLogger("fusion").warning("said")
    assert err.getvalue() == shown
