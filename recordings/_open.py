"""``open_source``: any recording or ROS bag as a :class:`~fusion.Source`, opened once.

What the ``replay`` command (and any tool that takes "a recording") uses, so
``hyperframes replay drive.mcap --topic /camera/image_raw=cam`` works the same
as on a frame log. The choice is made here and nowhere else:

* a ROS 1 bag, a ROS 2 storage file or a ROS 2 bag directory: :class:`~adapters.BagSource`;
* an NMEA 0183 log (a GNSS receiver's sentences, by content): :class:`~adapters.NmeaSource`,
  sensor ``gnss``, read whole (no window, no loop);
* a ``.hfr`` recording with encoded video sensors: :class:`~recordings.VideoReplay`;
* any other ``.hfr`` recording: :class:`~recordings.Replay`.

The recording is opened once; its summary decides the class and gives the
first stamp that ``start_offset`` counts from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # ``is_bag`` alone (``info``) loads no async machinery
    from fusion import Source

BAG_SUFFIXES = (".bag", ".mcap", ".db3")
"""Suffixes bags usually have; :func:`is_bag` decides by content, not by these."""


def is_bag(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a ROS 1 bag, a ROS 2 storage file or a ROS 2 bag directory.

    Decided by content (:func:`adapters.bags._detect.bag_format`): a directory
    is a ROS 2 bag when it holds ``metadata.yaml``, whatever its name (``ros2
    bag record -o images.bag`` makes a directory named ``*.bag``); a file is a
    ROS 1 bag when it starts with ``#ROSBAG V2.0``, a ROS 2 one when it is
    MCAP or a rosbag2 ``.db3``.
    """
    if _has_magic(path):  # a .hfr recording: no bag reader imported (~0.1 s)
        return False
    from adapters.bags import bag_format

    return bag_format(path) is not None


def _has_magic(path: str | os.PathLike[str]) -> bool:
    """``path`` is a file that starts with the ``.hfr`` magic bytes."""
    from recordings.hfr import MAGIC

    if not os.path.isfile(path):  # never open a FIFO or a device: it may block
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:  # a directory (a ROS 2 bag), a missing file: the callers say
        return False


def _check_recording(path: str | os.PathLike[str]) -> None:
    """Raise one line naming everything tried when ``path`` is neither a bag nor a ``.hfr``."""
    if _has_magic(path):
        return
    from adapters.bags import not_a_bag
    from adapters.errors import SourceOpenError

    raise SourceOpenError(
        f"{not_a_bag(Path(path))}; nor is it a .hfr recording (no HFR magic bytes) or an NMEA log"
    )


def open_source(
    path: str | os.PathLike[str],
    topics: Mapping[str, str] | Sequence[str] | None = None,
    *,
    speed: float | None = 1.0,
    sensors: Sequence[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    start_offset: int | None = None,
    duration: int | None = None,
    loop: bool = False,
    **options: Any,
) -> Source:
    """The right :class:`~fusion.Source` for a recording or bag at ``path``.

    ``topics`` applies to bags (``["/cam=cam"]`` CLI strings are accepted),
    ``sensors`` to recordings. The window is ``start``/``end`` (absolute ns:
    log time for bags, ``t`` for recordings) or ``start_offset``/``duration``
    (ns from the first stamp), half-open. ``loop`` replays a frame log again
    and again (not bags, not encoded video). Other keyword ``options`` go to
    the source's constructor.
    """
    if (start_offset is not None or duration is not None) and (
        start is not None or end is not None
    ):
        raise ValueError("give start/end or start_offset/duration, not both")
    if is_bag(path):
        from adapters.bags import BagSource, parse_topics

        if topics is not None and not isinstance(topics, Mapping):
            topics = parse_topics(list(topics))
        if sensors is not None:
            raise ValueError("a bag selects topics (topics=/--topic), not sensors")
        if loop:
            raise ValueError("--loop is supported for .hfr recordings, not bags")
        bag = BagSource(path, topics, speed=speed, start=start, end=end, **options)
        bag.start, bag.end = _window(bag.start_time, start, end, start_offset, duration)
        return bag
    if topics:
        raise ValueError(f"'{path}' is not a ROS bag; --topic applies to bags only")
    if not _has_magic(path) and _nmea(path):
        window = (start, end, start_offset, duration)
        if sensors is not None or loop or any(v is not None for v in window):
            raise ValueError(
                f"'{path}' is an NMEA log: it is read whole (no sensors, window or loop)"
            )
        from adapters.nmea import NmeaSource

        return NmeaSource(Path(path), speed=speed, **options)
    _check_recording(path)
    from recordings.hfr import open_recording
    from recordings.hfr.video import video_sensors

    log = open_recording(path)
    try:
        summary = log.summary()
        start, end = _window(summary.t_start or 0, start, end, start_offset, duration)
        if video_sensors(list(summary.sensors)):
            from recordings.hfr.video import VideoReplay

            if loop:
                raise ValueError("--loop is not supported for recordings with encoded video")
            return VideoReplay(log, speed, sensors=sensors, start=start, end=end, **options)
        from recordings._replay import Replay

        return Replay(log, speed, sensors=sensors, start=start, end=end, loop=loop, **options)
    except BaseException:
        log.close()
        raise


def _nmea(path: str | os.PathLike[str]) -> bool:
    from adapters.nmea import looks_like_nmea

    return looks_like_nmea(path)


def _window(
    t0: int,
    start: int | None,
    end: int | None,
    start_offset: int | None,
    duration: int | None,
) -> tuple[int | None, int | None]:
    if start_offset is None and duration is None:
        return start, end
    first = t0 + (start_offset or 0)
    return (first if start_offset else None), (None if duration is None else first + duration)
