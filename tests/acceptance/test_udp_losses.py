"""UDP losses, counted: real sender processes on loopback against ``TimeSeriesSource.from_udp``
and against ``hyperframes record`` (in a pseudo-terminal, then ``info --json``).

A sender that outruns its receiver (a flood at loopback's top rate into a
small receive buffer): the kernel's drops are in the ledger, matching what the
sender says it sent minus what the source read. A second process writing to
the same port: every datagram of the first sender kept, every foreign one
counted, none decoded.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import anyio
import pytest

from adapters._timeseries import TimeSeriesSource
from fusion._frames import Frame
from tests.acceptance.live_helpers import (
    Recording,
    Sender,
    free_port,
    info_json,
    python_sender,
    sent_count,
    stopping,
)

pytestmark = pytest.mark.timeout(60)


async def finished(sender: Sender) -> int:
    """Wait (without blocking the receiver) until ``sender`` ends; what it says it sent."""
    while sender.proc.poll() is None:  # noqa: ASYNC110
        await anyio.sleep(0.05)
    return sent_count(sender.stop())


async def settled(source: TimeSeriesSource, quiet: float = 0.3) -> None:
    """Wait until the source has read nothing new for ``quiet`` seconds."""
    last = -1
    while (now := source.ledgers()[source.name].received) != last:
        last = now
        await anyio.sleep(quiet)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_RXQ_OVFL is Linux's")
async def test_a_flood_into_a_small_buffer_counts_the_kernels_drops() -> None:
    source = TimeSeriesSource.from_udp(0, name="imu", recv_buffer=16384, fields=["v"])
    frames = 0
    async with source, anyio.create_task_group() as tg:

        async def consume() -> None:
            nonlocal frames
            async for _ in source.frames():
                frames += 1

        tg.start_soon(consume)
        with anyio.fail_after(40):
            port = await source.wait_listening()
            flood = python_sender("flood", str(port), "--seconds", "2")
            with stopping(flood):
                sent = await finished(flood)
            await settled(source)
        tg.cancel_scope.cancel()
    udp = source.udp_statistics()
    assert udp is not None
    assert udp.drops_counted
    assert udp.recv_buffer_requested == 16384
    assert udp.recv_buffer >= 16384  # Linux doubles the request (capped at rmem_max)
    ledger = source.ledgers()["imu"]
    read = udp.datagrams
    dropped = ledger.lost["kernel_overflow"]
    # The receiver was outrun: many datagrams never made it (how many depends on the load:
    # a quiet 2-core machine read 54 % of a flood once).
    assert sent - read > 0.2 * sent
    assert abs(dropped - (sent - read)) <= 0.05 * (sent - read), (sent, read, dropped)
    assert udp.kernel_drops == dropped
    assert ledger.received == read + dropped
    assert ledger.emitted == frames
    assert ledger.received == ledger.emitted + ledger.lost_total
    assert source.errors["kernel_overflow"] >= 1


async def test_a_second_sender_on_the_port_is_counted_and_never_decoded() -> None:
    source = TimeSeriesSource.from_udp(0, name="imu", kind="imu")
    got: list[Frame] = []
    async with source, anyio.create_task_group() as tg:

        async def consume() -> None:
            async for frame in source.frames():
                got.append(frame)

        tg.start_soon(consume)
        with anyio.fail_after(40):
            port = await source.wait_listening()
            ours = python_sender("imu", str(port), "--rate", "500", "--seconds", "3")
            with stopping(ours):
                while not source.ledgers()["imu"].received:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                # The intruder starts after ours is heard and stops well before ours does.
                other = python_sender("imu", str(port), "--rate", "500", "--seconds", "1")
                with stopping(other):
                    foreign = await finished(other)
                ours_sent = await finished(ours)
            await settled(source)
        tg.cancel_scope.cancel()
    udp = source.udp_statistics()
    assert udp is not None
    ledger = source.ledgers()["imu"]
    assert (ours_sent, foreign) == (1500, 500)
    assert len(got) == ours_sent  # every datagram of ours became a frame ...
    period = 1_000_000_000 / 500
    assert [f.t for f in got] == [round(i * period) for i in range(ours_sent)]  # ... in order
    assert ledger.lost == {"foreign_sender": foreign}  # ... and every foreign one is counted
    assert udp.foreign == foreign
    assert ledger.received == ours_sent + foreign == ledger.emitted + ledger.lost_total
    assert udp.sender is not None
    assert udp.sender.startswith("127.0.0.1:")
    assert "the stream follows 127.0.0.1:" in str(source.last_error)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_RXQ_OVFL is Linux's")
def test_record_of_a_flood_stores_and_prints_the_kernels_drops(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "flood.toml"
    config.write_text(
        f"""
[[sources]]
type = "timeseries_udp"
name = "imu"
kind = "imu"
port = {port}
fields = ["v"]
recv_buffer = 16384
"""
    )
    out = tmp_path / "flood.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to", timeout=60)
    flood = python_sender("flood", str(port), "--seconds", "1")
    with stopping(flood):
        flood.proc.wait(timeout=30)
        sent = sent_count(flood.stop())
    time.sleep(1.0)  # the recorder reads what is left in the socket
    code, _took = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]
    ledger = info_json(out)["ledger"]["imu"]
    dropped = ledger["lost"]["kernel_overflow"]
    assert ledger["unit"] == "datagram"
    assert ledger["received"] == sent  # read + dropped by the kernel: every one sent
    assert abs(dropped - (sent - ledger["emitted"])) <= 0.05 * (sent - ledger["emitted"])
    assert dropped > sent // 2
    assert f"kernel_overflow {dropped:,}" in rec.text


def test_record_of_an_imu_restarted_at_once_keeps_every_sample(tmp_path: Path) -> None:
    """The IMU's process is stopped and started again at once (a new source port, its
    clock back near 0): ``record`` in a terminal keeps every datagram of both, those the
    new one sent while the old port timed out included, and ``info --json`` says so."""
    port = free_port()
    config = tmp_path / "imu.toml"
    config.write_text(
        f'[[sources]]\ntype = "timeseries_udp"\nname = "imu"\nkind = "imu"\nport = {port}\n'
    )
    out = tmp_path / "imu.hfr"
    rec = Recording([str(config), "-o", str(out)], terminal=True)
    rec.wait_for("recording to", timeout=60)
    sent = 0
    for _ in range(2):
        imu = python_sender("imu", str(port), "--rate", "200")
        with stopping(imu):
            time.sleep(1.5)
            sent += sent_count(imu.stop())
    time.sleep(1.0)  # past the old port's timeout: the last held ones are followed
    code, _took = rec.stop(signal.SIGINT)
    assert code == 0, rec.text[-3000:]
    assert "foreign_sender" not in rec.text
    doc = info_json(out)
    ledger = doc["ledger"]["imu"]
    assert (ledger["received"], ledger["frames"], ledger["lost_total"]) == (sent, sent, 0)
    assert doc["sensors"]["imu"]["frames"] == sent
