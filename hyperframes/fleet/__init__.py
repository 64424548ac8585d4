"""Scale out on Ray: fleets of recordings across a cluster, models on actor pools.

Importing this package does not import Ray; the names that need it load it on
first use and say how to install it when it is missing
(``pip install '.[ray]'`` in the hyperframes clone). See docs/fleet.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperframes.fleet.config import FleetConfig, FleetSection, load_fleet_config
    from hyperframes.fleet.datasource import HfrDatasource, InferenceActor
    from hyperframes.fleet.fleet import FleetReport, run_fleet, run_local
    from hyperframes.fleet.plan import Part, ResourcePlan, plan_parts, plan_resources
    from hyperframes.fleet.results import RecordingOutcome, ResultGroup, read_results

__all__ = [
    "FleetConfig",
    "FleetReport",
    "FleetSection",
    "HfrDatasource",
    "InferenceActor",
    "Part",
    "RecordingOutcome",
    "ResourcePlan",
    "ResultGroup",
    "load_fleet_config",
    "plan_parts",
    "plan_resources",
    "read_results",
    "run_fleet",
    "run_local",
]

_HOME = {
    "FleetConfig": "hyperframes.fleet.config",
    "FleetReport": "hyperframes.fleet.fleet",
    "FleetSection": "hyperframes.fleet.config",
    "HfrDatasource": "hyperframes.fleet.datasource",
    "InferenceActor": "hyperframes.fleet.datasource",
    "Part": "hyperframes.fleet.plan",
    "RecordingOutcome": "hyperframes.fleet.results",
    "ResourcePlan": "hyperframes.fleet.plan",
    "ResultGroup": "hyperframes.fleet.results",
    "load_fleet_config": "hyperframes.fleet.config",
    "plan_parts": "hyperframes.fleet.plan",
    "plan_resources": "hyperframes.fleet.plan",
    "read_results": "hyperframes.fleet.results",
    "run_fleet": "hyperframes.fleet.fleet",
    "run_local": "hyperframes.fleet.fleet",
}
_NEEDS_RAY = {"HfrDatasource", "InferenceActor"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'hyperframes.fleet' has no attribute {name!r}")
    if name in _NEEDS_RAY:
        from hyperframes.fleet._ray import require_ray

        require_ray()
    obj = getattr(importlib.import_module(home), name)
    if getattr(obj, "__module__", "").startswith("hyperframes.fleet."):
        obj.__module__ = "hyperframes.fleet"  # reprs read hyperframes.fleet.FleetConfig
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
