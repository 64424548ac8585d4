"""``open_any_source``: one call that opens a ``.hfr`` recording or a ROS bag.

What the ``replay`` command (and any tool that takes "a recording") uses, so
``hyperframes replay drive.mcap --topic /camera/image_raw=cam`` works the same
as on a frame log.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.base import Source

BAG_SUFFIXES = (".bag", ".mcap", ".db3")
"""Storage files :func:`is_bag` recognises (plus ROS 2 bag directories)."""


def is_bag(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a ROS 1 bag, a ROS 2 storage file or a ROS 2 bag directory."""
    p = Path(path)
    if p.is_dir():
        return (p / "metadata.yaml").is_file()
    return p.suffix.lower() in BAG_SUFFIXES


def open_any_source(
    path: str | os.PathLike[str],
    topics: Mapping[str, str] | Sequence[str] | None = None,
    *,
    speed: float | None = 1.0,
    sensors: Sequence[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    **options: Any,
) -> Source:
    """A :class:`~recordings.Replay` for a ``.hfr`` file, a :class:`BagSource` for a bag.

    ``topics`` applies to bags (``["/cam=cam"]`` CLI strings are accepted),
    ``sensors`` to recordings; ``start``/``end`` are absolute ns (log time for
    bags, ``t`` for recordings); other keyword ``options`` go to the source.
    """
    if is_bag(path):
        from adapters.bags.source import BagSource, parse_topics

        if topics is not None and not isinstance(topics, Mapping):
            topics = parse_topics(list(topics))
        if sensors is not None:
            raise ValueError("a bag selects topics (topics=/--topic), not sensors")
        return BagSource(path, topics, speed=speed, start=start, end=end, **options)
    if topics:
        raise ValueError(f"'{path}' is not a ROS bag; --topic applies to bags only")
    from recordings.replay import Replay

    return Replay(path, speed, sensors=sensors, start=start, end=end, **options)
