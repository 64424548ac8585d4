"""Stand-in sensors for the acceptance journeys, each a real process sending on loopback.

``python senders.py imu PORT --rate 100``: an IMU sending one JSON line per
sample over UDP, stamped with its own clock (nanoseconds since it started, so a
restarted sender starts again near 0, as a rebooted device does), and carrying
the sender's wall clock (``w``, Unix ns) so a test can check the recording's dates.

``python senders.py flood PORT --seconds S``: JSON-line samples as fast as one core
sends them, for S seconds (a sender that outruns its receiver: loopback's top rate).

``python senders.py pcap PORT FILE --loops N``: a Velodyne capture replayed
over UDP at its captured rate (each datagram sent at its capture time
relative to the first), ``N`` times in a row. ``--data-port 7502 --route 7503:P``
replays an Ouster capture: its lidar packets to PORT, its IMU packets to P.

Each prints one line ``sent N`` on stdout when they end or get SIGTERM/SIGINT.
The ``ffmpeg`` CLI is the video sender (see ``live_helpers.ffmpeg_sender``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class _Stop(Exception):
    pass


def _on_signal(signum: int, frame: Any) -> None:
    raise _Stop


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """A datagram sent is a datagram counted: the stop signal waits for the count."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def imu(port: int, rate: float, seconds: float) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.monotonic_ns()
    period = 1e9 / rate
    sent = 0
    try:
        while seconds <= 0 or sent < seconds * rate:
            due = start + round(sent * period)
            delay = (due - time.monotonic_ns()) / 1e9
            if delay > 0:
                time.sleep(delay)
            t = due - start
            phase = t / 1e9
            sample = {
                "t": t,
                "ax": round(0.1 * math.sin(phase), 6),
                "ay": 0.0,
                "az": 9.81,
                "gz": round(0.01 * math.cos(phase), 6),
                "w": time.time_ns(),
            }
            with _signals_held():
                sock.sendto((json.dumps(sample) + "\n").encode(), ("127.0.0.1", port))
                sent += 1
    except _Stop:
        pass
    finally:
        sock.close()
    return sent


def flood(port: int, seconds: float) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    end = time.monotonic() + seconds
    sent = 0
    address = ("127.0.0.1", port)
    with _signals_held():  # bounded by ``seconds``: the stop signal waits for the count
        while time.monotonic() < end:
            for _ in range(256):  # the clock read costs more than a send
                sock.sendto(b'{"t": %d, "v": 1.0}' % (sent * 1000), address)
                sent += 1
    sock.close()
    return sent


def pcap(
    port: int, path: Path, loops: int, data_port: int = 2368, routes: dict[int, int] | None = None
) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from adapters.lidar._pcap import PcapReader

    to = {data_port: port, **(routes or {})}  # captured destination port -> port to send to
    reader = PcapReader(path)
    packets = [(d.t_capture, to[d.dst_port], d.payload) for d in reader if d.dst_port in to]
    reader.close()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sent = 0
    try:
        for _ in range(loops):
            start = time.monotonic_ns()
            first = packets[0][0]
            for t_capture, to_port, payload in packets:
                delay = (start + (t_capture - first) - time.monotonic_ns()) / 1e9
                if delay > 0:
                    time.sleep(delay)
                with _signals_held():
                    sock.sendto(payload, ("127.0.0.1", to_port))
                    sent += 1
    except _Stop:
        pass
    finally:
        sock.close()
    return sent


def nmea(fd: int, rate: float, seconds: float, log: Path) -> int:
    import datetime as dt

    import pynmea2

    def line(kind: str, fields: tuple[str, ...]) -> str:
        return str(getattr(pynmea2, kind)("GP", kind, fields))

    sent, burst = 0, 0
    start = time.monotonic()
    with log.open("w") as out:
        try:
            while seconds <= 0 or time.monotonic() - start < seconds:
                due = start + burst / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                now = dt.datetime.now(dt.UTC)
                hms = now.strftime("%H%M%S.") + f"{now.microsecond // 10000:02d}"
                lat = f"4807.{burst % 1000:03d}0"
                lon = f"01131.{burst % 1000:03d}0"
                date = now.strftime("%d%m%y")
                rmc = (hms, "A", lat, "N", lon, "E", "12.50", "45.0", date, "", "", "A")
                vtg = ("45.0", "T", "", "M", "12.50", "N", "23.15", "K", "A")
                gga = (hms, lat, "N", lon, "E", "1", "08", "0.9", "545.4", "M", "46.9", "M", "", "")
                gsv = ("1", "1", "01", "05", "40", "083", "46")
                lines = [line("RMC", rmc), line("VTG", vtg), line("GGA", gga), line("GSV", gsv)]
                if burst % 20 == 19:
                    lines += ["\x15\x80 noise at the wrong baud", lines[2][:-2] + "00"]
                text = "".join(x + "\r\n" for x in lines)
                with _signals_held():
                    os.write(fd, text.encode("latin-1"))
                    out.write(text)
                    out.flush()
                    sent += 1
                burst += 1
        except _Stop:
            pass
    return sent


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="kind", required=True)
    p_imu = sub.add_parser("imu")
    p_imu.add_argument("port", type=int)
    p_imu.add_argument("--rate", type=float, default=100.0)
    p_imu.add_argument("--seconds", type=float, default=0.0, help="0: until signalled")
    p_flood = sub.add_parser("flood")
    p_flood.add_argument("port", type=int)
    p_flood.add_argument("--seconds", type=float, default=2.0)
    p_nmea = sub.add_parser("nmea")
    p_nmea.add_argument("fd", type=int)
    p_nmea.add_argument("--rate", type=float, default=10.0)
    p_nmea.add_argument("--seconds", type=float, default=0.0, help="0: until signalled")
    p_nmea.add_argument("--log", type=Path, required=True)
    p_pcap = sub.add_parser("pcap")
    p_pcap.add_argument("port", type=int)
    p_pcap.add_argument("file", type=Path)
    p_pcap.add_argument("--loops", type=int, default=1)
    p_pcap.add_argument("--data-port", type=int, default=2368, help="captured port sent to PORT")
    p_pcap.add_argument(
        "--route", action="append", default=[], help="CAPTURED:PORT, another port to send"
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    if args.kind == "imu":
        sent = imu(args.port, args.rate, args.seconds)
    elif args.kind == "nmea":
        sent = nmea(args.fd, args.rate, args.seconds, args.log)
    elif args.kind == "flood":
        sent = flood(args.port, args.seconds)
    else:
        routes = {int(r.split(":")[0]): int(r.split(":")[1]) for r in args.route}
        sent = pcap(args.port, args.file, args.loops, args.data_port, routes)
    print(f"sent {sent}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
