"""A user's own Source class, named by a TOML config as ``tests.config.config_sources:Ticker``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from fusion._frames import Frame, SensorSpec
from fusion._source import Source


class Ticker(Source):
    """``count`` frames ``period_ms`` apart, each holding its index."""

    def __init__(self, *, name: str = "ticker", count: int, period_ms: float = 10.0) -> None:
        super().__init__(SensorSpec(name, kind="generic", rate_hz=1000.0 / period_ms))
        self.count = count
        self.period_ns = int(period_ms * 1_000_000)

    async def frames(self) -> AsyncIterator[Frame]:
        for i in range(self.count):
            yield self.make_frame(i * self.period_ns, np.array([i], np.int64))


class Lossy(Source):
    """Counts ``count`` datagrams; every ``bad_every``-th is too short and lost.

    ``bad_every = 1`` loses them all: input arrived and no frame came of it.
    """

    _ledger_unit = "datagram"

    def __init__(self, *, name: str = "lossy", count: int, bad_every: int = 0) -> None:
        super().__init__(SensorSpec(name, kind="generic", rate_hz=100.0))
        self.count = count
        self.bad_every = bad_every

    async def frames(self) -> AsyncIterator[Frame]:
        for i in range(self.count):
            self.count_received()
            if self.bad_every and i % self.bad_every == 0:
                self.count_error("bad_length", f"{self.name}: datagram {i} has 3 bytes, want 8")
                continue
            yield self.make_frame(i * 10_000_000, np.array([i], np.int64))


class NameAsSpec(Source):
    """A common slip: the sensor's name given where ``Source.__init__`` takes a SensorSpec."""

    def __init__(self, *, name: str = "slip") -> None:
        super().__init__(name)  # type: ignore[arg-type]

    async def frames(self) -> AsyncIterator[Frame]:
        yield self.make_frame(0, None)
