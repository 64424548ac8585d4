"""What every ``_compat_<lib>.py`` test asks first: is the installed release one the module
was checked against (its ``DISTRIBUTION`` and ``CHECKED``, principle 12)?"""

from __future__ import annotations

import importlib.metadata
from types import ModuleType

from packaging.specifiers import SpecifierSet
from packaging.version import Version


def module_path(module: ModuleType) -> str:
    """``adapters/bags/_compat_rosbags.py`` for that module."""
    return module.__name__.replace(".", "/") + ".py"


def assert_checked_release(module: ModuleType) -> Version:
    """The installed version of ``module.DISTRIBUTION``; fails, naming the module to re-check,
    when it is outside ``module.CHECKED``."""
    name = module.DISTRIBUTION
    installed = Version(importlib.metadata.version(name))
    checked = SpecifierSet(module.CHECKED)
    assert checked.contains(installed, prereleases=True), (
        f"{name} {installed} is installed; {module_path(module)} was checked against "
        f"{name}{checked}. Re-check every internal its docstring names against {name} "
        f"{installed}, then widen CHECKED there and the pin in pyproject.toml."
    )
    return installed
