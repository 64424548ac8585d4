"""``--to-ros2`` on ``replay``: publish every sensor as ROS 2 topics over DDS.

The flag starts a :class:`~recordings.outputs.live._ros2_publisher.Ros2Publisher` in
DDS domain ``--ros2-domain`` (default ``ROS_DOMAIN_ID``, else 0) with the QoS
profile ``--ros2-qos``; where it talks is Cyclone DDS's own configuration
(``CYCLONEDDS_URI``), as for a ROS 2 node running rmw_cyclonedds. See
docs/ros2.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from typing import Any

QOS_HELP = (
    "QoS of every topic: a profile (default, sensor_data) and/or reliable|best_effort, "
    "volatile|transient_local, depth=N, comma-separated (default: 'default', "
    "ROS 2's reliable, volatile, keep last 10)"
)


def add_ros2_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--to-ros2",
        action="store_true",
        help="publish every sensor (and the pipeline's groups and results) as ROS 2 topics "
        "over DDS",
    )
    parser.add_argument(
        "--ros2-domain",
        type=domain_arg,
        metavar="N",
        help="with --to-ros2: the DDS domain (ROS_DOMAIN_ID; default: that variable, else 0)",
    )
    parser.add_argument(
        "--ros2-qos", type=qos_arg, metavar="QOS", help="with --to-ros2: " + QOS_HELP
    )
    parser.add_argument(
        "--ros2-subscribers",
        type=int,
        default=0,
        metavar="N",
        help="with --to-ros2: each topic waits (up to 10 s) for N subscribers before its "
        "first message",
    )


def parse_qos(text: str) -> Any:
    """``"best_effort,depth=5"`` -> a :class:`~adapters.ros.TopicQos`; profile names
    ``default`` and ``sensor_data`` set every policy, later items override them."""
    from adapters.ros import DEFAULT, SENSOR_DATA, TopicQos

    qos = DEFAULT
    raw: dict[str, Any] = {}
    for item in (part.strip() for part in text.split(",")):
        if item in ("default", "sensor_data"):
            qos, raw = (DEFAULT if item == "default" else SENSOR_DATA), {}
        elif item in ("reliable", "best_effort"):
            raw["reliability"] = item
        elif item in ("volatile", "transient_local"):
            raw["durability"] = item
        elif item.startswith("depth="):
            try:
                raw["depth"] = int(item.removeprefix("depth="))
            except ValueError:
                raise ValueError(f"--ros2-qos: {item!r}: depth must be an integer") from None
        else:
            raise ValueError(
                f"--ros2-qos: unknown item {item!r} (expected default, sensor_data, reliable, "
                "best_effort, volatile, transient_local or depth=N)"
            )
    return TopicQos.from_mapping(raw, base=qos)


def qos_arg(text: str) -> Any:
    try:
        return parse_qos(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--ros2-qos: ")) from None


def domain_arg(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a DDS domain id 0..232, found {text!r}"
        ) from None
    if not 0 <= number <= 232:
        raise argparse.ArgumentTypeError(f"expected a DDS domain id 0..232, found {number}")
    return number


def default_domain() -> int:
    """``ROS_DOMAIN_ID`` as a ROS 2 node reads it (unset or empty: 0)."""
    text = os.environ.get("ROS_DOMAIN_ID", "").strip()
    if not text:
        return 0
    try:
        return domain_arg(text)
    except argparse.ArgumentTypeError as err:
        raise ValueError(f"ROS_DOMAIN_ID: {err}") from None


def source_dds_config(sources: Iterable[Any], domain: int) -> str | None:
    """The Cyclone config of the session's ``ros2`` sources on DDS ``domain`` (``None``: none
    there, or they use ``CYCLONEDDS_URI``): a process configures a domain once, so the
    publisher joins the domain as its sources do (``loopback = true`` included)."""
    for source in sources:
        if getattr(source, "type", None) == "ros2" and source.domain_id == domain:
            if source.loopback:
                from adapters.ros import loopback_config

                return loopback_config()
            return str(source.config) if source.config is not None else None
    return None


def open_publisher(
    args: argparse.Namespace,
    specs: Iterable[Any],
    *,
    dating: Any = "live",
    dated: Any = None,
    sources: Iterable[Any] = (),
) -> Any:
    """A started :class:`Ros2Publisher` for ``--to-ros2`` (``None`` without the flag);
    ``sources`` the session's source configs (a ``ros2`` one on the publisher's domain
    gives it its Cyclone config, :func:`source_dds_config`)."""
    given = [
        name
        for name, value in (
            ("--ros2-domain", args.ros2_domain),
            ("--ros2-qos", args.ros2_qos),
            ("--ros2-subscribers", args.ros2_subscribers or None),
        )
        if value is not None
    ]
    if not args.to_ros2:
        if given:
            raise ValueError(f"{', '.join(given)} applies with --to-ros2")
        return None
    if args.ros2_subscribers < 0:
        raise ValueError(f"--ros2-subscribers must be >= 0, got {args.ros2_subscribers}")
    from adapters.ros import DEFAULT
    from recordings.outputs import Ros2Publisher

    domain = default_domain() if args.ros2_domain is None else args.ros2_domain
    return Ros2Publisher(
        domain,
        config=source_dds_config(sources, domain),
        qos=args.ros2_qos or DEFAULT,
        sensors=specs,
        dating=dating,
        dated=dated,
        subscribers=args.ros2_subscribers,
    ).start()


def publisher_line(publisher: Any) -> str:
    """`` | ros2 domain 0: N frames published ...`` for the live caption."""
    return "" if publisher is None else " | " + publisher.statistics().describe()


def close_publisher(publisher: Any, *, flush: bool) -> None:
    """Send what is queued (at most 10 s) unless stopped (Ctrl-C), then leave the domain."""
    if publisher is None:
        return
    if flush:
        publisher.flush(10.0)
    publisher.close()


def print_published(publisher: Any) -> None:
    """One line: what was published, what went to no subscriber, what was lost."""
    if publisher is not None:
        stats = publisher.statistics()
        print(stats.describe())
        for (sensor, reason), n in sorted(stats.skipped.items()):
            print(f"not published: {sensor}: {n} frames ({reason})")
        for note in stats.notes:
            print(f"note: {note}")
