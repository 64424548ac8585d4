"""Scale out on Ray: fleets of recordings across a cluster, models on actor pools.

Importing this package does not import Ray; the names that need it load it on
first use and say how to install it when it is missing
(``pip install 'hyperframes[ray]'``). See the "Fleets on Ray" section of README.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fusion.distributed.config import FleetConfig, FleetSection, load_fleet_config
    from fusion.distributed.datasource import HfrDatasource, InferenceActor
    from fusion.distributed.fleet import FleetReport, run_fleet, run_local
    from fusion.distributed.plan import Part, ResourcePlan, plan_parts, plan_resources
    from fusion.distributed.results import RecordingOutcome, ResultGroup, read_results

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
    "FleetConfig": "fusion.distributed.config",
    "FleetReport": "fusion.distributed.fleet",
    "FleetSection": "fusion.distributed.config",
    "HfrDatasource": "fusion.distributed.datasource",
    "InferenceActor": "fusion.distributed.datasource",
    "Part": "fusion.distributed.plan",
    "RecordingOutcome": "fusion.distributed.results",
    "ResourcePlan": "fusion.distributed.plan",
    "ResultGroup": "fusion.distributed.results",
    "load_fleet_config": "fusion.distributed.config",
    "plan_parts": "fusion.distributed.plan",
    "plan_resources": "fusion.distributed.plan",
    "read_results": "fusion.distributed.results",
    "run_fleet": "fusion.distributed.fleet",
    "run_local": "fusion.distributed.fleet",
}
_NEEDS_RAY = {"HfrDatasource", "InferenceActor"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'fusion.distributed' has no attribute {name!r}")
    if name in _NEEDS_RAY:
        from fusion.distributed._ray import require_ray

        require_ray()
    obj = getattr(importlib.import_module(home), name)
    if getattr(obj, "__module__", "").startswith("fusion.distributed."):
        obj.__module__ = "fusion.distributed"  # reprs read fusion.distributed.FleetConfig
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
