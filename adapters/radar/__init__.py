"""Automotive radar: Continental ARS548 (Ethernet/UDP) and ARS408 (CAN) lists as frames.

:class:`RadarSource` reads an ARS548's detection and object lists from a
capture, a bag of nebula's packet messages or live UDP, and an ARS408's
cluster and object lists from a CAN log or bus; each list is one frame of a
structured array (:data:`DETECTION_DTYPE`, :data:`OBJECT_DTYPE` ...) whose
``x, y, z`` make it a point cloud in every export. See docs/radar.md.
"""

from adapters.radar._ars408 import CLUSTER_DTYPE as ARS408_CLUSTER_DTYPE
from adapters.radar._ars408 import OBJECT_DTYPE as ARS408_OBJECT_DTYPE
from adapters.radar._ars548 import CLASSES, DETECTION_DTYPE, OBJECT_DTYPE
from adapters.radar._source import MODELS, RadarSource
from fusion._exports import rewrite_module

__all__ = [
    "ARS408_CLUSTER_DTYPE",
    "ARS408_OBJECT_DTYPE",
    "CLASSES",
    "DETECTION_DTYPE",
    "MODELS",
    "OBJECT_DTYPE",
    "RadarSource",
]

rewrite_module(globals(), __name__)
