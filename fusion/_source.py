"""The base class for sources: how a sensor's frames enter hyperframes.

A source has a ``name``, the :class:`~fusion.SensorSpec` of each sensor it
produces (usually one; a replayed recording produces many), and an async
generator :meth:`Source.frames`. Rules every source follows:

* blocking device or decoder I/O runs in a worker thread (:meth:`Source.run_blocking`),
  never on the event loop;
* ``seq`` counts from 0 per sensor (:meth:`Source.make_frame` does this);
* a bad packet or frame is counted (:meth:`Source.count_error`) and skipped,
  never raised out of ``frames()``, unless the source cannot go on at all;
* every unit it reads (datagram, packet, message, row, file) is accounted for
  in its :class:`~fusion._ledger.InputLedger`: :meth:`Source.count_received` when
  it arrives, then a frame (``make_frame(..., units=n)``) or a loss
  (``count_error(reason, ..., units=n)``). A source that never calls
  ``count_received`` counts one unit per frame and per error;
* :meth:`Source.frame_batches` hands the hub frames in lists (one frame per list
  unless the source overrides it to pass a burst at once);
* cancellation is honest: ``frames()`` stops at the next checkpoint and
  :meth:`Source.aclose` releases devices and files.

The smallest whole custom adapter is the ``Thermometer`` of
``examples/custom_adapter.py`` (README.md and docs/sync.md show that same class).
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, TypeVar

from fusion._frames import Frame, SensorSpec
from fusion._ledger import InputLedger, LedgerStatistics
from fusion._timing import current_clock, run_sync
from fusion.errors import ConfigError

T = TypeVar("T")

ERROR_SAMPLES = 3
"""Distinct messages a source keeps per error reason (the first ones): enough to say
what went wrong, bounded however many items a reason costs."""


class Source(ABC):
    """Base class for every source of frames (contract)."""

    def __init__(
        self, spec: SensorSpec | None = None, *, specs: tuple[SensorSpec, ...] = ()
    ) -> None:
        if spec is None and not specs:
            raise ConfigError("a Source needs a SensorSpec (spec=) or several (specs=)")
        for given in (spec,) if spec is not None else tuple(specs):
            if not isinstance(given, SensorSpec):
                raise ConfigError(
                    f"{type(self).__name__}: Source.__init__ takes a SensorSpec (spec=) or "
                    f"several (specs=), got {type(given).__name__} {given!r}: pass "
                    f"SensorSpec({given!r}) instead"
                )
        self._specs: tuple[SensorSpec, ...] = (spec,) if spec is not None else tuple(specs)
        self._next_seq: dict[str, int] = {}
        self.errors: Counter[str] = Counter()
        """Frames or packets this source skipped, by reason."""
        self.last_error: str | None = None
        """Message of the most recent skipped item, for humans."""
        self.error_messages: dict[str, Counter[str]] = {}
        """Per reason, its first :data:`ERROR_SAMPLES` distinct messages, each with how
        many errors said it; ``errors[reason]`` less their sum said other messages."""
        self._ledgers: dict[str, InputLedger] = {}
        self._closed = False

    @property
    def name(self) -> str:
        """The source's name: its (first) sensor's name."""
        return self._specs[0].name

    @property
    def spec(self) -> SensorSpec:
        """The spec of the source's (first) sensor."""
        return self._specs[0]

    @property
    def specs(self) -> tuple[SensorSpec, ...]:
        """Specs of every sensor this source produces."""
        return self._specs

    @abstractmethod
    def frames(self) -> AsyncIterator[Frame]:
        """Yield frames in arrival order until the source ends or is cancelled."""

    async def frame_batches(self) -> AsyncIterator[list[Frame]]:
        """:meth:`frames` in lists, as they came: what the hub reads.

        A list of one per frame by default. A source that receives many units
        at once (a UDP socket drained per wakeup) overrides it to hand over a
        burst as one list, so the burst costs one trip through the event loop
        instead of one per frame; the frames, their order and seq are the same.
        """
        async with aclosing(self.frames()) as frames:  # type: ignore[type-var]
            async for frame in frames:
                yield [frame]

    def make_frame(
        self,
        t_sensor: int,
        data: Any,
        *,
        sensor: str | None = None,
        t_arrival: int | None = None,
        meta: dict[str, Any] | None = None,
        units: int = 1,
    ) -> Frame:
        """Build the next frame of ``sensor`` (default: this source's), numbering ``seq``.

        ``units`` is how many received units went into it (packets of a sweep;
        0 for a second frame made from the same unit), for the ledger.
        """
        name = self.name if sensor is None else sensor
        seq = self._next_seq.get(name, 0)
        self._next_seq[name] = seq + 1
        self.ledger(name).emit(units)
        return Frame(
            name,
            seq,
            int(t_sensor),
            data,
            t_sensor=int(t_sensor),
            t_arrival=t_arrival,
            meta={} if meta is None else meta,
        )

    def now(self) -> int:
        """Host time from the current runtime clock, for ``t_arrival``."""
        return current_clock().now()

    def ledger(self, sensor: str | None = None) -> InputLedger:
        """The input ledger of ``sensor`` (default: this source's first sensor)."""
        name = self.name if sensor is None else sensor
        found = self._ledgers.get(name)
        if found is None:
            found = self._ledgers[name] = InputLedger(self._ledger_unit)
        return found

    _ledger_unit = "frame"
    """What one unit of this source is, for its ledgers (subclasses override)."""

    def count_received(self, units: int = 1, *, sensor: str | None = None) -> None:
        """``units`` arrived for ``sensor``; each must end as a frame or a counted loss."""
        self.ledger(sensor).receive(units)

    def count_error(
        self,
        reason: str,
        message: str,
        *,
        units: int = 1,
        sensor: str | None = None,
        arrived: bool = True,
    ) -> None:
        """Record a skipped unit: counted by ``reason`` in the errors and the ledger,
        message kept. ``units=0`` counts the error without losing input (a warning);
        ``arrived=False`` for units never counted received (the kernel's drops)."""
        self.errors[reason] += 1
        self.last_error = message
        kept = self.error_messages.setdefault(reason, Counter())
        if message in kept or len(kept) < ERROR_SAMPLES:
            kept[message] += 1
        self.ledger(sensor).lose(reason, units, arrived=arrived)

    def ledgers(self) -> dict[str, LedgerStatistics]:
        """A snapshot of every sensor's ledger (sensors that saw nothing included)."""
        for spec in self._specs:
            self.ledger(spec.name)
        return {name: ledger.statistics() for name, ledger in self._ledgers.items()}

    async def run_blocking(self, func: Callable[..., T], *args: object) -> T:
        """Run blocking I/O in a worker thread (the event loop stays free)."""
        return await run_sync(func, *args)

    def resize_in_decoder(self, size: tuple[int, int], interpolation: str) -> str | None:
        """Deliver images at ``size`` ``(width, height)``, resized with ``interpolation``
        (``"area"``, ``"bilinear"``, ``"nearest"``) as they are decoded, if this source can.

        Returns ``None`` when it will, else the reason it cannot. Called before
        ``frames()`` runs (by :func:`fusion.workers._preprocess.fuse_resize`), so a
        model's resize costs nothing beyond the decoder's own conversion. A
        source that can resize for free overrides this; by default it cannot.
        """
        return f"{type(self).__name__} does not resize while decoding"

    def pace_decoder(self, consumer_cpu_s: float, cores: int) -> str | None:
        """The consumer of the frames spends ``consumer_cpu_s`` CPU seconds on each, on
        ``cores`` cores shared with this source: a source that decodes may choose its
        decoder's threads from it (one thread when it keeps up on one core while the
        others run the consumer; its own threads when it is the bottleneck).

        Returns ``None`` when it takes the figure into account, else why not. Called
        before ``frames()`` runs (by a CPU :class:`~fusion.workers.BatchWorker` that
        wires the source); by default a source has no decoder threads to choose.
        """
        return f"{type(self).__name__} has no decoder threads to choose"

    @property
    def from_file(self) -> bool:
        """True when the source reads a file (a video or audio file, a capture, a log, a
        recording): its frames are all there, so waiting for them loses nothing. A
        :class:`~fusion.Pipeline` whose sources all read files merges them by time
        instead of resolving groups by a wall-clock deadline (see :mod:`fusion._hub`).
        False (the default) for live sources and any source that does not say."""
        return False

    def expected_frames(self) -> int | None:
        """How many frames ``frames()`` will yield, when the source knows (a file read
        whole); ``None`` for a live or open-ended source. For progress bars only."""
        return None

    def silence_timeout_s(self) -> float:
        """Seconds without a frame after which an operator should be told "no data".

        Five periods of the nominal rate (at least 1 s), else 2 s; a source with a
        read timeout of its own (a live camera) says that instead.
        """
        rate = self.spec.rate_hz
        return max(1.0, 5.0 / rate) if rate else 2.0

    def idle_reason(self, sensor: str) -> str | None:
        """Why ``sensor`` sends nothing, when the source knows (a ROS 2 topic that no
        publisher serves: ``"no publisher"``); the live table then shows ``<reason> for
        12.3 s`` instead of ``no data for 12.3 s``. ``None`` (the default): it does not know."""
        return None

    def statistics(self) -> Mapping[str, Any]:
        """Frames produced per sensor, errors by reason and each sensor's ledger."""
        return {
            "frames": dict(self._next_seq),
            "errors": dict(self.errors),
            "ledger": {name: stats.as_dict() for name, stats in self.ledgers().items()},
        }

    async def aclose(self) -> None:
        """Release devices and files. Safe to call twice."""
        self._closed = True

    async def __aenter__(self: _S) -> _S:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _warn_unclosed(self) -> None:
        if not self._closed:
            warnings.warn(f"source {self.name!r} was not closed", ResourceWarning, stacklevel=2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(s.name for s in self._specs)})"


_S = TypeVar("_S", bound=Source)
