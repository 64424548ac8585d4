"""Model work for a batch, run in the worker's threads: preprocess, run, postprocess, isolate.

:class:`ModelRunner` owns the onnxruntime session replicas of one
:class:`~fusion.BatchWorker` and everything done to a batch off the event loop:

* :meth:`ModelRunner.prepare` turns items into named input arrays with the
  user's ``preprocess`` (by default the items' ``data`` stacked);
* :meth:`ModelRunner.run_batch` runs them on one replica and ``postprocess``
  es the outputs into one value per item. When the batch raises, the session
  is probed with a known-good dummy input: a session that cannot run it any
  more is rebuilt (counted in :attr:`ModelRunner.restarts`, bounded by
  ``max_restarts``) and the batch retried; otherwise the batch is split in
  halves, and each failing half again, until every failure is pinned to one
  item. Those items get their error, all others their value.

Nothing here touches the event loop or the clock, so it is safe to call from
any thread; replicas never share a session.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fusion._frames import Frame
from fusion.errors import ConfigError, WorkerError
from fusion.workers._results import Outcome
from fusion.workers._sessions import ModelSession, ProviderFailure, load_model

log = logging.getLogger("fusion.workers")

Preprocess = Callable[[list[Any]], Any]
Postprocess = Callable[[list[Any], list[np.ndarray]], Sequence[Any]]
Feeds = dict[str, np.ndarray]


class ModelRunner:
    """The session replicas of one worker and the per-batch model work (thread side)."""

    def __init__(
        self,
        model: bytes,
        *,
        providers: str | Sequence[str],
        replicas: int,
        threads: int,
        preprocess: Preprocess | None,
        postprocess: Postprocess | None,
        max_restarts: int,
        provider_options: Mapping[str, Mapping[str, Any]] | None,
    ) -> None:
        self._model = model
        self._providers = providers
        self._threads = threads
        self._provider_options = provider_options
        self._preprocess = preprocess
        self._postprocess = postprocess
        self.max_restarts = max_restarts
        self.restarts = 0
        self._restart_lock = threading.Lock()
        self.sessions = [self._new_session() for _ in range(replicas)]
        self._local = threading.local()  # per replica thread: the buffer it stacks into
        self._capacity = 1  # the largest batch a replica's buffer holds (max_batch once warm)
        self.probe: Feeds | None = self.sessions[0].dummy_feeds(1)
        """A known-good input (batch 1) to tell a dead session from bad data."""

    @classmethod
    def load(cls, source: Any, **kwargs: Any) -> ModelRunner:
        """Read the model (path or bytes) and build the replicas."""
        return cls(load_model(source), **kwargs)

    @functools.cached_property
    def digest(self) -> str:
        """A hash of the model's bytes (what the sizes it ran best at are kept under)."""
        return hashlib.blake2b(self._model, digest_size=16).hexdigest()

    @property
    def device(self) -> str:
        return self.sessions[0].device

    @property
    def providers(self) -> list[str]:
        return list(self.sessions[0].providers)

    @property
    def provider_failures(self) -> list[ProviderFailure]:
        return list(self.sessions[0].failures)

    def _new_session(self) -> ModelSession:
        return ModelSession(
            self._model,
            self._providers,
            threads=self._threads,
            provider_options=self._provider_options,
        )

    # -- warm-up ---------------------------------------------------------------

    def warm_up(self, warmup: bool | Sequence[Any], max_batch: int) -> None:
        """Run dummy inputs (``True``) or sample items on every replica before real work."""
        self._capacity = max(self._capacity, max_batch)
        if warmup is False:
            return
        session = self.sessions[0]
        if warmup is True:
            if self.probe is None:
                log.info(
                    "warm-up skipped: the model's inputs have symbolic dimensions other than "
                    "the batch; pass warmup=[sample items] to warm up with real shapes"
                )
                return
            batches = [session.dummy_feeds(n) for n in sorted({1, max_batch})]
            feeds_list = [f for f in batches if f is not None]
        else:
            feeds_list = [self.prepare(list(warmup))]
            self.probe = {k: np.ascontiguousarray(v[:1]) for k, v in feeds_list[0].items()}
        for replica in self.sessions:
            for feeds in feeds_list:
                replica.run(feeds)

    # -- one batch ---------------------------------------------------------------

    def prepare(self, items: list[Any], replica: int | None = None) -> Feeds:
        """``preprocess(items)`` named by the model's inputs.

        Without a ``preprocess`` the items' data are stacked; given the ``replica``
        whose thread prepares and then runs the batch, into that thread's reused
        buffer (in use only until its ``run_batch`` returns, on that same thread):
        a fresh batch array per batch cost page faults on every batch.
        """
        if self._preprocess is not None:
            arrays = self._preprocess(items)
        else:
            data = [np.asarray(_data(it)) for it in items]
            arrays = self._stack(data, replica)
        return self.sessions[0].feeds(arrays)

    def _stack(self, data: list[np.ndarray], replica: int | None) -> np.ndarray:
        first = data[0] if data else None
        if replica is None or first is None or any(d.dtype != first.dtype for d in data):
            return np.stack(data)  # mixed dtypes: numpy's promotion, as ever
        # One buffer per thread, not per replica index: two streams of one worker run
        # replica threads of the same index side by side.
        buffer: np.ndarray | None = getattr(self._local, "buffer", None)
        shape, n = first.shape, len(data)
        fits = buffer is not None and buffer.dtype == first.dtype and buffer.shape[1:] == shape
        if buffer is None or not fits or len(buffer) < n:
            capacity = max(n, self._capacity)
            buffer = self._local.buffer = np.empty((capacity, *shape), first.dtype)
        return np.stack(data, out=buffer[:n])  # checks every item's shape as ever

    def run_batch(
        self, replica: int, items: list[Any], feeds: Feeds | None
    ) -> tuple[list[Outcome], int]:
        """One outcome per item and the number of splits it took to isolate failures.

        ``feeds`` is the batch already prepared, or ``None`` when preprocess
        failed (the items are then prepared again in halves to find the culprit).
        Raises :class:`~fusion.WorkerError` only when sessions died too often.
        """
        try:
            return self._attempt(replica, items, feeds), 0
        except Exception as err:
            first = err
        if not self._session_alive(replica):
            self._restart(replica, first)
            try:
                return self._attempt(replica, items, feeds), 0
            except Exception as err:
                first = err
        splits = [0]
        return self._isolate(replica, items, feeds, first, splits), splits[0]

    def _attempt(self, replica: int, items: list[Any], feeds: Feeds | None) -> list[Outcome]:
        if feeds is None:
            feeds = self.prepare(items)
        outputs = self.sessions[replica].run(feeds)
        if self._postprocess is not None:
            values = self._postprocess(items, outputs)
        else:
            values = list(outputs[0])
        if len(values) != len(items):
            raise WorkerError(
                f"postprocess returned {len(values)} values for a batch of {len(items)} items"
            )
        return [Outcome(value=v) for v in values]

    def _isolate(
        self,
        replica: int,
        items: list[Any],
        feeds: Feeds | None,
        err: BaseException,
        splits: list[int],
    ) -> list[Outcome]:
        """Split a failing batch in halves until each failure is pinned to single items."""
        if len(items) == 1:
            return [Outcome(error=err)]
        splits[0] += 1
        mid = len(items) // 2
        out: list[Outcome] = []
        for lo, hi in ((0, mid), (mid, len(items))):
            part = items[lo:hi]
            part_feeds = _slice_feeds(feeds, lo, hi, len(items))
            try:
                out.extend(self._attempt(replica, part, part_feeds))
            except Exception as sub:
                out.extend(self._isolate(replica, part, part_feeds, sub, splits))
        return out

    def _session_alive(self, replica: int) -> bool:
        if self.probe is None:
            return True  # nothing known to be runnable: assume the data is at fault
        try:
            self.sessions[replica].run(self.probe)
        except Exception:
            return False
        return True

    def _restart(self, replica: int, cause: BaseException) -> None:
        with self._restart_lock:
            self.restarts += 1
            if self.restarts > self.max_restarts:
                raise WorkerError(
                    f"the model session died {self.restarts} times (limit {self.max_restarts}); "
                    f"last error: {cause}"
                ) from cause
            log.warning("session of replica %d died (%s); restarting it", replica, cause)
            self.sessions[replica] = self._new_session()


def _slice_feeds(feeds: Feeds | None, lo: int, hi: int, n: int) -> Feeds | None:
    """Rows ``lo:hi`` of each input, or ``None`` (preprocess again) if axis 0 is not the batch."""
    if feeds is None or any(a.ndim == 0 or a.shape[0] != n for a in feeds.values()):
        return None
    return {k: v[lo:hi] for k, v in feeds.items()}


def _data(item: Any) -> Any:
    if isinstance(item, Frame):
        return item.data
    raise ConfigError(
        f"no preprocess given and {type(item).__name__} is not a Frame: pass preprocess="
    )
