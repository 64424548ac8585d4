"""A live VideoSource stops within a second however it is waiting: opening, reading, backing off.

Real sockets on loopback. The bound asserted is the issue's (a cancel under 1 s); the
interrupt hook makes the decoder thread notice within one FFmpeg poll (~0.1 s), so the
bound has a wide margin even on a loaded machine.
"""

from __future__ import annotations

import socket
import time

import anyio
import pytest

from adapters import VideoSource
from adapters.video import _interrupt as interrupt
from adapters.video._probe import is_live
from adapters.video._synth import MpegTsSender
from fusion._frames import Frame

LIVE_OPTIONS = {"analyzeduration": "200000", "probesize": "32768", "fflags": "nobuffer"}


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def seconds_to_stop(source: VideoSource, after: float) -> float:
    """Iterate ``source`` for ``after`` seconds, cancel, and time how long the stop takes."""
    cancelled_at = 0.0

    async def consume() -> None:
        async with source:
            async for _ in source.frames():
                pass

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(after)
            cancelled_at = time.monotonic()
            tg.cancel_scope.cancel()
    return time.monotonic() - cancelled_at


def test_the_interrupt_hook_is_in_place() -> None:
    assert interrupt.install()


@pytest.mark.serial  # a second of wall clock: the bulk pass's load is not the source's
async def test_cancel_while_opening_a_silent_udp_stream_takes_under_a_second() -> None:
    source = VideoSource(f"udp://127.0.0.1:{free_port()}", open_timeout=30, read_timeout=30)
    assert await seconds_to_stop(source, 0.5) < 1.0


@pytest.mark.serial  # a second of wall clock: the bulk pass's load is not the source's
async def test_cancel_while_backing_off_between_reconnects_takes_under_a_second() -> None:
    # nothing listens on this TCP port: every connect is refused, the source backs off
    source = VideoSource(f"tcp://127.0.0.1:{free_port(socket.SOCK_STREAM)}", backoff=(5.0, 5.0))
    assert await seconds_to_stop(source, 0.5) < 1.0


@pytest.mark.slow
@pytest.mark.serial  # a second of wall clock: the bulk pass's load is not the source's
async def test_cancel_while_a_live_stream_is_silent_takes_under_a_second() -> None:
    port = free_port()
    sender = MpegTsSender(port, fps=50).start()
    source = VideoSource(
        f"udp://127.0.0.1:{port}", read_timeout=30, options=LIVE_OPTIONS, prefetch=16
    )
    frames: list[Frame] = []
    silent = anyio.Event()

    async def consume() -> None:
        async with source:
            async for frame in source.frames():
                frames.append(frame)
                if len(frames) == 10:
                    sender.stop()  # silence: the read waits up to its 30 s timeout
                    silent.set()

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await silent.wait()
                await anyio.sleep(0.5)
                cancelled_at = time.monotonic()
                tg.cancel_scope.cancel()
    finally:
        sender.stop()
    assert time.monotonic() - cancelled_at < 1.0


@pytest.mark.slow
async def test_a_silent_stream_is_reported_as_no_data_for_the_read_timeout() -> None:
    port = free_port()
    sender = MpegTsSender(port, fps=50).start()
    source = VideoSource(
        f"udp://127.0.0.1:{port}",
        read_timeout=0.3,
        backoff=(0.05, 0.1),
        options=LIVE_OPTIONS,
    )

    async def consume() -> None:
        async with source:
            async for frame in source.frames():
                if frame.seq == 5:
                    sender.stop()

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                for _ in range(400):  # polled: no frame comes to say it happened
                    if source.errors["disconnect"]:
                        break
                    await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
    finally:
        sender.stop()
    assert source.last_error == "sensor 'camera': no data for 0.3 s"
    assert "Immediate exit" not in (source.last_error or "")


@pytest.mark.parametrize(
    ("url", "live"),
    [
        ("http://cam.local/stream.ts", True),
        ("https://cam.local/live.m3u8", True),
        ("rtsp://cam/1", True),
        ("rtmp://cam/live", True),
        ("srt://127.0.0.1:9000", True),
        ("udp://127.0.0.1:5000", True),
        ("tcp://127.0.0.1:5000", True),
        ("clip.mp4", False),
        ("/dev/video0", True),
    ],
)
def test_network_urls_are_live_by_default(url: str, live: bool) -> None:
    assert is_live(url) is live


def test_live_is_overridable_for_a_file_on_a_web_server() -> None:
    source = VideoSource("http://example.invalid/clip.mp4", live=False)
    assert not source.live
    assert source.spec.overflow == "block"
