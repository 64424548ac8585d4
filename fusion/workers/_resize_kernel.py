"""The compiled separable resize kernel behind :class:`~fusion.workers._resize.Resampler`.

Why compiled: in numpy every tap of a pass is a gather, a multiply and an add
over the whole intermediate image, each its own trip through memory; a
1280x720 frame to 224x224 costs ~8 ms that way, 3-4x ``cv2.resize``. Here one
loop nest does a pass: rows first (each output row is a weighted sum of a few
contiguous input rows, the inner loop runs along ``width * channels`` and
vectorises), then, for each output row, its columns straight away, rounding and clipping
into ``uint8`` as it writes. The arithmetic is the numpy path's (float32
weights and accumulators, rounded once), so the filters and their tolerance
against OpenCV/Pillow are unchanged. It releases the GIL, so a decoder thread
runs while it works.

numba is imported on first use (``import fusion`` stays light); the compiled
code is cached on disk next to this module when that is writable, so later
processes skip the ~1 s compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_kernel: Callable[..., None] | None = None


def _compile() -> Callable[..., None]:
    import numba

    @numba.njit(nogil=True, cache=True, fastmath=False, boundscheck=False)
    def separable_u8(
        image: Any, rows: Any, row_w: Any, cols: Any, col_w: Any, tmp: Any, out: Any
    ) -> None:  # pragma: no cover - compiled
        h, w, c = image.shape
        oh, kr = rows.shape
        ow, kc = cols.shape
        flat = image.reshape(h, w * c)
        for o in range(oh):
            acc = tmp
            r0 = flat[rows[o, 0]]
            w0 = row_w[o, 0]
            for j in range(w * c):
                acc[j] = r0[j] * w0
            for k in range(1, kr):
                wk = row_w[o, k]
                if wk == 0.0:
                    continue
                rk = flat[rows[o, k]]
                for j in range(w * c):
                    acc[j] += rk[j] * wk
            for d in range(ow):
                for ch in range(c):
                    s = np.float32(0.0)
                    for k in range(kc):
                        s += acc[cols[d, k] * c + ch] * col_w[d, k]
                    v = np.rint(s)
                    out[o, d, ch] = 0 if v < 0 else (255 if v > 255 else np.uint8(v))

    return separable_u8


def separable_u8(
    image: np.ndarray[Any, Any],
    rows: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    cols: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    tmp: np.ndarray[Any, Any],
    out: np.ndarray[Any, Any],
) -> None:
    """Resize C-contiguous ``uint8`` ``image`` ``(H, W, C)`` into ``out`` ``(oh, ow, C)``.

    ``rows``/``cols``: (indices, float32 weights) taps, ``(oh, k)`` and
    ``(ow, k)``; ``tmp``: a float32 ``(W * C,)`` scratch row (one output row's row pass,
    consumed by its column pass before the next: 15 KB for 720p, per call).
    """
    global _kernel
    if _kernel is None:
        _kernel = _compile()
    _kernel(image, rows[0], rows[1], cols[0], cols[1], tmp, out)
