"""Sans-I/O sync policies: ``push`` frames in, groups out; no clocks, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from fusion.policies._approximate import ApproximateTime
    from fusion.policies._base import PolicyBase, PolicyStatistics, SyncPolicy
    from fusion.policies._columnar import GroupColumns, admitted, group_columns
    from fusion.policies._exact import ExactTime
    from fusion.policies._nearest import Nearest


__all__ = [
    "ApproximateTime",
    "ExactTime",
    "GroupColumns",
    "Nearest",
    "PolicyBase",
    "PolicyStatistics",
    "SyncPolicy",
    "admitted",
    "group_columns",
]

_HOMES = {
    "GroupColumns": "fusion.policies._columnar",
    "admitted": "fusion.policies._columnar",
    "group_columns": "fusion.policies._columnar",
    "ApproximateTime": "fusion.policies._approximate",
    "ExactTime": "fusion.policies._exact",
    "Nearest": "fusion.policies._nearest",
    "PolicyBase": "fusion.policies._base",
    "PolicyStatistics": "fusion.policies._base",
    "SyncPolicy": "fusion.policies._base",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
