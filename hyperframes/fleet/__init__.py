"""Scale out on Ray: fleets of recordings across a cluster, models on actor pools.

Importing this package does not import Ray; the names that need it load it on
first use and say how to install it when it is missing
(``pip install '.[ray]'`` in the hyperframes clone). See docs/fleet.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperframes.fleet._config import (
        FleetConfig,
        FleetSection,
        expand_recordings,
        load_fleet_config,
    )
    from hyperframes.fleet._datasource import HfrDatasource, InferenceActor
    from hyperframes.fleet._fleet import FleetReport, run_fleet, run_local
    from hyperframes.fleet._plan import Part, ResourcePlan, plan_parts, plan_resources
    from hyperframes.fleet._results import RecordingOutcome, ResultGroup, read_results
    from hyperframes.fleet._tasks import iterate_blocking, part_groups

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
    "expand_recordings",
    "iterate_blocking",
    "load_fleet_config",
    "part_groups",
    "plan_parts",
    "plan_resources",
    "read_results",
    "run_fleet",
    "run_local",
]

_HOME = {
    "expand_recordings": "hyperframes.fleet._config",
    "iterate_blocking": "hyperframes.fleet._tasks",
    "part_groups": "hyperframes.fleet._tasks",
    "FleetConfig": "hyperframes.fleet._config",
    "FleetReport": "hyperframes.fleet._fleet",
    "FleetSection": "hyperframes.fleet._config",
    "HfrDatasource": "hyperframes.fleet._datasource",
    "InferenceActor": "hyperframes.fleet._datasource",
    "Part": "hyperframes.fleet._plan",
    "RecordingOutcome": "hyperframes.fleet._results",
    "ResourcePlan": "hyperframes.fleet._plan",
    "ResultGroup": "hyperframes.fleet._results",
    "load_fleet_config": "hyperframes.fleet._config",
    "plan_parts": "hyperframes.fleet._plan",
    "plan_resources": "hyperframes.fleet._plan",
    "read_results": "hyperframes.fleet._results",
    "run_fleet": "hyperframes.fleet._fleet",
    "run_local": "hyperframes.fleet._fleet",
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
