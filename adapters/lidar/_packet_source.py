"""The shell the packet LiDAR sources share (:class:`~adapters.VelodyneSource`,
:class:`~adapters.HesaiSource`): what moves packets and sweeps, not what decodes them.

It holds the spec (a ``lidar`` sensor; a live stream drops its oldest frame when
the consumer lags, a file waits), the live socket's binding and
:meth:`wait_listening`, the loop that reads a file in worker-thread batches paced
at ``speed``, the ``partial_sweep`` rule, and the statistics and ``repr`` both
give. The subclass says where its packets come from (:meth:`_input_text`) and
how they become sweeps.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

import anyio

from adapters.net import UdpReceiver
from fusion import Frame, Overflow, SensorSpec, Source, StreamWatch, current_clock
from fusion.clock import ClockModel
from fusion.errors import ConfigError, UsageError

log = logging.getLogger("hyperframes.lidar")

T = TypeVar("T")


class Sweep(Protocol):
    """What the shell needs of a sweep: whether it is partial and how many packets it holds."""

    @property
    def partial(self) -> bool: ...

    @property
    def units(self) -> int: ...


class PacketLidarSource(Source):
    """A LiDAR whose units are UDP packets, live or from a file (internal base)."""

    _ledger_unit = "packet"

    def __init__(
        self,
        *,
        name: str,
        live: bool,
        meta: dict[str, Any],
        speed: float | None,
        clock: ClockModel | None,
        capacity: int,
        overflow: Overflow | None,
        jump_threshold: float,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ConfigError(f"speed must be > 0 or None, got {speed}")
        self.speed = speed
        self._meta = meta
        super().__init__(
            SensorSpec(
                name,
                kind="lidar",
                clock=clock,
                capacity=capacity,
                overflow=overflow or ("drop_oldest" if live else "block"),
                meta=meta,
            )
        )
        self.watch = StreamWatch(name, int(jump_threshold * 1e9), log)
        """Segments and gaps of the live stream."""
        self.udp: UdpReceiver | None = None
        """The live socket's receiver (kernel drops, foreign senders), once listening."""
        self.other_datagrams: Counter[tuple[int, int]] = Counter()
        """Datagrams of a file to other ports, by (port, size)."""
        self._listening: anyio.Event | None = None
        self._bound_port: int | None = None

    # -- what the subclass says -----------------------------------------------------------

    def _input_text(self) -> str | None:
        """``pcap='...'`` (or another file argument) when reading a file; None when live."""
        raise NotImplementedError

    # -- live ---------------------------------------------------------------------------

    async def wait_listening(self) -> int:
        """Wait until the live socket is bound; return its UDP port."""
        if self._input_text() is not None:
            raise UsageError("wait_listening() is for live sources (port=...)")
        await self._listening_event().wait()
        assert self._bound_port is not None
        return self._bound_port

    def _listening_event(self) -> anyio.Event:
        if self._listening is None:
            self._listening = anyio.Event()
        return self._listening

    def _receiver(
        self, host: str, port: int, sender: str | None, recv_buffer: int | None, timeout: Any
    ) -> UdpReceiver:
        """The live socket's receiver; the packets are counted received as they are taken."""
        self._listening_event()
        return UdpReceiver(
            self,
            host=host,
            port=port,
            sender=sender,
            recv_buffer=recv_buffer,
            sender_timeout=timeout,
            counts_admitted=False,
        )

    def _bound(self, receiver: UdpReceiver) -> None:
        """The receiver is open: say so to :meth:`wait_listening`."""
        self.udp = receiver
        self._bound_port = receiver.port
        self._listening_event().set()

    # -- files --------------------------------------------------------------------------

    @property
    def from_file(self) -> bool:
        """Reading a file: a pipeline of files merges its sources by time."""
        return self._input_text() is not None

    async def _paced(
        self,
        batch: Callable[[], list[T] | None],
        arrival: Callable[[T], int | None],
        frame: Callable[[T], Frame],
    ) -> AsyncIterator[Frame]:
        """The frames of ``batch()`` called in a worker thread until it returns None,
        each due at its ``arrival`` (capture time) scaled by ``speed`` (None: at once)."""
        clock = current_clock()
        start: tuple[int, int] | None = None  # (host now, capture time) of the first frame
        while True:
            items = await self.run_blocking(batch)
            if items is None:
                return
            for item in items:
                t = arrival(item)
                if self.speed is not None and t is not None:
                    if start is None:
                        start = (clock.now(), t)
                    await clock.sleep_until(start[0] + round((t - start[1]) / self.speed))
                yield frame(item)

    # -- both ---------------------------------------------------------------------------

    def _wanted(self, sweep: Sweep) -> bool:
        """Whether a sweep becomes a frame: a partial one is dropped (its packets lost as
        ``partial_sweep``) when ``partial_sweeps`` is False."""
        if self.partial_sweeps or not sweep.partial:
            return True
        self.ledger().lose("partial_sweep", sweep.units)
        return False

    partial_sweeps: bool = True

    def _no_sweep(self, packets: int, what: str) -> str:
        """Why ``packets`` packets (``what``) gave no sweep: the losses and the last error."""
        stats = self.ledger().statistics()
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(stats.lost.items())) or "none lost"
        return f"{packets} packets{what} gave no sweep ({reasons}); last error: {self.last_error}"

    def _statistics(self, model: str | None, packets: int, dual: int) -> dict[str, Any]:
        stats = dict(super().statistics())
        stats.update(
            model=model,
            packets=packets,
            dual_packets=dual,
            other_datagrams={f"{p}/{s}": n for (p, s), n in self.other_datagrams.items()},
            **self.watch.as_dict(),
        )
        if self.udp is not None:
            stats["udp"] = self.udp.statistics().as_dict()
        return stats

    def _repr(self, live_port: int | None, model: str) -> str:
        where = self._input_text() or f"port={live_port}"
        return f"{type(self).__name__}({where}, model={model!r}, name={self.name!r})"
