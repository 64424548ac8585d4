"""Audio streams on loopback for the audio tests: ffmpeg RTP/RTSP senders, an SDP file, a
relay that drops chosen RTP packets, a real RTSP server (Debian's ``rtsp-server-perl``),
an ALSA configuration whose capture device plays a file, and the references (PyAV's decode
of the file sent, the Opus pre-skip from its own header)."""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import av
import numpy as np
import pytest

from tests.acceptance.live_helpers import free_port, need_ffmpeg

RATE = 48_000
L16_SAMPLES = 730
"""Samples in each of ffmpeg's L16 mono RTP packets (1460 payload bytes of 1472)."""


def make_sine(path: Path, seconds: float, *, codec: str = "pcm_s16le", freq: int = 440) -> Path:
    """A mono 48 kHz sine of ``seconds`` encoded with ``codec`` (the container from the name)."""
    subprocess.run(
        [
            *(need_ffmpeg(), "-v", "error", "-y", "-f", "lavfi"),
            *("-i", f"sine=frequency={freq}:sample_rate={RATE}"),
            *("-t", str(seconds), "-ac", "1", "-c:a", codec, str(path)),
        ],
        check=True,
    )  # fmt: skip
    return path


def pyav_decode(path: Path) -> np.ndarray:
    """PyAV's own decode of the file's first audio stream, float32 channels x samples."""
    with av.open(str(path)) as c:
        frames = [f.to_ndarray() for f in c.decode(c.streams.audio[0])]
    out = np.concatenate(frames, axis=1)
    if out.dtype == np.int16:
        return (out.astype(np.float32) / 32768.0).reshape(1, -1)
    return out.astype(np.float32)


def opus_pre_skip(path: Path) -> int:
    """The Ogg Opus file's pre-skip, read from its OpusHead (RFC 7845 section 5.1)."""
    with av.open(str(path)) as c:
        head = bytes(c.streams.audio[0].codec_context.extradata or b"")
    assert head[:8] == b"OpusHead", head[:8]
    skip: int = struct.unpack_from("<H", head, 10)[0]
    return skip


def rtp_args(source: Path, codec: str, url: str, *, realtime: bool = True) -> list[str]:
    """ffmpeg sending ``source`` as RTP (``codec``: ``pcm_s16be`` for L16, ``copy`` ...)."""
    return [
        *(need_ffmpeg(), "-v", "error", "-nostdin", *(["-re"] if realtime else [])),
        *("-i", str(source), "-c:a", codec, "-f", "rtp", url),
    ]  # fmt: skip


def write_sdp(source: Path, codec: str, port: int, path: Path) -> Path:
    """The session description ffmpeg writes for RTP of ``source`` to ``port``: made by a
    run of 10 ms to a port nobody reads, so the receiver can bind before the real sender
    starts (the description does not depend on the run)."""
    spare = free_port()
    subprocess.run(
        [*rtp_args(source, codec, f"rtp://127.0.0.1:{spare}", realtime=False)[:-1],
         "-t", "0.01", f"rtp://127.0.0.1:{spare}", "-sdp_file", str(path)],
        check=True, timeout=30,
    )  # fmt: skip
    text = path.read_text()
    assert f"m=audio {spare} " in text, text
    path.write_text(text.replace(f"m=audio {spare} ", f"m=audio {port} "))
    return path


class DroppingRelay:
    """UDP on loopback from ``listen`` to ``to``, leaving out the RTP packets whose
    sequence number (counted from the first packet relayed, 0-based) is in ``drop``.
    Bounded: it stops at ``close`` or after ``idle_s`` without a datagram."""

    def __init__(self, to: int, drop: set[int], *, idle_s: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.listen: int = self.sock.getsockname()[1]
        self.to, self.drop, self.idle_s = to, drop, idle_s
        self.relayed = 0
        self.dropped: list[bytes] = []
        self.first_timestamp: int | None = None
        """The RTP timestamp of the first packet heard."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        first: int | None = None
        quiet_since = time.monotonic()
        with out:
            while not self._stop.is_set() and time.monotonic() - quiet_since < self.idle_s:
                try:
                    data = self.sock.recv(65536)
                except TimeoutError:
                    continue
                quiet_since = time.monotonic()
                seq, stamp = struct.unpack_from(">HI", data, 2)
                if first is None:
                    first, self.first_timestamp = seq, stamp
                if (seq - first) % 65536 in self.drop:
                    self.dropped.append(data)
                    continue
                out.sendto(data, ("127.0.0.1", self.to))
                self.relayed += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def need_rtsp_server() -> str:
    path = shutil.which("rtsp-server-perl")
    if path is None:  # the Makefile installs it; say so rather than skip silently
        pytest.fail("rtsp-server-perl is not on PATH: run 'make test-system-deps'")
    return path


def free_udp_run(count: int = 8) -> int:
    """An even port starting ``count`` consecutive UDP ports free on loopback, below the
    kernel's ephemeral range. The RTSP server binds its relay ports only at a sender's
    RECORD, answering that RECORD with 404 when one is taken: a run found inside the
    ephemeral range, which the kernel hands to any socket bound to port 0, could be taken
    by then (``free_port() & ~1`` also never checked the even port or the next one)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    pick = random.Random()
    for _ in range(200):
        base = pick.randrange(10000, max(10002, low - count), 2)
        socks: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                socks.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
                socks[-1].bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
        return base
    raise AssertionError(f"no {count} consecutive free UDP ports below {low}")


# rtsp-server-perl's housekeeping puts its next relay port back to the package default
# (RTSP::Server::RTP_START_PORT, 20000) whenever a connection ends while nothing is mounted
# (each readiness probe), so --rtp_start_port alone holds only until the first probe: the
# default is set to the run too, then the script runs as installed.
_RTSP_WITH_START_PORT = (
    "require RTSP::Server; $RTSP::Server::RTP_START_PORT = shift; my $bin = shift;"
    " do $bin; die $@ if $@"
)


@contextlib.contextmanager
def rtsp_server() -> Iterator[tuple[int, int]]:
    """Debian's rtsp-server-perl on loopback: ``(client_port, source_port)``; a sender
    ANNOUNCEs/RECORDs a mount on the source port, clients DESCRIBE/PLAY it on the client
    port (RTP over UDP only). Ended at exit."""
    client, source = free_port(socket.SOCK_STREAM), free_port(socket.SOCK_STREAM)
    rtp = free_udp_run()  # its relay ports start here (two per stream: RTP, RTCP)
    proc = subprocess.Popen(
        ["perl", "-e", _RTSP_WITH_START_PORT, str(rtp), need_rtsp_server(),
         "--clientport", str(client), "--serverport", str(source),
         "--client_listen_address", "127.0.0.1", "--source_listen_address", "127.0.0.1",
         "--rtp_start_port", str(rtp), "--loglevel", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_tcp(client, timeout=20)
        wait_tcp(source, timeout=20)
        yield client, source
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def wait_mount(port: int, path: str, timeout: float = 20.0) -> None:
    """Wait until a client of the RTSP server on ``port`` can open ``path``: it describes
    the mount and sets up its stream 0. The server mounts ``path`` at the sender's ANNOUNCE
    but creates the stream only at the sender's SETUP, and answers a client's SETUP in
    between with 404 (a DESCRIBE alone passes there). The probe's RTP/RTCP go to two UDP
    sockets it holds, and it is dropped when its connection closes."""
    deadline = time.monotonic() + timeout
    url = f"rtsp://127.0.0.1:{port}/{path}"
    stream = f"{url}/streamid=0"  # the control URL both ffmpeg ends use for stream 0
    while time.monotonic() < deadline:
        with contextlib.ExitStack() as stack:
            sinks = [stack.enter_context(socket.socket(type=socket.SOCK_DGRAM)) for _ in "ab"]
            for sink in sinks:
                sink.bind(("127.0.0.1", 0))
            rtp, rtcp = (sink.getsockname()[1] for sink in sinks)
            with contextlib.suppress(OSError, ValueError):
                s = stack.enter_context(socket.create_connection(("127.0.0.1", port), 1))
                s.settimeout(1)
                answers = stack.enter_context(s.makefile("rb"))
                transport = f"Transport: RTP/AVP/UDP;unicast;client_port={rtp}-{rtcp}"
                described = rtsp_request(s, answers, f"DESCRIBE {url}", 1) == 200
                if described and rtsp_request(s, answers, f"SETUP {stream}", 2, transport) == 200:
                    return
        time.sleep(0.05)
    raise AssertionError(f"the RTSP server did not set up {url} within {timeout} s")


def rtsp_request(s: socket.socket, answers: BinaryIO, line: str, cseq: int, *headers: str) -> int:
    """Send the RTSP request ``line`` (method and URL) on ``s``; the answer's status code,
    its headers and body read from ``answers`` (``s``'s reader)."""
    s.sendall("\r\n".join([f"{line} RTSP/1.0", f"CSeq: {cseq}", *headers, "", ""]).encode())
    status = answers.readline().split()
    if len(status) < 2:  # closed
        return 0
    length = 0
    while (header := answers.readline()).strip():
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    answers.read(length)
    return int(status[1])


def wait_tcp(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on TCP port {port} after {timeout} s")


def alsa_file_device(tmp: Path, raw: Path, name: str = "sine") -> dict[str, str]:
    """Environment for PyAV's ALSA library with a capture PCM ``name`` that reads ``raw``
    (signed 16-bit mono samples) through ALSA's ``file`` plugin over its ``null`` device:
    a real ``snd_pcm_readi`` capture path without a sound card."""
    base = Path("/usr/share/alsa/alsa.conf")
    if not base.exists():  # libasound2-data; the Makefile installs it
        pytest.fail(f"{base} is missing: run 'make test-system-deps' (libasound2-data)")
    conf = tmp / "asound.conf"
    conf.write_text(
        f'pcm.{name} {{\n  type file\n  slave.pcm null\n  file "/dev/null"\n'
        f'  infile "{raw}"\n  format "raw"\n}}\n'
    )
    return {"ALSA_CONFIG_PATH": f"{base}:{conf}"}


def timestamp(packet: bytes) -> int:
    """An RTP packet's timestamp (RFC 3550 section 5.1)."""
    stamp: int = struct.unpack_from(">I", packet, 4)[0]
    return stamp


def contiguous_at(got: np.ndarray, want: np.ndarray) -> int:
    """Where in ``want`` the samples ``got`` start; fails unless ``got`` is one run of
    ``want`` from there."""
    n = got.shape[1]
    for offset in np.flatnonzero(want[0, : want.shape[1] - n + 1] == got[0, 0]):
        if np.array_equal(want[:, offset : offset + n], got):
            return int(offset)
    raise AssertionError(f"the {n} samples received are no run of the file")
