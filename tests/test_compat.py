"""Principle 12: every reach into another project's internals sits in one ``_compat_<lib>.py``
with a test that fails on the library's next release, and the pins admit what was checked.

Each compat module names its ``DISTRIBUTION`` and the releases it was ``CHECKED`` against;
its own test (``tests/**/test_compat_<lib>.py``) exercises the internals. Here: every compat
module has such a test, the installed release is within ``CHECKED``, pyproject.toml's pin
admits every checked release and nothing older, and the internal modules they reach into
are imported nowhere else.
"""

from __future__ import annotations

import importlib
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.compat import assert_checked_release
from tests.test_layout import FLOORS, ROOT, imported_modules, library_modules, module_name

COMPAT = sorted(module_name(p) for f in FLOORS for p in (ROOT / f).rglob("_compat_*.py"))
INTERNALS = {
    "rosbags.rosbag2.storage_mcap": "adapters.bags._compat_rosbags",
    "rosbags.rosbag2.storage_sqlite3": "adapters.bags._compat_rosbags",
    "av.container.core": "adapters.video._compat_av",
    "foxglove._foxglove_py": None,  # nowhere
}
"""Modules of other projects that are not their documented API, and who may import them."""


def _pins() -> dict[str, SpecifierSet]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        found += extra
    pins: dict[str, SpecifierSet] = {}
    for line in found:
        req = Requirement(line)
        pins[req.name.lower()] = pins.get(req.name.lower(), SpecifierSet()) & req.specifier
    return pins


def _bounds(checked: SpecifierSet) -> tuple[Version, Version]:
    low = [Version(s.version) for s in checked if s.operator in (">=", "==")]
    high = [Version(s.version) for s in checked if s.operator in ("<=", "==")]
    assert len(low) == 1, f"CHECKED {checked}: give >=first,<=last"
    assert len(high) == 1, f"CHECKED {checked}: give >=first,<=last"
    return low[0], high[0]


def test_there_are_compat_modules_and_each_has_its_own_test() -> None:
    assert {m.rsplit(".", 1)[-1] for m in COMPAT} >= {
        "_compat_rosbags", "_compat_av", "_compat_foxglove", "_compat_cyclonedds",
    }  # fmt: skip
    tests = list((ROOT / "tests").rglob("test_compat_*.py"))
    for name in COMPAT:
        lib = name.rsplit("._compat_", 1)[1]
        parent, leaf = name.rsplit(".", 1)
        uses = (name, f"from {parent} import {leaf}")
        mine = [
            t
            for t in tests
            if t.stem == f"test_compat_{lib}" and any(u in t.read_text() for u in uses)
        ]
        assert mine, f"{name}: no tests/**/test_compat_{lib}.py exercises it"


@pytest.mark.parametrize("name", COMPAT)
def test_the_installed_release_is_checked_and_the_pin_admits_the_checked_ones(name: str) -> None:
    module = importlib.import_module(name)
    assert_checked_release(module)
    pin = _pins()[module.DISTRIBUTION.lower()]
    first, last = _bounds(SpecifierSet(module.CHECKED))
    for version in (first, last):
        assert pin.contains(version), (
            f"pyproject.toml pins {module.DISTRIBUTION}{pin}, which refuses {version}, a release "
            f"{name} was checked against ({module.CHECKED})"
        )
    if getattr(module, "DEGRADES_BEFORE", False):  # older releases run without the internal
        return
    older = Version(f"{first.major}.{first.minor}.{first.micro}.dev0")
    assert not pin.contains(older, prereleases=True), (
        f"pyproject.toml pins {module.DISTRIBUTION}{pin}, which admits releases older than "
        f"{name} was checked against ({module.CHECKED})"
    )


def test_other_projects_internal_modules_are_imported_only_by_their_compat_module() -> None:
    found = []
    for name, path in library_modules().items():
        for line, target in imported_modules(path):
            for internal, allowed in INTERNALS.items():
                if (target == internal or target.startswith(internal + ".")) and name != allowed:
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not found, "an internal reached outside its _compat_ module:\n" + "\n".join(found)
