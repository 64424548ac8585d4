"""The merge kernel in C (``_nearest_native.c``): built once, then loaded in a millisecond.

Why a second compiled form: the numba kernel (:mod:`fusion.policies._nearest_kernel`)
costs ~0.3 s of CPU to load in a fresh process (numba's import, then its cache
read), more than one call on 10 M stamps takes in polars. This is the same
algorithm in C, loaded with :mod:`ctypes`: a process that finds the library
built pays one ``dlopen``.

Building: the system C compiler (``$CC``, else ``cc``) compiles the source
once per source and compiler into a cache directory (``$HYPERFRAMES_CACHE_DIR``,
else ``__pycache__`` beside this module when writable, else
``~/.cache/hyperframes``), under a name that hashes both, written to a
temporary name and renamed (processes building at once do not see half a
file). No compiler, or one that fails: :func:`build` says why once and the
numba kernel or the numpy form is used instead; nothing is built again in
that process.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusion.errors import UsageError

log = logging.getLogger("fusion.policies")

Int64 = np.ndarray[Any, np.dtype[np.int64]]
_SPAN = (1 << 64) - 1
_SOURCE = Path(__file__).with_name("_nearest_native.c")
_FLAGS = ("-O3", "-shared", "-fPIC", "-std=c99")
_SUFFIX = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")

_function: Any = None  # the loaded entry point
_failure: str | None = None  # why it cannot be built here, once known


class Unsorted(ValueError):
    """Stamps that are not strictly increasing; ``columns``: their positions
    (0 the references, then the sensors in the order given)."""

    def __init__(self, columns: list[int]) -> None:
        super().__init__(f"columns {columns} are not strictly increasing")
        self.columns = columns


# Finding the library is on the path of every call that has not loaded it, so it
# imports nothing heavy: no shutil (which), hashlib or tempfile (~10 ms together
# on a busy machine, as much as the kernel's run on 1 M stamps); build() imports
# what it needs.


@functools.cache
def _compiler() -> str | None:
    env = os.environ.get("CC")
    if env:
        return env
    for name in ("cc", "gcc"):
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            path = os.path.join(folder, name)
            if folder and os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


@functools.cache
def _name(compiler: str) -> str:
    """The library's file name: a checksum of the source, the compiler and the flags."""
    machine = os.uname().machine if hasattr(os, "uname") else ""
    key = " ".join((compiler, *_FLAGS, sys.platform, machine)).encode()
    source = _SOURCE.read_bytes()
    crc = (zlib.crc32(source) << 32) | zlib.crc32(key + source)
    return f"hf_nearest-{crc:016x}{_SUFFIX}"


def _directories() -> list[Path]:
    env = os.environ.get("HYPERFRAMES_CACHE_DIR")
    if env:
        return [Path(env)]
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [Path(__file__).with_name("__pycache__"), home / "hyperframes"]


def cached() -> Path | None:
    """The built library if it is in a cache directory (a few ``stat`` calls), else None."""
    compiler = _compiler()
    if compiler is None:
        return None
    name = _name(compiler)
    for directory in _directories():
        path = directory / name
        if path.is_file():
            return path
    return None


def loaded() -> bool:
    """Whether the library is loaded in this process."""
    return _function is not None


def failure() -> str | None:
    """Why the library could not be built in this process (None: not tried, or built)."""
    return _failure


def build() -> Path | None:
    """Compile the library into the first writable cache directory; None (and a log
    line, once) when there is no compiler or it fails."""
    import subprocess
    import tempfile

    global _failure
    if _failure is not None:
        return None
    compiler = _compiler()
    if compiler is None:
        _failure = "no C compiler ($CC, cc or gcc) on the PATH"
        log.info("the C merge kernel is not built: %s", _failure)
        return None
    name = _name(compiler)
    errors = []
    for directory in _directories():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=name, suffix=".tmp", dir=directory)
            os.close(fd)
        except OSError as err:
            errors.append(f"{directory}: {err.strerror or err}")
            continue
        try:
            res = subprocess.run(
                [compiler, *_FLAGS, "-o", tmp, str(_SOURCE)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if res.returncode != 0:
                lines = (res.stderr or res.stdout).strip().splitlines() or ["no output"]
                _failure = f"{compiler} failed ({res.returncode}): {lines[-1]}"
                break
            os.replace(tmp, directory / name)
            return directory / name
        except (OSError, subprocess.SubprocessError) as err:
            _failure = f"{compiler} could not run: {err}"
            break
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    else:
        _failure = "no writable cache directory (" + "; ".join(errors) + ")"
    log.info("the C merge kernel is not built: %s", _failure)
    return None


def load(*, build_if_missing: bool = True) -> bool:
    """Load the library (building it first if allowed and missing); whether it is loaded."""
    global _function, _failure
    if _function is not None:
        return True
    path = cached() or (build() if build_if_missing else None)
    if path is None:
        return False
    try:
        fn = ctypes.CDLL(str(path)).hf_nearest_columns
    except (OSError, AttributeError) as err:
        _failure = f"{path} does not load: {err}"
        log.info("the C merge kernel is not used: %s", _failure)
        return False
    fn.restype = ctypes.c_int64
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    fn.argtypes = [p, i64, p, p, ctypes.c_int, ctypes.c_int, *[p] * 10]
    _function = fn
    return True


def _c(a: Int64) -> Int64:
    return np.ascontiguousarray(a, np.int64)


# What both compiled forms (this and fusion.policies._nearest_kernel) do around the kernel.
Groups = tuple[Int64, Int64, list[Int64], list[tuple[Int64, Int64]]]
UInt64 = np.ndarray[Any, np.dtype[np.uint64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]


def references_alone(refs: Int64) -> Groups:
    """The groups when no sensor but the references is asked for: every reference one.

    Raises :class:`Unsorted` when ``refs`` is not strictly increasing.
    """
    m = len(refs)
    if m > 1 and not bool(np.all(refs[1:] > refs[:-1])):
        raise Unsorted([0])
    return refs.copy(), np.arange(m, dtype=np.int64), [], []


def limits(
    matched: Sequence[tuple[Int64, int, bool]],
    windows: Sequence[tuple[Int64, int, int, bool]],
) -> tuple[UInt64, UInt64, UInt64, Bools]:
    """A row per sensor (the matched, then the windows): tolerance, before, after (each
    clamped to the span every distance is within; 0 where it does not apply), required."""
    n_m, n_w = len(matched), len(windows)
    tol = np.array([min(int(t), _SPAN) for _, t, _ in matched] + [0] * n_w, np.uint64)
    before = np.array([0] * n_m + [min(int(b), _SPAN) for _, b, _, _ in windows], np.uint64)
    after = np.array([0] * n_m + [min(int(a), _SPAN) for _, _, a, _ in windows], np.uint64)
    required = np.array([r for *_, r in matched] + [r for *_, r in windows], np.bool_)
    return tol, before, after, required


def scratch(n_m: int, n_w: int, m: int) -> tuple[Int64, Int64, Int64, Int64, Int64]:
    """The kernel's outputs, a row per reference: picks, window ``lo`` and ``hi``, times, refs.

    One allocation holds them all, so a large one is one mapping the allocator backs
    with huge pages where it can, not several whose every 4 KiB page faults as the
    kernel first writes it (2.7 ms of the kernel's 8.5 on 288,000 references)."""
    block = np.empty((n_m + 2 * n_w + 2, m), np.int64)
    pick = block[:n_m]
    lo = block[n_m : n_m + n_w]
    hi = block[n_m + n_w : n_m + 2 * n_w]
    return pick, lo, hi, block[-2], block[-1]


def trimmed(g: int, pick: Int64, lo: Int64, hi: Int64, out_t: Int64, out_ref: Int64) -> Groups:
    """The first ``g`` rows of the kernel's outputs (the complete groups), as returned."""
    picks = [pick[j, :g] for j in range(len(pick))]
    spans = [(lo[j, :g], hi[j, :g]) for j in range(len(lo))]
    return out_t[:g], out_ref[:g], picks, spans


def nearest_groups(
    refs: Int64,
    matched: Sequence[tuple[Int64, int, bool]],
    windows: Sequence[tuple[Int64, int, int, bool]],
) -> Groups:
    """:func:`fusion.policies._nearest_kernel.nearest_groups`, computed by the C library.

    Call :func:`load` first (:class:`~fusion.errors.UsageError` if it is not loaded). Raises
    :class:`Unsorted` for columns that are not strictly increasing.
    """
    fn = _function
    if fn is None:
        raise UsageError("the C merge kernel is not loaded: call load() first")
    refs = _c(refs)
    m = len(refs)
    n_m, n_w = len(matched), len(windows)
    if n_m + n_w == 0:
        return references_alone(refs)
    cols = [_c(x[0]) for x in matched] + [_c(x[0]) for x in windows]
    pointers = np.array([c.ctypes.data for c in cols], np.uintp)
    lens = np.array([len(c) for c in cols], np.int64)
    tol, before, after, flags = limits(matched, windows)
    required = flags.view(np.uint8)  # the C side reads one byte, 0 or 1
    pick, lo, hi, out_t, out_ref = scratch(n_m, n_w, m)
    unsorted = np.zeros(1 + n_m + n_w, np.uint8)
    arrays = (refs, pointers, lens, required, tol, before, after, pick, lo, hi, out_t, out_ref)
    refs_p, cols_p, lens_p, req_p, tol_p, before_p, after_p, *outs = (a.ctypes.data for a in arrays)
    sizes = (refs_p, m, cols_p, lens_p, n_m, n_w)
    g = int(fn(*sizes, req_p, tol_p, before_p, after_p, *outs, unsorted.ctypes.data))
    if g == -1:
        raise Unsorted(np.flatnonzero(unsorted).tolist())
    if g < 0:
        raise MemoryError("the C merge kernel could not allocate its scratch space")
    return trimmed(g, pick, lo, hi, out_t, out_ref)
