"""The live relay's link to foxglove-sdk's private server: one WebSocket client connection.

:class:`Upstream` connects and upgrades (blocking, until the SDK's serverInfo has been read),
then runs non-blocking in the relay's selector loop: :meth:`Upstream.read` yields the SDK's
messages (16 reads at most a turn, so the clients are served too; pings are answered here, a
close sets :attr:`Upstream.ended`), :meth:`Upstream.send` writes the relay's requests
(subscribe, unsubscribe, playback control), whatever the socket does not take now going out
on the next turn. The frames are masked, as a client's must be. A subscription the SDK
refuses because it does not know the channel yet (its status ``Unknown channel ID: N``,
:func:`~recordings.outputs.live._compat_foxglove.unknown_channel`; no client sees it: it
answers the relay's own subscribe) is made again when
:class:`~recordings.outputs.live._relay_state.Resubscriptions` says
(:meth:`Upstream.resubscribe`); one refused for 10 s is given up, logged once and counted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from recordings.outputs.live import _websocket as ws
from recordings.outputs.live._compat_foxglove import unknown_channel
from recordings.outputs.live._relay_state import Resubscriptions

_UPSTREAM_LIMIT = 1 << 31
_RECV = 1 << 20
_READS = 16  # reads of one turn: keep up with the SDK, then serve the clients
_log = logging.getLogger(__name__)


class Upstream:
    """The relay's connection to the SDK (``sock`` once connected)."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.address = ""
        """The relay's own ``host:port`` towards the SDK (the address its log lines name)."""
        self.ended = False
        """The SDK closed the connection."""
        self.heard = 0
        """Messages read from the SDK (pings and its close included)."""
        self._reader = ws.FrameReader(limit=_UPSTREAM_LIMIT, masked=False)
        self._out = bytearray()
        self._sel: selectors.BaseSelector | None = None
        self._retries = Resubscriptions()
        self.resubscribed = 0
        """Subscriptions made again after the SDK refused them."""
        self.unsubscribable = 0
        """Channels the SDK refused for 10 s (given up)."""

    def connect(
        self,
        address: tuple[str, int],
        handle: Callable[[ws.Message], None],
        ready: Callable[[], bool],
    ) -> None:
        """Connect to the SDK at ``address`` and upgrade; ``handle`` each message until
        ``ready()`` (its serverInfo read). ``OSError`` if the SDK does not answer so."""
        up = socket.create_connection(address, timeout=5)
        try:
            up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request, _ = ws.upgrade_request(*address)
            up.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = up.recv(4096)
                if not chunk or len(answer) > ws.MAX_REQUEST:
                    raise OSError(f"the Foxglove SDK's server answered {answer[:80]!r}")
                answer += chunk
            head, _, rest = answer.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                raise OSError(f"the Foxglove SDK's server refused the relay: {head[:80]!r}")
            for message in self._messages(rest):
                handle(message)
            while not ready():
                chunk = up.recv(_RECV)
                if not chunk:
                    raise OSError("the Foxglove SDK's server closed before its serverInfo")
                for message in self._messages(chunk):
                    handle(message)
        except BaseException:
            up.close()
            raise
        up.setblocking(False)
        self.sock = up
        self.address = "{}:{}".format(*up.getsockname()[:2])

    def register(self, sel: selectors.BaseSelector) -> None:
        """Run in ``sel``'s loop (its events' data: ``"up"``)."""
        assert self.sock is not None
        self._sel = sel
        sel.register(self.sock, selectors.EVENT_READ, "up")

    def send(self, frame: bytes) -> None:
        """Send ``frame`` now, or as soon as the socket takes it."""
        assert self.sock is not None
        assert self._sel is not None
        self._out += frame
        try:
            sent = self.sock.send(self._out)
            del self._out[:sent]
        except BlockingIOError:
            pass
        if self._out:  # a few bytes of requests: the loop finishes them
            self._sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, "up")

    def subscribe(self, cid: int) -> None:
        """Subscribe to channel ``cid`` (the subscription's id is the channel's)."""
        self._request({"op": "subscribe", "subscriptions": [{"id": cid, "channelId": cid}]})

    def unsubscribe(self, cid: int) -> None:
        self._retries.forget(cid)
        self._request({"op": "unsubscribe", "subscriptionIds": [cid]})

    def resubscribe(self, now: float, wanted: Callable[[int], bool]) -> None:
        """Subscribe again to the refused channels due at ``now`` that are still ``wanted``."""
        for cid in self._retries.due(now):
            if wanted(cid):
                self.resubscribed += 1
                self.subscribe(cid)

    def wait(self, now: float, longest: float) -> float:
        """Seconds until a subscription is due again, at most ``longest``."""
        at = self._retries.next_at()
        return longest if at is None else min(longest, max(0.0, at - now))

    def _request(self, request: dict[str, Any]) -> None:
        self.send(ws.masked(ws.TEXT, json.dumps(request).encode()))

    def read(self) -> Iterator[ws.Message]:
        """Finish sending, then the SDK's messages that have come (:attr:`ended` once it
        closed)."""
        assert self.sock is not None
        assert self._sel is not None
        if self._out:
            with contextlib.suppress(BlockingIOError):
                del self._out[: self.sock.send(self._out)]
            if not self._out:
                self._sel.modify(self.sock, selectors.EVENT_READ, "up")
        for _ in range(_READS):
            try:
                chunk = self.sock.recv(_RECV)
            except BlockingIOError:
                return
            if not chunk:
                self.ended = True  # the SDK stopped
                return
            yield from self._messages(chunk)

    def _messages(self, chunk: bytes) -> Iterator[ws.Message]:
        """The SDK's messages ``chunk`` completes, but its pings (answered with the next bytes
        that go), its close (:attr:`ended`) and its refusals of our subscribes."""
        for message in self._reader.feed(chunk):
            self.heard += 1
            if message.opcode == ws.PING:
                self._out += ws.masked(ws.PONG, bytes(message.payload))
            elif message.opcode == ws.CLOSE:
                self.ended = True
            elif message.opcode != ws.TEXT or not self._refusal(bytes(message.payload)):
                yield message

    def _refusal(self, text: bytes) -> bool:
        """Whether ``text`` is the SDK refusing our subscribe (then made again later)."""
        if b'"op":"status"' not in text:  # an advertise is not parsed here
            return False
        cid = unknown_channel(str(json.loads(text).get("message")))
        if cid is None:
            return False
        if not self._retries.refused(cid, time.monotonic()):
            self.unsubscribable += 1
            _log.warning("the Foxglove SDK refused every subscription to channel %d for 10 s", cid)
        return True

    def close(self) -> None:
        """Say goodbye (the SDK logs an error without it) and close."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.send(bytes(self._out) + ws.masked(ws.CLOSE, struct.pack("!H", 1001)))
            self.sock.close()
