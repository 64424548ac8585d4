"""Public names that report their package, and packages that import them on first use.

``rewrite_module`` makes reprs read ``fusion.Frame`` rather than
``fusion._frames.Frame`` (httpx and anyio do the same). ``lazy_exports`` builds
a PEP 562 module ``__getattr__`` so a package can list names whose modules
pull in heavy libraries (onnxruntime, PyAV, open3d) without importing them
until a user touches the name.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping
from typing import Any


def rewrite_module(namespace: dict[str, Any], package: str) -> None:
    """Set ``__module__`` of every class and function in ``__all__`` to ``package``."""
    for name in namespace["__all__"]:
        if name in namespace:
            _claim(namespace[name], package)


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` that import ``homes[name]`` on first use.

    ``homes`` maps each lazily exported name to the module that defines it.
    The loaded object is cached in the package's namespace, so the import
    runs once; an unknown name raises ``AttributeError`` as usual.
    """
    module = importlib.import_module(package)
    namespace = vars(module)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        obj = getattr(importlib.import_module(home), name)
        _claim(obj, package)
        namespace[name] = obj
        return obj

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__


def _claim(obj: Any, package: str) -> None:
    if getattr(obj, "__module__", "").startswith(package + "."):
        with contextlib.suppress(AttributeError, TypeError):
            obj.__module__ = package
