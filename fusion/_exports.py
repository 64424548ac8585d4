"""Make public names report their package, so reprs read ``fusion.Frame``."""

from __future__ import annotations

import contextlib
from typing import Any


def rewrite_module(namespace: dict[str, Any], package: str) -> None:
    """Set ``__module__`` of every class and function in ``__all__`` to ``package``."""
    for name in namespace["__all__"]:
        obj = namespace[name]
        if getattr(obj, "__module__", "").startswith(package + "."):
            with contextlib.suppress(AttributeError, TypeError):
                obj.__module__ = package
