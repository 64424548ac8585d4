"""Two plain UDP sockets (an Ouster's lidar and IMU ports) read on the event loop.

Kept small and apart from :mod:`adapters.lidar.ouster` so the source can move
to a shared receiver later without touching its decoding. One wait covers
both sockets: it waits (at most ``poll`` seconds) for the lidar socket, then
drains both without blocking, so an IMU datagram waits at most ``poll`` when
the lidar is silent and one lidar packet period (under 2 ms) when it is not.
"""

from __future__ import annotations

import socket
from types import TracebackType

import anyio
import anyio.lowlevel

_MAX_DATAGRAM = 65535
_DRAIN = 256  # datagrams per socket per round, so one flood cannot starve the other


async def _wait_readable(sock: socket.socket) -> None:
    wait = getattr(anyio, "wait_readable", None)  # anyio >= 4.7
    if wait is None:  # pragma: no cover - older anyio
        wait = anyio.wait_socket_readable
    await wait(sock)


class UdpPorts:
    """Non-blocking UDP sockets bound to ``host`` on ``ports`` (0: a free port)."""

    def __init__(self, host: str, ports: tuple[int, ...], recv_buffer: int) -> None:
        self.sockets: list[socket.socket] = []
        try:
            for port in ports:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
                sock.bind((host, port))
                sock.setblocking(False)
        except OSError:
            self.close()
            raise
        self.bound = tuple(int(s.getsockname()[1]) for s in self.sockets)
        """The ports actually bound, in the order given."""

    async def receive(self, poll: float = 0.05) -> list[tuple[int, bytes, tuple[str, int]]]:
        """The next datagrams as ``(socket index, payload, (address, port))``; waits for one."""
        while True:
            with anyio.move_on_after(poll):
                await _wait_readable(self.sockets[0])
            got: list[tuple[int, bytes, tuple[str, int]]] = []
            for index, sock in enumerate(self.sockets):
                for _ in range(_DRAIN):
                    try:
                        payload, address = sock.recvfrom(_MAX_DATAGRAM)
                    except (BlockingIOError, InterruptedError):
                        break
                    got.append((index, payload, address))
            if got:
                return got
            await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()

    def __enter__(self) -> UdpPorts:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
