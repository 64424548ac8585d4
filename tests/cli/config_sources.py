"""A user's own Source class, named by a TOML config as ``tests.cli.config_sources:Ticker``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np

from fusion.frames import Frame, SensorSpec
from fusion.source import Source


class Ticker(Source):
    """``count`` frames ``period_ms`` apart, each holding its index."""

    def __init__(self, *, name: str = "ticker", count: int, period_ms: float = 10.0) -> None:
        super().__init__(SensorSpec(name, kind="generic", rate_hz=1000.0 / period_ms))
        self.count = count
        self.period_ns = int(period_ms * 1_000_000)

    async def frames(self) -> AsyncIterator[Frame]:
        for i in range(self.count):
            yield self.make_frame(i * self.period_ns, np.array([i], np.int64))
