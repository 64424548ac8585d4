"""The live relay's front door: its listening socket, and the connections it refuses.

:class:`Door` accepts connections in bursts for the relay's loop
(:class:`~recordings.outputs.live._relay.Relay`), answers those past the client limit
``503`` with the reason (and a request it cannot serve with its status), then reads what the
refused peer sent until it closes or a second passes (closing with unread bytes would reset
the answer). Running out of descriptors (``EMFILE``) costs that connection only: a spare
descriptor is given up to accept and close it, so the listener does not spin; with no spare,
the door stops listening for half a second. Each kind of trouble is counted in the relay's
:class:`~recordings.outputs.live._relay_state.Tally` and said once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import time
from collections.abc import Callable, Iterator

from recordings.outputs.live import _websocket as ws
from recordings.outputs.live._relay_state import Tally

_REFUSING_LIMIT = 64  # refused connections read until they close; more are closed at once
_BURST = 64  # connections accepted in one go, then back to the others


class Door:
    """Listens on ``host:port`` (``port`` 0: a free one, then :attr:`port`) for the relay's
    selector (:meth:`open`); ``say(kind, line)`` logs a kind of trouble once."""

    def __init__(
        self,
        host: str,
        port: int,
        tally: Tally,
        say: Callable[[str, str], None],
        max_clients: int,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector: selectors.BaseSelector | None = None
        self._tally = tally
        self._say = say
        self.max_clients = max_clients
        self._refusing: dict[int, tuple[socket.socket, float]] = {}
        self._spare: int | None = None
        self._listen_again = 0.0  # when to accept again after running out of descriptors

    def open(self, sel: selectors.BaseSelector) -> None:
        """Keep a spare descriptor and listen in ``sel`` (its events' data: ``"listen"``)."""
        self._selector = sel
        self._spare = _open_spare()
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")

    @property
    def _sel(self) -> selectors.BaseSelector:
        assert self._selector is not None, "Door.open() first"
        return self._selector

    def accept(self, clients: Callable[[], int]) -> Iterator[tuple[socket.socket, str]]:
        """The connections waiting now (a burst at most), non-blocking, with their
        ``host:port``; one past ``max_clients`` (``clients()`` connected) is refused."""
        for _ in range(_BURST):
            try:
                sock, peer = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE):
                    self._out_of_fds()
                else:
                    self._tally.refused["accept failed"] += 1
                    self._say("accept failed", f"accepting a client failed: {err}")
                continue
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                address = f"{peer[0]}:{peer[1]}"
            except OSError:  # reset before we looked
                sock.close()
                self._tally.refused["reset before the handshake"] += 1
                continue
            if clients() >= self.max_clients:
                self.refuse(
                    sock,
                    503,
                    f"hyperframes live view: {self.max_clients} clients already connected "
                    f"(the limit, --serve-clients); try again later",
                    "client limit",
                )
                continue
            yield sock, address

    def _out_of_fds(self) -> None:
        """No descriptor for the next connection: give up the spare, accept and close it."""
        self._tally.refused["no file descriptors"] += 1
        self._say(
            "no file descriptors",
            "out of file descriptors: new Foxglove clients are closed until some leave",
        )
        if self._spare is None:  # none to give up: stop listening a while, not spin
            self._sel.unregister(self._listener)
            self._listen_again = time.monotonic() + 0.5
            self._spare = _open_spare()
            return
        os.close(self._spare)
        self._spare = None
        with contextlib.suppress(OSError):
            sock, _ = self._listener.accept()
            sock.close()
        self._spare = _open_spare()

    def refuse(self, sock: socket.socket, status: int, reason: str, why: str) -> None:
        """Answer ``sock`` ``status`` with ``reason`` (counted as ``why``) and close it once
        it has closed (the loop sees the socket itself as its events' data: :meth:`drain`)."""
        self._tally.refused[why] += 1
        self._say(why, f"refused a Foxglove client: {reason}")
        try:
            sock.send(ws.refusal(status, reason))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._refusing) >= _REFUSING_LIMIT:
            sock.close()
            return
        # read what it sent until it closes (closing with unread bytes would reset the answer)
        self._refusing[sock.fileno()] = (sock, time.monotonic() + 1.0)
        self._sel.register(sock, selectors.EVENT_READ, sock)

    def drain(self, sock: socket.socket) -> None:
        """Read what a refused peer sent; close it when it has closed."""
        try:
            if sock.recv(65536):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._end_refusal(sock.fileno(), sock)

    def timers(self, now: float) -> None:
        """Listen again after a pause; close refused peers that did not close in a second."""
        if self._listen_again and now >= self._listen_again:
            self._listen_again = 0.0
            self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        for fd, (sock, deadline) in list(self._refusing.items()):
            if now > deadline:
                self._end_refusal(fd, sock)

    def _end_refusal(self, fd: int, sock: socket.socket) -> None:
        self._refusing.pop(fd, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(sock)
        sock.close()

    def close(self) -> None:
        """Close the listener, the refused peers and the spare descriptor."""
        for sock, _ in self._refusing.values():
            sock.close()
        self._refusing.clear()
        self._listener.close()
        if self._spare is not None:
            with contextlib.suppress(OSError):
                os.close(self._spare)
            self._spare = None


def _open_spare() -> int | None:
    try:
        return os.open("/dev/null", os.O_RDONLY)
    except OSError:
        return None
