"""``--serve [HOST:PORT]`` on ``record`` and ``replay``: a live view in Foxglove.

The flag starts a :class:`~recordings.outputs.live._foxglove_server.FoxgloveServer` (default
``127.0.0.1:8765``); Foxglove connects to ``ws://HOST:PORT``. See
docs/foxglove.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DEFAULT = "127.0.0.1:8765"


def add_serve_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serve",
        nargs="?",
        const=DEFAULT,
        metavar="HOST:PORT",
        help=f"live view: serve every sensor to Foxglove over WebSocket (default {DEFAULT})",
    )
    parser.add_argument(
        "--serve-budget",
        type=_positive(float),
        default=256.0,
        metavar="MIB",
        help="memory for every live client's queued messages together (default 256 MiB; "
        "over it, the client holding the most drops its oldest, counted)",
    )
    parser.add_argument(
        "--serve-backlog",
        type=_positive(int),
        default=128,
        metavar="N",
        help="messages one live client may have queued (default 128; past it, or past its "
        "share of --serve-budget, its oldest is dropped, counted for that client)",
    )
    parser.add_argument(
        "--serve-clients",
        type=_positive(int),
        default=32,
        metavar="N",
        help="live clients at once (default 32); more are refused with HTTP 503 and the reason",
    )
    parser.add_argument(
        "--serve-handshake-timeout",
        type=_positive(float),
        default=5.0,
        metavar="S",
        help="seconds a new connection has to send its WebSocket upgrade (default 5)",
    )
    parser.add_argument(
        "--serve-idle-timeout",
        type=_positive(float),
        default=30.0,
        metavar="S",
        help="seconds a live client may stay silent, not even answering a ping, before it "
        "is closed (default 30)",
    )


def _positive(kind: type[Any]) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, found {text!r}")
        return value

    return parse


def serve_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The live server's limits from ``--serve-*`` (keyword arguments of FoxgloveServer)."""
    return {
        "budget": max(1 << 20, round(args.serve_budget * (1 << 20))),
        "client_backlog": args.serve_backlog,
        "max_clients": args.serve_clients,
        "handshake_timeout": args.serve_handshake_timeout,
        "idle_timeout": args.serve_idle_timeout,
    }


def parse_serve(text: str) -> tuple[str, int]:
    """``"0.0.0.0:9000"`` -> ``("0.0.0.0", 9000)``; ``":9000"`` or ``"9000"`` keep the host."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or DEFAULT.partition(":")[0]
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"--serve: expected HOST:PORT, found {text!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"--serve: port {number} is not in 0..65535")
    return host, number


def open_server(
    text: str | None,
    specs: Iterable[Any],
    *,
    dating: Any = "live",
    dated: Any = None,
    limits: dict[str, Any] | None = None,
    playback_time: bool = False,
    playback: Any = None,
    bag: str | Path | None = None,
) -> Any:
    """A started :class:`FoxgloveServer` for ``--serve TEXT`` (``None`` without the flag),
    with ``limits`` (:func:`serve_limits`); ``playback_time`` sends the frames' time (a
    replay), ``playback`` (a PlaybackHandler) takes Foxglove's playback controls; a
    ``bag``'s latched topics keep every message for late subscribers."""
    if text is None:
        return None
    from recordings.outputs import FoxgloveServer

    host, port = parse_serve(text)
    server = FoxgloveServer(
        host,
        port,
        sensors=specs,
        dating=dating,
        dated=dated,
        playback_time=playback_time,
        playback=playback,
        latched=() if bag is None else bag_latched_topics(bag),
        **(limits or {}),
    )
    return server.start()


def bag_latched_topics(path: str | Path) -> frozenset[str]:
    """The topics of a ROS bag that a late subscriber gets in full: a ROS 2 bag's topics
    offered ``transient_local`` (rosbag2's ``offered_qos_profiles``), a ROS 1 bag's latching
    connections. Empty for anything rosbags does not open (a ``.hfr``, a damaged bag)."""
    from rosbags.highlevel import AnyReader
    from rosbags.interfaces import ConnectionExtRosbag1, ConnectionExtRosbag2

    try:
        with AnyReader([Path(path)]) as reader:
            connections = list(reader.connections)
    except Exception:  # not a bag rosbags opens: nothing latched (replay says what is wrong)
        return frozenset()
    topics = set()
    for conn in connections:
        ext = conn.ext
        if isinstance(ext, ConnectionExtRosbag1) and ext.latching:
            topics.add(conn.topic)
        elif isinstance(ext, ConnectionExtRosbag2):
            profiles = ext.offered_qos_profiles
            if isinstance(profiles, str):  # older rosbag2 metadata: YAML text
                latched = "durability: 1" in profiles or "transient_local" in profiles.lower()
            else:
                latched = any(getattr(q.durability, "value", q.durability) == 1 for q in profiles)
            if latched:
                topics.add(conn.topic)
    return frozenset(topics)


def serve_line(server: Any) -> str:
    """``foxglove ws://...: N frames sent, M dropped ...`` for the live table's caption."""
    return "" if server is None else " | " + server.statistics().describe()


def close_server(server: Any) -> None:
    """Stop the server now (Ctrl-C): clients are disconnected at once."""
    if server is not None:
        server.close()


def print_served(server: Any) -> None:
    """One line: what the server sent, and what it dropped (encoder behind, slow clients)."""
    if server is None:
        return
    stats = server.statistics()
    line = f"served {sum(stats.frames.values())} frames ({stats.messages} messages) at {stats.url}"
    if stats.late:
        line += f"; {stats.late} held frames sent to late subscribers"
    drops = stats.drops()
    print(f"{line}; {drops}" if drops else line)
    if connections := stats.connections():
        print(f"live clients: {connections}")
