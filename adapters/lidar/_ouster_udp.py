"""An Ouster's two UDP ports (lidar and IMU) read on the event loop, every loss counted.

Each port is an :class:`adapters.net._udp.UdpReceiver` counting into its own
sensor's ledger (``<name>`` and ``<name>_imu``): the kernel's drops
(``kernel_overflow``) and datagrams from anyone but the followed sender
(``foreign_sender``: ``host`` when given, else the first one heard on that
port). The datagrams they return are counted by the source as it decodes
them. One wait covers both ports: it waits (at most ``poll`` seconds) for the
lidar port, then drains both without blocking, so an IMU datagram waits at
most ``poll`` when the lidar is silent and one lidar packet period (under
2 ms) when it is not.
"""

from __future__ import annotations

from types import TracebackType

import anyio
import anyio.lowlevel

from adapters.net import UdpReceiver
from fusion import Source

_DRAIN = 256  # datagrams per port per round, so one flood cannot starve the other


class UdpPorts:
    """Receivers bound to ``bind`` on ``ports`` (0: a free port), one per sensor."""

    def __init__(
        self,
        source: Source,
        bind: str,
        ports: tuple[int, ...],
        sensors: tuple[str, ...],
        *,
        recv_buffer: int,
        sender: str | None,
    ) -> None:
        self.receivers = [
            UdpReceiver(
                source,
                host=bind,
                port=port,
                sender=sender,
                recv_buffer=recv_buffer,
                sensor=sensor,
                counts_admitted=False,
            )
            for port, sensor in zip(ports, sensors, strict=True)
        ]
        try:
            for receiver in self.receivers:
                receiver.open()
        except BaseException:
            self.close()
            raise
        self.bound = tuple(r.port for r in self.receivers)
        """The ports actually bound, in the order given."""

    async def receive(self, poll: float = 0.05) -> list[tuple[int, bytes, tuple[str, int]]]:
        """The next datagrams as ``(port index, payload, (address, port))``; waits for one."""
        while True:
            with anyio.move_on_after(poll):
                await self.receivers[0].wait_readable()
            got: list[tuple[int, bytes, tuple[str, int]]] = []
            for index, receiver in enumerate(self.receivers):
                for _ in range(_DRAIN):
                    try:
                        payload, address, _arrival = receiver.receive_nowait()
                    except anyio.WouldBlock:
                        break
                    got.append((index, payload, address))
            if got:
                return got
            await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        """Count the drops since the last datagram of each port and close them."""
        for receiver in self.receivers:
            receiver.close()

    def __enter__(self) -> UdpPorts:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
