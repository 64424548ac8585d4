"""Receiving UDP datagrams with every loss counted: the kernel's, and other senders'.

Every UDP source (``TimeSeriesSource.from_udp``, ``VelodyneSource(port=...)``)
receives through one :class:`UdpReceiver`, so they count the same way in
their ledgers (unit: the datagram):

* **kernel drops.** A datagram that arrives while the socket's receive buffer
  is full is dropped by the kernel before we could read it. Linux counts
  these per socket and hands the running total out in two ways: as
  ``SO_RXQ_OVFL`` ancillary data on each datagram read after a drop, and
  through ``getsockopt(SO_MEMINFO)`` at any time (read whenever the queue is
  empty and when the receiver closes, so drops after the last datagram are
  counted too). :class:`DropCounter` turns the running totals into new
  drops, counted as ``kernel_overflow`` losses that never arrived
  (``arrived=False``). Where a platform has neither (macOS, Windows) the
  first receiver of the process says so at INFO and :attr:`UdpStatistics.drops_counted` is
  ``False``: kernel drops are then invisible.
* **other senders.** A stream follows one sender (:class:`SenderFilter`):
  the configured one (``sender="10.0.0.5"`` or ``"10.0.0.5:2368"``), or,
  when none is configured, the first one heard. A datagram from anyone else
  is counted as ``foreign_sender`` and never reaches the decoder, so a second
  process writing to the same port cannot poison the stream. A sender
  restarted by its operator comes back from a new port: when the followed
  sender has been silent for ``sender_timeout`` seconds, the next sender
  heard is followed instead (logged). What that sender sent while the
  followed one was silent for less is held, not lost: followed in order, each
  datagram with its own arrival time, when it takes over; counted foreign when
  the followed sender speaks again (a second writer) or the stream stops first
  (bounded: ``_MAX_HELD`` datagrams, ``_MAX_HELD_BYTES``; the oldest give way).
  A configured host admits every port of that host; a configured
  ``host:port`` only that one.
* **arrival times.** Each datagram's arrival is its kernel receive time where
  Linux gives one (``SO_TIMESTAMPNS``: its age, the wall clock now minus the
  stamp, is taken off the runtime clock's now), so a datagram that waited in
  the socket queue keeps the time it arrived; elsewhere, or on a
  :class:`~fusion.VirtualClock`, the time it was read.
* **batches.** :meth:`UdpReceiver.receive_many` takes every queued datagram per
  wakeup; with ``gather`` (seconds) it first lets a fast stream gather until
  the next whole multiple of ``gather`` on the runtime clock after the previous
  drain (only with kernel stamps on the host's clock), so a 1 kHz sensor costs
  one wakeup per ``gather``, not one per datagram, for at most ``gather`` of
  added latency; on that grid the process's other receivers of the same period
  and the hub's deadline timer wake with it, not between. A drain that stopped
  at its limit reads on at once.
* **the buffer.** ``recv_buffer`` (bytes) asks for a receive buffer size;
  Linux doubles what it is given for its bookkeeping and caps the request at
  ``net.core.rmem_max``, so the effective size (read back with
  ``getsockopt``) is what :attr:`UdpStatistics.recv_buffer` reports, and a
  capped request is a warning that names the sysctl.

Sans-I/O where it can be: :class:`SenderFilter` and :class:`DropCounter` take
addresses, times and integers; :class:`UdpReceiver` is the thin async shell
around a non-blocking socket (``recvmsg`` until it would block, then wait
for readability; :meth:`UdpReceiver.receive_many` takes every queued datagram
per wakeup).
"""

from __future__ import annotations

import logging
import socket
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.lowlevel

from adapters.errors import SourceOpenError
from fusion import MonotonicClock, Source, current_clock
from fusion.errors import ConfigError

log = logging.getLogger("adapters.net._udp")

_LINUX = sys.platform.startswith("linux")
SO_RXQ_OVFL: int | None = getattr(socket, "SO_RXQ_OVFL", 40 if _LINUX else None)
"""Socket option asking for the drop count as ancillary data (Linux 2.6.33+)."""
SO_MEMINFO: int | None = getattr(socket, "SO_MEMINFO", 55 if _LINUX else None)
"""Socket option reading the socket's memory counters, drops included (Linux 4.6+)."""
SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if _LINUX else None)
"""Socket option stamping each datagram with its kernel receive time (``CLOCK_REALTIME``
ns, as ``SCM_TIMESTAMPNS`` ancillary data, the same number; Linux)."""
_MAX_STAMP_AGE = 1_000_000_000  # an older kernel stamp is a wall-clock step, not a wait
_SK_MEMINFO_DROPS = 8  # index of the drop count in SO_MEMINFO's array of uint32
_MEMINFO_SIZE = 9 * 4
_MAX_DATAGRAM = 65535
_ANCILLARY = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_MAX_UNREAD = 1 << 16  # datagrams read off a closing socket (a flood may never empty it)
_LOGGED_SENDERS = 16  # foreign senders named in the log; the rest are only counted
_PLATFORM_SAID = False
DEFAULT_SENDER_TIMEOUT = 0.5
"""Seconds the followed sender must be silent before another one is followed."""

Address = tuple[str, int]
Verdict = Literal["follow", "hold", "take_over", "foreign"]
Datagram = tuple[bytes, Address, int]
"""(payload, sender, arrival ns)."""
_MAX_HELD = 4096  # datagrams of a sender not yet followed, kept (the oldest give way)
_MAX_HELD_BYTES = 16 << 20


def parse_sender(text: str) -> tuple[str, int | None]:
    """``"10.0.0.5"`` or ``"10.0.0.5:2368"`` -> (host, port or None); ``ConfigError`` else.

    The host must be a numeric IPv4 address: a datagram's source is one, and
    a name would need a lookup that can block or change under us.
    """
    host, sep, port_text = text.strip().rpartition(":")
    if not sep:
        host, port_text = text.strip(), ""
    try:
        socket.inet_aton(host)
        if host.count(".") != 3:
            raise OSError
    except OSError:
        raise ConfigError(
            f"sender must be an IPv4 address, optionally with ':port', got {text!r}"
        ) from None
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise ConfigError(f"sender {text!r}: the port must be 1..65535")
    return host, int(port_text)


class SenderFilter:
    """Which sender a stream follows; everyone else is foreign (sans-I/O).

    ``sender`` fixes it (a host, or host and port); otherwise the first
    sender heard is followed. ``timeout_ns`` (``None``: never) lets a new
    sender take over once the followed one has been silent that long, which
    is how a restarted sender (a new source port) is followed again; a
    configured sender with a port never changes.
    """

    def __init__(self, sender: str | None = None, *, timeout_ns: int | None = None) -> None:
        self.host: str | None = None
        self.port: int | None = None
        if sender is not None:
            self.host, self.port = parse_sender(sender)
        self.configured = sender is not None
        self.timeout_ns = timeout_ns
        self.followed: Address | None = None
        """The sender whose datagrams the stream takes (``None`` until one is heard)."""
        self._last_heard: int | None = None
        self.held: Address | None = None
        """The sender heard while the followed one is silent, not yet decided."""
        self.changes = 0
        """How many times another sender was followed after a silence."""

    def admit(self, address: Address, now: int) -> bool:
        """Whether the datagram from ``address`` (received at ``now`` ns) is the stream's
        (a held one, see :meth:`classify`, is not)."""
        return self.classify(address, now) in ("follow", "take_over")

    def classify(self, address: Address, now: int) -> Verdict:
        """What the datagram from ``address`` (received at ``now`` ns) is.

        ``"follow"``: the followed sender's (a held sender's datagrams are then
        foreign: the followed one spoke again); ``"hold"``: another sender's while
        the followed one is silent for less than ``timeout_ns``, to be kept until
        that is decided; ``"take_over"``: the held sender's, the followed one
        silent that long: it is followed from now on, its held datagrams with it;
        ``"foreign"``: anyone else's.
        """
        host, port = address[0], address[1]
        if self.configured:  # a host admits every port of it; a host:port only that one
            if host != self.host or (self.port is not None and port != self.port):
                return "foreign"
            self.followed = (host, port)
            return "follow"
        if self.followed is None or (host, port) == self.followed:
            self.followed = (host, port)
            self._last_heard = now
            self.held = None
            return "follow"
        if self.timeout_ns is None or (self.held is not None and self.held != (host, port)):
            return "foreign"
        silent = now - (self._last_heard if self._last_heard is not None else now)
        if silent < self.timeout_ns:
            self.held = (host, port)
            return "hold"
        log.warning(
            "UDP sender %s:%d silent for %.1f s: now following %s:%d",
            *self.followed,
            silent / 1e9,
            host,
            port,
        )
        self.followed = (host, port)
        self._last_heard = now
        self.held = None
        self.changes += 1
        return "take_over"

    def describe(self) -> str:
        """Why a datagram from someone else is not the stream's, for messages."""
        if self.configured:
            port = "" if self.port is None else f":{self.port}"
            return f"not the configured sender {self.host}{port}"
        if self.followed is not None:
            return f"the stream follows {self.followed[0]}:{self.followed[1]}"
        return "not the followed sender"


class DropCounter:
    """New kernel drops from the socket's running drop total (a wrapping uint32)."""

    def __init__(self) -> None:
        self.total = 0
        """Drops counted so far."""

    def update(self, running: int) -> int:
        """The drops ``running`` (the kernel's total) adds to what was counted.

        Totals carried by older datagrams can be behind one already read from
        ``SO_MEMINFO``: a total that is not ahead adds nothing.
        """
        delta = (running - self.total) % (1 << 32)
        if delta == 0 or delta >= 1 << 31:  # stale, not a wrap of 2**31 drops
            return 0
        self.total += delta
        return delta

    @staticmethod
    def from_ancillary(ancdata: list[tuple[int, int, bytes]]) -> int | None:
        """The running total in ``recvmsg``'s ancillary data, if it carries one."""
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(data) >= 4:
                value: int = struct.unpack_from("=I", data)[0]
                return value
        return None


def _enable(sock: socket.socket, option: int | None) -> bool:
    """Turn a socket option on; whether this platform and socket took it."""
    if option is None:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, option, 1)
    except OSError:
        return False
    return True


class _Held:
    """A sender's datagrams kept until it is followed or found foreign, oldest first, at
    most ``_MAX_HELD`` of them and ``_MAX_HELD_BYTES`` (sans-I/O)."""

    __slots__ = ("_bytes", "_datagrams")

    def __init__(self) -> None:
        self._datagrams: deque[Datagram] = deque()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._datagrams)

    def add(self, datagram: Datagram) -> list[Datagram]:
        """Keep ``datagram``; give back the oldest ones that no longer fit."""
        self._datagrams.append(datagram)
        self._bytes += len(datagram[0])
        out = []
        while len(self._datagrams) > _MAX_HELD or self._bytes > _MAX_HELD_BYTES:
            oldest = self._datagrams.popleft()
            self._bytes -= len(oldest[0])
            out.append(oldest)
        return out

    def take(self) -> list[Datagram]:
        """Every held datagram, oldest first; none are held afterwards."""
        out = list(self._datagrams)
        self._datagrams.clear()
        self._bytes = 0
        return out


@dataclass(frozen=True)
class UdpStatistics:
    """What a UDP receiver has seen (frozen: safe to hand to other threads)."""

    host: str
    """The local address it listens on."""
    port: int
    """The local UDP port (the bound one when 0 was asked)."""
    recv_buffer_requested: int | None
    """The ``recv_buffer`` asked for (``None``: the system default)."""
    recv_buffer: int
    """The effective receive buffer (``getsockopt``; Linux doubles the request, capped
    at ``net.core.rmem_max``)."""
    datagrams: int
    """Datagrams read from the socket (ours and foreign)."""
    kernel_drops: int
    """Datagrams the kernel dropped (socket buffer full), counted as ``kernel_overflow``."""
    foreign: int
    """Datagrams from a sender the stream does not follow (``foreign_sender``)."""
    sender: str | None
    """The followed sender, ``host:port``."""
    drops_counted: bool
    """Whether this platform reports kernel drops (Linux does)."""
    gather_ms: float = 0.0
    """How long a fast stream gathers between drains (0: it reads each at once, also
    where the kernel gives no receive stamps)."""
    held: int = 0
    """Datagrams of a sender heard while the followed one is silent, kept until it is
    followed (a restart) or found foreign (the followed one spoke again, or the stream
    stopped); not yet in the ledger."""

    def as_dict(self) -> dict[str, Any]:
        """Plain types, for JSON and the live screen."""
        return dict(self.__dict__)


class UdpReceiver:
    """A bound UDP socket that counts each datagram in ``source``'s ledger (thin async shell).

    Each datagram read is ``count_received`` (the followed sender's only with
    ``counts_admitted``, the default); one from a foreign sender is then lost
    as ``foreign_sender``; kernel drops are lost as
    ``kernel_overflow`` with ``arrived=False``. :meth:`receive` returns only
    the followed sender's datagrams; the caller makes them frames or counts
    them lost. Use as ``async with UdpReceiver(...) as rx:``.
    """

    def __init__(
        self,
        source: Source,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        sender: str | None = None,
        recv_buffer: int | None = None,
        sender_timeout: float | None = DEFAULT_SENDER_TIMEOUT,
        sensor: str | None = None,
        counts_admitted: bool = True,
        gather: float = 0.0,
        group: str | None = None,
    ) -> None:
        if not 0 <= gather <= 1:
            raise ConfigError(f"gather must be 0..1 seconds, got {gather}")
        if recv_buffer is not None and recv_buffer <= 0:
            raise ConfigError(f"recv_buffer must be > 0 bytes or None, got {recv_buffer}")
        if sender_timeout is not None and not sender_timeout > 0:
            raise ConfigError(f"sender_timeout must be > 0 seconds or None, got {sender_timeout}")
        if group is not None:
            try:
                socket.inet_aton(group)
            except OSError:
                raise ConfigError(
                    f"group must be an IPv4 multicast address, got {group!r}"
                ) from None
            if not 224 <= int(group.split(".")[0]) <= 239:
                raise ConfigError(f"group {group!r} is not a multicast address (224-239.x.x.x)")
        self.group = group
        """A multicast group joined on ``host``'s interface (``0.0.0.0``: the default one)."""
        self.source = source
        self.sensor = sensor
        self.counts_admitted = counts_admitted
        """False: the caller counts the datagrams :meth:`receive` returns (foreign ones and
        kernel drops are still counted here)."""
        self.host = host
        self.port = port
        self.recv_buffer_requested = recv_buffer
        self.filter = SenderFilter(
            sender, timeout_ns=None if sender_timeout is None else int(sender_timeout * 1e9)
        )
        self.drops = DropCounter()
        self.datagrams = 0
        self.foreign = 0
        self.recv_buffer = 0
        self._gather_ns = int(gather * 1e9)
        self._last_drain: int | None = None
        self._sock: socket.socket | None = None
        self._stamped = False
        self._ancillary = False
        self._meminfo = False
        self._foreign_logged: set[Address] = set()
        self._held = _Held()
        self._released: deque[Datagram] = deque()

    # -- opening and closing ---------------------------------------------------------------

    def open(self) -> int:
        """Bind, set the options, log what the kernel granted; return the bound port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            if self.recv_buffer_requested is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.recv_buffer_requested)
            if self.group is not None:  # bound to the group's port, beside other listeners
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            if self.group is not None:
                membership = socket.inet_aton(self.group) + socket.inet_aton(self.host)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        except OSError as err:
            sock.close()
            raise SourceOpenError(
                f"cannot listen on UDP {self.host}:{self.port}: {err}", sensor=self._name
            ) from err
        self._sock = sock
        self.port = sock.getsockname()[1]
        self.recv_buffer = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        self._ancillary = hasattr(sock, "recvmsg") and _enable(sock, SO_RXQ_OVFL)
        self._stamped = self._ancillary and _enable(sock, SO_TIMESTAMPNS)
        self._meminfo = self._read_meminfo() is not None
        wanted = self.recv_buffer_requested
        if wanted is not None and self.recv_buffer < wanted:
            log.warning(
                "%s: UDP %s:%d asked for a %d-byte receive buffer, the kernel granted %d "
                "(capped by net.core.rmem_max; raise it with sysctl -w net.core.rmem_max=%d)",
                self._name,
                self.host,
                self.port,
                wanted,
                self.recv_buffer,
                wanted,
            )
        else:
            log.info(
                "%s: listening on UDP %s:%d, receive buffer %d bytes",
                self._name,
                self.host,
                self.port,
                self.recv_buffer,
            )
        global _PLATFORM_SAID
        if not self.drops_counted and not _PLATFORM_SAID:
            _PLATFORM_SAID = True  # once per process: it is the platform, not the socket
            log.info(
                "%s: this platform (%s) does not report the kernel's UDP drops "
                "(SO_RXQ_OVFL / SO_MEMINFO are Linux's): datagrams lost in a full socket "
                "buffer are not counted",
                self._name,
                sys.platform,
            )
        return self.port

    @property
    def drops_counted(self) -> bool:
        """Whether kernel drops are counted on this platform and socket."""
        return self._ancillary or self._meminfo

    def close(self) -> None:
        """Count what is still queued and the drops since the last datagram, then close
        the socket. Safe twice."""
        if self._sock is None:
            return
        try:
            self._count_unread()
            self._reject_held()  # never followed: another sender's, as far as anyone knows
            self._sync_drops()
        finally:
            self._sock.close()
            self._sock = None

    def _count_unread(self) -> None:
        """The followed sender's datagrams still queued when the source stops (a gather
        in progress, a stop mid-stream) arrived and are never read: lost, counted
        (``unread_at_stop``), not dropped with the socket in silence."""
        unread = 0
        try:
            while unread < _MAX_UNREAD:
                self.receive_nowait()
                unread += 1
        except (anyio.WouldBlock, OSError):
            pass
        if unread:
            self.source.count_error(
                "unread_at_stop",
                f"{unread} datagram(s) still queued on UDP port {self.port} when the source "
                "stopped",
                units=unread,
                sensor=self.sensor,
                arrived=self.counts_admitted,
            )

    async def __aenter__(self) -> UdpReceiver:
        self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- receiving -------------------------------------------------------------------------

    def receive_nowait(self) -> Datagram:
        """The next queued datagram of the followed sender: (payload, sender, arrival ns).

        Raises :class:`anyio.WouldBlock` when none is queued (the kernel's drop
        total is read then). Foreign ones and kernel drops are counted on the way; a
        held sender's are kept (:meth:`SenderFilter.classify`) and come first once it
        takes over.
        """
        sock = self._sock
        if sock is None:
            raise SourceOpenError("the UDP receiver is closed", sensor=self._name)
        if self._released:
            if self.counts_admitted:
                self.source.count_received(sensor=self.sensor)
            return self._released.popleft()
        clock = current_clock()
        stamped = self._stamped and isinstance(clock, MonotonicClock)
        while True:
            stamp = 0
            try:
                if self._ancillary:
                    payload, ancdata, _flags, address = sock.recvmsg(_MAX_DATAGRAM, _ANCILLARY)
                    for level, kind, data in ancdata:
                        if level != socket.SOL_SOCKET:
                            continue
                        if kind == SO_TIMESTAMPNS and len(data) >= 16:
                            sec, nsec = struct.unpack_from("=qq", data)
                            stamp = sec * 1_000_000_000 + nsec
                        elif kind == SO_RXQ_OVFL and len(data) >= 4:
                            self._count_drops(self.drops.update(struct.unpack_from("=I", data)[0]))
                else:
                    payload, address = sock.recvfrom(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                self._sync_drops()
                raise anyio.WouldBlock from None
            now = clock.now()
            if stamped and stamp:  # the kernel's receive time, on the runtime clock
                age = time.time_ns() - stamp
                if 0 < age < _MAX_STAMP_AGE:
                    now -= age
            self.datagrams += 1
            verdict = self.filter.classify(address, now)
            if verdict == "hold":
                for gone, sender, _ in self._held.add((payload, address, now)):
                    self._refuse(sender, len(gone))  # the oldest held gave way
                continue
            if verdict == "foreign":
                self._refuse(address, len(payload))
                continue
            if self._held and verdict == "follow":  # nearly always nothing is held
                self._reject_held()  # the followed sender spoke again: those were foreign
            elif self._held:  # take_over: what it sent while the other was silent comes first
                log.info(
                    "%s: the %d datagram(s) %s:%d sent while the followed sender was silent "
                    "are kept",
                    self._name,
                    len(self._held),
                    *address,
                )
                self._released.extend(self._held.take())
                self._released.append((payload, address, now))
                payload, address, now = self._released.popleft()
            if self.counts_admitted:
                self.source.count_received(sensor=self.sensor)
            return payload, address, now

    def _reject_held(self) -> None:
        """The held datagrams were another sender's beside the followed one: foreign."""
        for payload, address, _ in self._held.take():
            self._refuse(address, len(payload))

    async def wait_readable(self) -> None:
        """Wait until a datagram is queued (of anyone: :meth:`receive_nowait` may still block)."""
        if self._sock is None:
            raise SourceOpenError("the UDP receiver is closed", sensor=self._name)
        await anyio.wait_readable(self._sock)

    async def receive(self) -> tuple[bytes, Address, int]:
        """The next datagram of the followed sender: (payload, sender, arrival ns).

        Always checkpoints; waits until one is readable.
        """
        await anyio.lowlevel.checkpoint()
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                await self.wait_readable()

    async def receive_many(self, limit: int = 64) -> list[tuple[bytes, Address, int]]:
        """The followed sender's datagrams queued now: at least one, at most ``limit``.

        Drains the socket until it would block (or ``limit``), waiting only when
        nothing is queued, so a burst costs one trip through the event loop, not
        one per datagram; with ``gather`` it first waits for the next multiple of
        ``gather`` after the previous drain (not after one that stopped at ``limit``).
        Each datagram keeps its own arrival time. Always checkpoints.
        """
        out: list[tuple[bytes, Address, int]] = []
        receive = self.receive_nowait
        waited = False
        clock = current_clock()
        gather = self._gather_ns
        last = self._last_drain
        if gather and last is not None and self._stamped and isinstance(clock, MonotonicClock):
            # The next multiple of ``gather`` on the runtime clock, not ``last + gather``:
            # every receiver with this period, and a hub deadline a whole number of
            # periods after a drain, falls due in the same wakeup of the process.
            due = (last // gather + 1) * gather
            if clock.now() < due:  # a fast stream: let the queue fill, stamped by the kernel
                await clock.sleep_until(due)
                waited = True
        while True:
            try:
                while len(out) < limit:
                    out.append(receive())
            except anyio.WouldBlock:
                pass
            if out:
                if not waited:  # a full queue must not starve the other tasks
                    await anyio.lowlevel.checkpoint()
                # a drain that stopped at ``limit`` left datagrams queued: read on at once
                self._last_drain = clock.now() if len(out) < limit else None
                return out
            await self.wait_readable()
            waited = True

    def _count_drops(self, drops: int) -> None:
        if drops:
            self.source.count_error(
                "kernel_overflow",
                f"the kernel dropped {drops} datagram(s) on UDP {self.host}:{self.port}: the "
                f"{self.recv_buffer}-byte receive buffer was full (raise recv_buffer)",
                units=drops,
                sensor=self.sensor,
                arrived=False,
            )

    def _refuse(self, address: Address, size: int) -> None:
        """A datagram received from a sender the stream does not follow: counted, lost."""
        self.source.count_received(sensor=self.sensor)
        self.foreign += 1
        message = (
            f"datagram of {size} bytes from {address[0]}:{address[1]} on UDP port {self.port}: "
            f"{self.filter.describe()}"
        )
        self.source.count_error("foreign_sender", message, sensor=self.sensor)
        if address not in self._foreign_logged and len(self._foreign_logged) < _LOGGED_SENDERS:
            self._foreign_logged.add(address)
            log.warning(
                "%s: %s; its datagrams are counted (foreign_sender), not decoded",
                self._name,
                message,
            )

    def _read_meminfo(self) -> int | None:
        if SO_MEMINFO is None or self._sock is None:
            return None
        try:
            raw = self._sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, _MEMINFO_SIZE)
        except OSError:
            return None
        if len(raw) < _MEMINFO_SIZE:
            return None
        value: int = struct.unpack_from("=9I", raw)[_SK_MEMINFO_DROPS]
        return value

    def _sync_drops(self) -> None:
        """Catch up with the kernel's drop total (the queue is empty, or we are closing)."""
        if not self._meminfo:
            return
        running = self._read_meminfo()
        if running is not None:
            self._count_drops(self.drops.update(running))

    # -- reporting -------------------------------------------------------------------------

    @property
    def _name(self) -> str:
        return self.sensor or self.source.name

    def statistics(self) -> UdpStatistics:
        """A frozen snapshot (drops up to the last read or empty queue)."""
        followed = self.filter.followed
        return UdpStatistics(
            host=self.host,
            port=self.port,
            recv_buffer_requested=self.recv_buffer_requested,
            recv_buffer=self.recv_buffer,
            datagrams=self.datagrams,
            kernel_drops=self.drops.total,
            foreign=self.foreign,
            sender=None if followed is None else f"{followed[0]}:{followed[1]}",
            drops_counted=self.drops_counted,
            gather_ms=self._gather_ns / 1e6 if self._stamped else 0.0,
            held=len(self._held),
        )
