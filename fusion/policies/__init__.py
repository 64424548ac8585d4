"""Sans-I/O sync policies: ``push`` frames in, groups out; no clocks, no I/O."""

from fusion.policies.approximate import ApproximateTime
from fusion.policies.base import PolicyBase, PolicyStatistics, SyncPolicy
from fusion.policies.exact import ExactTime
from fusion.policies.nearest import Nearest

__all__ = [
    "ApproximateTime",
    "ExactTime",
    "Nearest",
    "PolicyBase",
    "PolicyStatistics",
    "SyncPolicy",
]
