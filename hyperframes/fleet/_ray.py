"""The one place Ray is imported, with a message that says how to get it."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = "pip install '.[ray]' in the hyperframes clone"


def require_ray() -> ModuleType:
    """``import ray`` (with Ray Data), or an ``ImportError`` naming the extra to install."""
    try:
        ray = importlib.import_module("ray")
        importlib.import_module("ray.data")
    except ImportError as err:
        raise ImportError(
            f"hyperframes.fleet runs on Ray, which is not installed ({err}); "
            f"install it with: {INSTALL_HINT}"
        ) from err
    return ray
