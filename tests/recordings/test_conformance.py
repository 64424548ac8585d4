"""The conformance corpus: every reader path finds what the expected JSON says."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from recordings import open_recording

CORPUS = Path(__file__).resolve().parents[1] / "data" / "recordings"
_spec = importlib.util.spec_from_file_location("hfr_corpus_generate", CORPUS / "generate.py")
assert _spec is not None
assert _spec.loader is not None
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)
describe, digest = generate.describe, generate.digest
FILES = sorted(CORPUS.glob("**/*.hfr"))
IDS = [str(p.relative_to(CORPUS).with_suffix("")) for p in FILES]
OLD = CORPUS / "v1.0"


def test_the_corpus_covers_every_variant_and_version() -> None:
    variants = {p.stem.rsplit("-", 1)[1] for p in FILES}
    assert variants == {"ok", "nofooter", "truncated", "badcrc"}
    versions = {tuple(json.loads(p.with_suffix(".json").read_text())["version"]) for p in FILES}
    assert versions == {(1, 0), (1, 1)}
    assert len(list(OLD.glob("*/*.hfr"))) >= 12


@pytest.mark.parametrize("old", sorted(OLD.glob("*/*-ok.hfr")), ids=lambda p: p.stem)
def test_the_1_0_and_1_1_writers_store_the_same_frames(old: Path) -> None:
    new = CORPUS / old.parent.name / old.name
    frames_old = json.loads(old.with_suffix(".json").read_text())["frames"]
    assert json.loads(new.with_suffix(".json").read_text())["frames"] == frames_old


@pytest.mark.parametrize("use_index", [True, False], ids=["indexed", "scan"])
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reader_matches_the_expected_json(path: Path, use_index: bool) -> None:
    expected: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
    with open_recording(path, use_index=use_index) as log:
        frames = [
            {
                "sensor": f.sensor,
                "seq": f.seq,
                "t": f.t,
                "t_sensor": f.t_sensor,
                "t_arrival": f.t_arrival,
                "meta": f.meta,
                "data": digest(f.data),
            }
            for f in log.frames()
        ]
        damage = [[type(e).__name__, e.offset] for e in log.damage]
        assert log.version == tuple(expected["version"])
    assert frames == expected["frames"]
    assert damage == expected["damage"]
    if path.stem.endswith("-ok"):
        assert expected["damage"] == []
        assert expected["indexed"] is True
    else:
        assert expected["indexed"] is False or path.stem.endswith("-badcrc")


def test_the_reference_description_is_stable() -> None:
    for path in FILES:
        assert describe(path) == json.loads(path.with_suffix(".json").read_text())
