"""What an Ouster source derives from its metadata before the first packet, once per content.

Making an :class:`~adapters.OusterSource` lays out the packets' bytes for its
profile (:class:`~adapters.lidar._ouster_layout.PacketLayout`), loads the
compiled kernels for it (:func:`~adapters.lidar._ouster_kernel.warm`) and computes
the beam tables (:func:`~adapters.lidar._ouster_geometry.beam_tables`): about
1 ms on a 1024x32 sensor, more than decoding its scan. All of it follows from the metadata alone,
so :func:`prepare` keeps it in a small in-process cache keyed by the SHA-256 of
the metadata file's bytes (the same bytes parse to the same sensor info, hence
the same layout and tables): a second capture of the same sensor, or the same
capture read again, skips it. The cache holds the last :data:`CACHE_SIZE`
metadata files (a 2048x128 sensor's tables are 6 MB); its arrays are read-only
and shared. :func:`clear_cache` empties it (the benchmark's cold rounds).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from adapters.lidar._ouster_geometry import beam_tables
from adapters.lidar._ouster_layout import PacketLayout

CACHE_SIZE = 4
_cache: OrderedDict[bytes, Prepared] = OrderedDict()
_lock = threading.Lock()


class Prepared:
    """A metadata's packet layout and beam tables."""

    def __init__(self, info: Any) -> None:
        self.layout = PacketLayout(info)
        self.direction, self.offset = beam_tables(info)
        self.direction.flags.writeable = False
        self.offset.flags.writeable = False
        self._views: Any = None
        self._views_lock = threading.Lock()

    def views(self, dtype: np.dtype[Any]) -> Any:
        """The compiled decoder's :class:`~adapters.lidar._ouster_kernel.ScanViews` of the
        layout, its kernels loaded (numba imported on the first call in a process)."""
        with self._views_lock:
            if self._views is None:
                from adapters.lidar import _ouster_kernel as ouster_kernel

                views = ouster_kernel.ScanViews(self.layout)
                ouster_kernel.warm(views, dtype)  # numba's cache, or a compile
                self._views = views
            return self._views


def prepare(raw: bytes, info: Any) -> Prepared:
    """The :class:`Prepared` of the metadata file ``raw`` (parsed: ``info``), cached."""
    key = hashlib.sha256(raw).digest()
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    made = Prepared(info)  # outside the lock: two threads may both make one, either is kept
    with _lock:
        _cache[key] = made
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return made


def clear_cache() -> None:
    """Forget every metadata's layout and tables (the next source makes them again)."""
    with _lock:
        _cache.clear()
