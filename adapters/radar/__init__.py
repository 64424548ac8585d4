"""Automotive radar: Continental ARS548 (Ethernet/UDP) and ARS408 (CAN) lists as frames.

:class:`RadarSource` reads an ARS548's detection and object lists from a
capture, a bag of nebula's packet messages or live UDP, and an ARS408's
cluster and object lists from a CAN log or bus; each list is one frame of a
structured array (:data:`DETECTION_DTYPE`, :data:`OBJECT_DTYPE` ...) whose
``x, y, z`` make it a point cloud in every export. See docs/radar.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.radar._ars548 import CLASSES, DETECTION_DTYPE, OBJECT_DTYPE
    from adapters.radar._source import MODELS, RadarSource


from adapters.radar._ars408 import CLUSTER_DTYPE as ARS408_CLUSTER_DTYPE
from adapters.radar._ars408 import OBJECT_DTYPE as ARS408_OBJECT_DTYPE

__all__ = [
    "ARS408_CLUSTER_DTYPE",
    "ARS408_OBJECT_DTYPE",
    "CLASSES",
    "DETECTION_DTYPE",
    "MODELS",
    "OBJECT_DTYPE",
    "RadarSource",
]

_HOMES = {
    "CLASSES": "adapters.radar._ars548",
    "DETECTION_DTYPE": "adapters.radar._ars548",
    "MODELS": "adapters.radar._source",
    "OBJECT_DTYPE": "adapters.radar._ars548",
    "RadarSource": "adapters.radar._source",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
