"""onnxruntime sessions: providers with a verified fallback, thread budgets, IO binding.

Provider choice
---------------
``providers="auto"`` asks for CUDA, then CPU; ``"tensorrt"`` asks for TensorRT,
then CUDA, then CPU (TensorRT builds engines for minutes on first use, so it is
never chosen unless asked). A list of provider names is taken as given, with
CPU appended as the last resort.

Listing a provider is not proof it works: ``onnxruntime-gpu`` lists CUDA on
every machine and, when the CUDA libraries or the device are missing, quietly
builds a CPU session instead. So each candidate is *verified*: its library must
load (``ctypes``, which also yields the reason when it does not, such as a
missing ``libcublasLt``), the session must build, and the live session's
``get_providers()`` must name it. A candidate that fails is logged once per
process with its reason, recorded in :attr:`ModelSession.failures`, and the
next candidate is tried. On a machine with no NVIDIA GPU at all, CUDA and
TensorRT failing is expected: that is one INFO line. A GPU that is present but
whose libraries do not load is a WARNING naming the library.

Threads
-------
onnxruntime's intra-op pool defaults to one thread per core, and its threads
spin while waiting for work. Next to a video decoder and a preprocessing
thread that oversubscribes the cores, which was measured to make inference
4.7x slower on 2 cores. Sessions here default to
``(free cores - reserved) // replicas`` intra-op threads (at least 1), one
inter-op thread and no spinning; ``reserve`` (default 0) counts cores other
stages keep busy. Without spinning a light decode thread shares the cores
cheaply: reserving a core for it left one of two idle (25 % slower, measured
in ``benchmarks/bench_infer.py``). A CPU worker given neither replicas nor
threads measures how to split the cores between replicas and threads
(:mod:`fusion.workers._layout`): a narrower pool per session costs less CPU
per item on a small CNN, and one replica computes while the other is between
batches, but a model whose weights do not fit the caches twice runs faster
as one session across every core.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fusion.errors import ConfigError, WorkerError

if TYPE_CHECKING:
    import onnxruntime as ort

    from fusion.workers._pinned import PinnedStaging

log = logging.getLogger("fusion.workers")

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"

_ALIASES = {"cpu": CPU, "cuda": CUDA, "tensorrt": TENSORRT, "trt": TENSORRT}
_CHAINS = {
    "auto": [CUDA, CPU],
    "cpu": [CPU],
    "cuda": [CUDA, CPU],
    "tensorrt": [TENSORRT, CUDA, CPU],
    "trt": [TENSORRT, CUDA, CPU],
}
_LIBRARIES = {
    CUDA: "libonnxruntime_providers_cuda.so",
    TENSORRT: "libonnxruntime_providers_tensorrt.so",
}
_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}

ModelSource = str | os.PathLike[str] | bytes


@dataclass(frozen=True, slots=True)
class ProviderFailure:
    """A provider that was asked for and could not be used, and why."""

    provider: str
    reason: str


def provider_chain(providers: str | Sequence[str]) -> list[str]:
    """The ordered candidates for ``providers`` ("auto", "cpu", "cuda", "tensorrt" or names)."""
    if isinstance(providers, str):
        key = providers.lower()
        if key in _CHAINS:
            return list(_CHAINS[key])
        providers = [providers]
    chain: list[str] = []
    for name in providers:
        full = _ALIASES.get(name.lower(), name)
        if full not in chain:
            chain.append(full)
    if not chain:
        raise ConfigError("providers: empty list; use 'auto', 'cpu', 'cuda' or provider names")
    if CPU not in chain:
        chain.append(CPU)
    return chain


def free_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def default_threads(replicas: int = 1, reserve: int = 0) -> int:
    """Intra-op threads per replica that keep the whole pipeline within the free cores."""
    return max(1, (free_cores() - reserve) // max(1, replicas))


def cpu_cores(reserve: int = 0) -> int:
    """The free cores less ``reserve`` (at least 1): what a CPU worker's layout splits
    between replicas and threads (:mod:`fusion.workers._layout`)."""
    return max(1, free_cores() - reserve)


def runs_on_cpu(providers: str | Sequence[str]) -> bool:
    """Whether a session for ``providers`` will be a CPU one: the chain's first provider
    is the CPU, or every provider before it fails its probe (:func:`probe_provider`)."""
    for provider in provider_chain(providers):
        if provider == CPU:
            return True
        if probe_provider(provider) is None:
            return False
    return True


_PROBING = threading.Lock()


def probe_provider(provider: str) -> str | None:
    """Why ``provider`` cannot work here, or ``None`` if it might. Cached per process.

    One thread probes at a time: the probe swaps ``sys.stdout`` while onnxruntime's
    ``preload_dlls`` prints, and two overlapping swaps would leave the process's
    stdout pointing at a discarded buffer (every later ``print`` lost).
    """
    with _PROBING:
        return _probe_provider(provider)


@functools.cache
def _probe_provider(provider: str) -> str | None:
    if provider == CPU:
        return None
    import onnxruntime as ort

    if provider not in ort.get_available_providers():
        return f"not built into this onnxruntime {ort.__version__} package"
    library = _LIBRARIES.get(provider)
    if library is None:
        return None
    capi = Path(ort.__file__).parent / "capi"
    if hasattr(ort, "preload_dlls"):  # CUDA/cuDNN from the nvidia-* wheels, when installed
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # it prints what it cannot load
                ort.preload_dlls(directory="")
        except Exception as err:  # any failure here is only a hint
            log.debug("onnxruntime.preload_dlls() failed: %s", err)
    try:
        ctypes.CDLL(str(capi / "libonnxruntime_providers_shared.so"), mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(str(capi / library))
    except OSError as err:
        return f"its library does not load: {err}{missing_library_hint(str(err))}"
    return None


_LIBRARY_NAMES = {
    "libcuda.so": "the NVIDIA driver (no GPU driver on this machine?)",
    "libcudart": "the CUDA runtime",
    "libcublas": "cuBLAS (CUDA)",
    "libcudnn": "cuDNN",
    "libcufft": "cuFFT (CUDA)",
    "libcurand": "cuRAND (CUDA)",
    "libnvrtc": "NVRTC (CUDA)",
    "libnvinfer": "TensorRT",
}


def missing_library_hint(message: str) -> str:
    """What the library named in a loader ``message`` is and how to get it ('' if none).

    onnxruntime-gpu is built against one CUDA major and one cuDNN major; its
    ``cuda`` and ``cudnn`` extras pin the ``nvidia-*`` wheels that match (read
    here from the installed package's metadata), which
    ``onnxruntime.preload_dlls()`` (called by :func:`probe_provider`) loads.
    """
    match = re.search(r"(lib[\w+-]+\.so(?:\.[\d.]+)?)", message)
    if match is None:
        return ""
    library = match.group(1)
    what = next((v for k, v in _LIBRARY_NAMES.items() if library.startswith(k)), None)
    if what is None:
        return ""
    if library.startswith("libcuda.so"):
        return f" ({library} is {what}; install the NVIDIA driver)"
    wheels = _gpu_extras()
    pinned = f": {', '.join(wheels)}" if wheels else ""
    return (
        f" ({library} is {what}; install the CUDA and cuDNN libraries this onnxruntime-gpu "
        f"was built for, e.g. pip install 'onnxruntime-gpu[cuda,cudnn]'{pinned}; "
        "see docs/workers.md)"
    )


@functools.cache
def _gpu_extras() -> tuple[str, ...]:
    """The nvidia-* requirements of the installed onnxruntime-gpu's cuda/cudnn extras."""
    from importlib import metadata

    try:
        requires = metadata.requires("onnxruntime-gpu") or []
    except metadata.PackageNotFoundError:
        return ()
    out = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if re.search(r"extra\s*==\s*[\"'](cuda|cudnn)[\"']", marker):
            out.append(spec.strip().replace(" ", ""))
    return tuple(out)


_reported: set[tuple[str, str]] = set()


@functools.cache
def nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU with its kernel driver loaded."""
    return os.path.exists("/proc/driver/nvidia/version") or bool(
        [n for n in _listdir("/dev") if n.startswith("nvidia") and n[6:].isdigit()]
    )


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _report(failure: ProviderFailure) -> None:
    key = (failure.provider, failure.reason)
    if key in _reported:
        return
    _reported.add(key)
    if failure.provider in (CUDA, TENSORRT) and not nvidia_gpu_present():
        log.info(
            "%s not used: this machine has no NVIDIA GPU; running on the CPU", failure.provider
        )
    else:
        log.warning("%s unavailable, falling back: %s", failure.provider, failure.reason)


def load_model(model: ModelSource) -> bytes:
    """The model's bytes, from a path or as given; a missing file is a :class:`WorkerError`."""
    if isinstance(model, bytes | bytearray):
        return bytes(model)
    path = Path(model)
    try:
        return path.read_bytes()
    except OSError as err:
        raise WorkerError(f"cannot read model file {str(path)!r}: {err.strerror}") from err


def session_options(threads: int, *, spin: bool = False) -> ort.SessionOptions:
    """Options with the thread budget applied (see the module docstring)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    # Failures surface as exceptions with the same text; keep onnxruntime's own log quiet.
    so.log_severity_level = 4
    return so


class ModelSession:
    """One onnxruntime session (one replica) on the first provider that verifiably works."""

    def __init__(
        self,
        model: bytes,
        providers: str | Sequence[str] = "auto",
        *,
        threads: int | None = None,
        provider_options: Mapping[str, Mapping[str, Any]] | None = None,
        spin: bool = False,
    ) -> None:
        self.threads = threads if threads is not None else default_threads()
        self.failures: list[ProviderFailure] = []
        chain = provider_chain(providers)
        options = dict(provider_options or {})
        session: ort.InferenceSession | None = None
        for provider in chain:
            session = self._try(model, provider, options, spin)
            if session is not None:
                break
        if session is None:
            reasons = "; ".join(f"{f.provider}: {f.reason}" for f in self.failures)
            raise WorkerError(f"no execution provider could run the model ({reasons})")
        self.session = session
        self.providers: list[str] = list(session.get_providers())
        self.device = "cuda" if self.providers[0] in (CUDA, TENSORRT) else "cpu"
        self._pinned: PinnedStaging | None = None
        if self.device == "cuda":
            from fusion.workers._pinned import PinnedStaging

            self._pinned = PinnedStaging()
        self.inputs = list(session.get_inputs())
        self.input_names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in session.get_outputs()]

    def _try(
        self, model: bytes, provider: str, options: dict[str, Mapping[str, Any]], spin: bool
    ) -> ort.InferenceSession | None:
        import onnxruntime as ort  # loaded with the first model, not with the package

        reason = probe_provider(provider)
        if reason is None:
            chain = [provider] if provider == CPU else [provider, CPU]
            opts = [dict(options.get(p, {})) for p in chain]
            try:
                session = ort.InferenceSession(
                    model,
                    sess_options=session_options(self.threads, spin=spin),
                    providers=chain,
                    provider_options=opts,
                )
            except Exception as err:
                if provider == CPU:
                    raise WorkerError(f"onnxruntime cannot load the model: {err}") from err
                reason = f"session creation failed: {err}"
            else:
                if session.get_providers()[0] == provider:
                    return session
                reason = (
                    "onnxruntime built the session on "
                    f"{session.get_providers()[0]} instead (driver, device or libraries missing)"
                )
        failure = ProviderFailure(provider, reason)
        self.failures.append(failure)
        _report(failure)
        return None

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch. On CUDA, inputs are bound once and copied to the device once, from
        reused page-locked host buffers (:mod:`fusion.workers._pinned`) when available."""
        if self.device == "cuda":
            assert self._pinned is not None
            binding = self.session.io_binding()
            for name, array in feeds.items():
                binding.bind_cpu_input(name, self._pinned.stage(name, array))
            for name in self.output_names:
                binding.bind_output(name)
            self.session.run_with_iobinding(binding)
            return list(binding.copy_outputs_to_cpu())
        return list(self.session.run(self.output_names, dict(feeds)))

    @property
    def host_buffers(self) -> str:
        """Where IO binding copies inputs from: ``"pinned"``, ``"pageable (why)"``, or
        ``"-"`` on the CPU provider (no copy)."""
        if self._pinned is None:
            return "-"
        return "pinned" if self._pinned.pinned else f"pageable ({self._pinned.reason})"

    def feeds(self, arrays: Any) -> dict[str, np.ndarray]:
        """Name preprocess output: a dict as is, one array for the only input, or a sequence."""
        if isinstance(arrays, Mapping):
            return dict(arrays)
        if isinstance(arrays, np.ndarray):
            if len(self.input_names) != 1:
                raise ConfigError(
                    f"preprocess returned one array but the model has inputs {self.input_names}"
                )
            return {self.input_names[0]: arrays}
        arrays = list(arrays)
        if len(arrays) != len(self.input_names):
            raise ConfigError(
                f"preprocess returned {len(arrays)} arrays; the model has inputs {self.input_names}"
            )
        return dict(zip(self.input_names, arrays, strict=True))

    def dummy_feeds(self, batch: int) -> dict[str, np.ndarray] | None:
        """Zeros of each input's shape at ``batch``, or ``None`` if a non-batch dim is symbolic."""
        feeds: dict[str, np.ndarray] = {}
        for node in self.inputs:
            shape: list[int] = []
            for axis, dim in enumerate(node.shape):
                if isinstance(dim, int) and dim > 0:
                    shape.append(dim)
                elif axis == 0:
                    shape.append(batch)
                else:
                    return None
            dtype = _DTYPES.get(node.type)
            if dtype is None:
                return None
            feeds[node.name] = np.zeros(shape, dtype)
        return feeds

    def __repr__(self) -> str:
        return f"ModelSession(providers={self.providers}, threads={self.threads})"
