"""Page-locked (pinned) host buffers for CUDA IO binding, allocated once and reused.

A host-to-device copy from ordinary (pageable) memory goes through a driver
staging buffer: the driver copies into page-locked memory first, then DMAs,
and the copy cannot overlap anything. From page-locked memory the DMA reads
the buffer directly. Allocating page-locked memory is slow (it pins pages in
the kernel), so each input keeps one buffer, grown when a larger batch comes
and otherwise reused for every batch.

The CUDA runtime is reached through ``ctypes`` (``cudaHostAlloc``,
``cudaFreeHost``) from the ``libcudart`` that onnxruntime's CUDA provider
already loaded (from the system or the ``nvidia-cuda-runtime`` wheel), so
no extra Python package is needed. When it cannot be had, :class:`PinnedStaging`
says why in :attr:`PinnedStaging.reason` and the session binds the numpy array
itself (pageable): slower, still correct.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from fusion._buffers import ALIGNMENT

_CUDART = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")
_PORTABLE = 1  # cudaHostAllocPortable: pinned for every CUDA context


def _load_cudart() -> tuple[Any, str | None]:
    errors = []
    for name in _CUDART:
        try:
            lib = ctypes.CDLL(name)
        except OSError as err:
            errors.append(str(err))
            continue
        alloc = lib.cudaHostAlloc
        alloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
        lib.cudaHostAlloc.restype = ctypes.c_int
        lib.cudaFreeHost.argtypes = [ctypes.c_void_p]
        lib.cudaFreeHost.restype = ctypes.c_int
        return lib, None
    return None, f"the CUDA runtime does not load ({errors[-1] if errors else 'no candidate'})"


class PinnedStaging:
    """One reusable page-locked buffer per input name; :meth:`stage` copies an array in."""

    def __init__(self) -> None:
        self._lib, self.reason = _load_cudart()
        """Why buffers are pageable, or ``None`` while pinned memory works."""
        self._buffers: dict[str, tuple[int, int]] = {}  # name -> (pointer, bytes)
        self._lock = threading.Lock()

    @property
    def pinned(self) -> bool:
        return self.reason is None

    def stage(self, name: str, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """``array``'s contents in ``name``'s pinned buffer (or ``array`` itself if none)."""
        if self.reason is not None:
            return np.ascontiguousarray(array)
        nbytes = array.nbytes
        with self._lock:
            ptr, size = self._buffers.get(name, (0, 0))
            if size < nbytes:
                if ptr:
                    self._lib.cudaFreeHost(ctypes.c_void_p(ptr))
                    del self._buffers[name]
                grown = max(nbytes, 2 * size)
                out = ctypes.c_void_p()
                code = self._lib.cudaHostAlloc(ctypes.byref(out), grown, _PORTABLE)
                if code != 0 or not out.value:
                    self.reason = f"cudaHostAlloc of {grown} bytes failed (CUDA error {code})"
                    return np.ascontiguousarray(array)
                ptr, size = out.value, grown
                self._buffers[name] = (ptr, size)
        raw = (ctypes.c_uint8 * nbytes).from_address(ptr)
        view: np.ndarray[Any, Any] = (
            np.ctypeslib.as_array(raw).view(array.dtype).reshape(array.shape)
        )
        assert ptr % ALIGNMENT == 0 or nbytes == 0  # cudaHostAlloc returns page-aligned memory
        np.copyto(view, array)
        return view

    def close(self) -> None:
        """Free every pinned buffer (the sessions using them must be done)."""
        with self._lock:
            for ptr, _ in self._buffers.values():
                self._lib.cudaFreeHost(ctypes.c_void_p(ptr))
            self._buffers.clear()

    def __del__(self) -> None:
        if self._buffers and self._lib is not None:
            self.close()
