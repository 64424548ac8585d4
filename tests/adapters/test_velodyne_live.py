"""VelodyneSource live: the pcap's UDP payloads replayed to 127.0.0.1 on a real socket,
with their original timing sped up, decode to the same sweeps as the pcap itself."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import anyio.to_thread
import numpy as np
from lidar_testdata import VLP16, data_packets

from adapters import VelodyneSource
from fusion._frames import Frame

_RMEM = Path("/proc/sys/net/core/rmem_max")
RMEM_MAX = int(_RMEM.read_text()) if _RMEM.exists() else None
SPEED = 4.0  # the 2.5 s capture replays in about 0.6 s


def send_paced(port: int, packets: list[tuple[int, bytes]], junk_every: int) -> None:
    """Send payloads at their capture timing / SPEED (a thread: real time on purpose)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        t0, start = packets[0][0], time.monotonic_ns()
        for i, (t_capture, payload) in enumerate(packets):
            delay = (start + (t_capture - t0) / SPEED - time.monotonic_ns()) / 1e9
            if delay > 0.001:
                time.sleep(delay)
            sock.sendto(payload, ("127.0.0.1", port))
            if i % junk_every == 0:
                sock.sendto(b"not a velodyne packet", ("127.0.0.1", port))


async def test_live_udp_sweeps_equal_the_offline_sweeps() -> None:
    packets = data_packets(VLP16)
    async with VelodyneSource(pcap=VLP16, model="VLP-16") as offline:
        expected = [frame async for frame in offline.frames()]
    expected = expected[:-1]  # the last sweep is only flushed at the end of a file

    live = VelodyneSource(port=0, host="127.0.0.1", model="VLP-16")
    received: list[Frame] = []
    with anyio.fail_after(30):
        async with live, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in live.frames():
                    received.append(frame)
                    if len(received) == len(expected):
                        tg.cancel_scope.cancel()

            tg.start_soon(consume)
            port = await live.wait_listening()
            await anyio.to_thread.run_sync(send_paced, port, packets, 100)

    assert len(received) == len(expected) == 51
    for got, want in zip(received, expected, strict=True):
        assert (got.seq, got.t_sensor, got.meta) == (want.seq, want.t_sensor, want.meta)
        np.testing.assert_array_equal(got.data, want.data)
    arrivals = [f.t_arrival for f in received if f.t_arrival is not None]
    assert len(arrivals) == len(received)
    assert arrivals == sorted(arrivals)
    assert live.errors == {"bad_length": len(range(0, len(packets), 100))}
    assert live.last_error is not None
    assert live.last_error.startswith("datagram from 127.0.0.1:")


def send_with_intruder(port: int, packets: list[tuple[int, bytes]], every: int) -> int:
    """Our sensor's payloads at their timing, and every ``every``-th one again from a
    second socket (another sender's real packets): returns how many the intruder sent."""
    intruded = 0
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other,
    ):
        t0, start = packets[0][0], time.monotonic_ns()
        for i, (t_capture, payload) in enumerate(packets):
            delay = (start + (t_capture - t0) / SPEED - time.monotonic_ns()) / 1e9
            if delay > 0.001:
                time.sleep(delay)
            sock.sendto(payload, ("127.0.0.1", port))
            if i % every == every - 1:
                other.sendto(packets[(i * 7) % len(packets)][1], ("127.0.0.1", port))
                intruded += 1
    return intruded


async def test_a_second_sender_never_reaches_the_sweeps_and_is_counted() -> None:
    packets = data_packets(VLP16)
    async with VelodyneSource(pcap=VLP16, model="VLP-16") as offline:
        expected = [frame async for frame in offline.frames()][:-1]
    live = VelodyneSource(port=0, host="127.0.0.1", model="VLP-16", recv_buffer=1 << 20)
    received: list[Frame] = []
    with anyio.fail_after(30):
        async with live, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for frame in live.frames():
                    received.append(frame)

            tg.start_soon(consume)
            port = await live.wait_listening()
            intruded = await anyio.to_thread.run_sync(send_with_intruder, port, packets, 10)
            while live.ledgers()["lidar"].received < len(packets) + intruded:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    assert [f.t_sensor for f in received] == [f.t_sensor for f in expected]
    for got, want in zip(received, expected, strict=True):
        np.testing.assert_array_equal(got.data, want.data)
    ledger = live.ledgers()["lidar"]
    assert ledger.unit == "packet"
    assert intruded == len(packets) // 10
    assert ledger.lost == {"foreign_sender": intruded}
    assert ledger.received == len(packets) + intruded
    # a packet the cut angle splits is in two sweeps' meta["packets"], once in the ledger
    shared = sum(f.meta["packets"] for f in received) - ledger.emitted
    assert 0 <= shared <= len(received)
    assert ledger.pending == len(packets) - ledger.emitted  # the last sweep, still open
    stats = live.statistics()["udp"]
    assert stats["foreign"] == intruded
    assert stats["recv_buffer_requested"] == 1 << 20
    if RMEM_MAX is not None:  # Linux doubles the request, capped at rmem_max
        assert stats["recv_buffer"] == 2 * min(1 << 20, RMEM_MAX)
