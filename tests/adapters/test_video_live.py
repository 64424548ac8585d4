"""VideoSource on a live MPEG-TS stream over UDP on 127.0.0.1 that drops and comes back."""

from __future__ import annotations

import socket

import anyio
import pytest

from adapters import VideoSource
from adapters.errors import SourceOpenError
from adapters.video._synth import MpegTsSender
from fusion._frames import Frame

LIVE_OPTIONS = {"analyzeduration": "200000", "probesize": "32768", "fflags": "nobuffer"}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.slow
async def test_live_udp_stream_reconnects_after_the_sender_restarts() -> None:
    port = free_udp_port()
    source = VideoSource(
        f"udp://127.0.0.1:{port}",
        read_timeout=0.5,
        open_timeout=5.0,
        backoff=(0.05, 0.2),
        options=LIVE_OPTIONS,
        prefetch=16,
    )
    assert source.live
    assert source.spec.overflow == "drop_oldest"
    first = MpegTsSender(port, fps=50).start()
    second: MpegTsSender | None = None
    frames: list[Frame] = []
    try:
        with anyio.fail_after(40):
            async with source:
                async for frame in source.frames():
                    frames.append(frame)
                    before = [f for f in frames if f.meta["connection"] == 0]
                    if second is None and len(before) >= 10:
                        first.stop()  # the camera drops off the network mid-stream ...
                        second = MpegTsSender(port, fps=50, first_index=first.sent + 100)
                        await anyio.sleep(1.0)  # real UDP, real silence: no virtual clock here
                        second.start()  # ... and comes back with later timestamps
                    after = [f for f in frames if f.meta["connection"] >= 1]
                    if len(after) >= 10:
                        break
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert first.error is None
    assert second is not None
    assert second.error is None
    stats = source.statistics()["video"]
    assert stats["disconnects"] >= 1
    assert stats["connections"] >= 2
    assert len(stats["gaps_ns"]) >= 1
    assert stats["gaps_ns"][0] >= 500_000_000
    assert source.errors["disconnect"] >= 1
    after = [f for f in frames if f.meta["connection"] >= 1]
    assert after[0].meta["gap_ns"] == stats["gaps_ns"][0]
    # live frames carry host arrival times and the stream's own PTS times
    assert all(f.t_arrival is not None for f in frames)
    assert after[0].t_sensor > frames[0].t_sensor
    arrivals = [f.t_arrival for f in frames if f.t_arrival is not None]
    assert arrivals == sorted(arrivals)
    assert [f.seq for f in frames] == sorted(f.seq for f in frames)


async def test_live_source_that_never_receives_gives_up_after_max_reconnects() -> None:
    port = free_udp_port()
    source = VideoSource(
        f"udp://127.0.0.1:{port}",
        read_timeout=0.2,
        open_timeout=0.2,
        backoff=(0.01, 0.02),
        max_reconnects=2,
        options=LIVE_OPTIONS,
    )

    async def drain() -> None:
        async with source:
            async for _ in source.frames():
                pass

    with anyio.fail_after(20), pytest.raises(SourceOpenError, match="gave up after 2 reconnects"):
        await drain()
