"""Blocking readers of CAN frames through python-can: a log file, a live bus.

Both yield batches of python-can ``Message`` objects (with, for a bus, each
one's host arrival time); they run in a worker thread. python-can reads every
log format it knows by suffix (``.asc``, ``.blf``, ``.csv``, ``.db``,
``.log`` candump ``-l``, ``.mf4`` with asammdf, ``.trc``, each optionally
``.gz``) and opens any interface it has (``socketcan``, ``pcan``,
``kvaser``, ``vector``, ``udp_multicast``, ``socketcand``, ``virtual`` ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from adapters.errors import SourceOpenError
from fusion.errors import SourceError

BATCH = 4096
"""Frames of a log per worker-thread round trip."""

LOG_SUFFIXES = (".asc", ".blf", ".csv", ".db", ".log", ".mf4", ".trc")
"""Suffixes of the CAN logs python-can reads (each also ``.gz``-compressed)."""

BUS_ERRORS_IN_A_ROW = 20
"""Bus errors in a row after which a live bus counts as gone (the source fails)."""


def log_suffix(path: Path) -> str:
    """The log's format suffix (``.asc`` of ``drive.asc.gz``), lower case."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def open_log(path: Path, sensor: str) -> Any:
    """python-can's reader of ``path`` (ASC with absolute dates where its header has one)."""
    import can

    suffix = log_suffix(path)
    if suffix not in LOG_SUFFIXES:
        raise SourceOpenError(
            f"{str(path)!r} is not a CAN log python-can reads (suffixes: "
            f"{', '.join(LOG_SUFFIXES)}, optionally .gz)",
            sensor=sensor,
        )
    kwargs: dict[str, Any] = {}
    if suffix == ".asc":
        kwargs["relative_timestamp"] = False
    try:
        return can.LogReader(str(path), **kwargs)
    except Exception as err:  # python-can raises many types (ImportError for MF4 too)
        raise SourceOpenError(
            f"python-can cannot open the CAN log {str(path)!r}: {err}", sensor=sensor
        ) from err


def log_batches(path: Path, sensor: str) -> Iterator[list[Any]]:
    """The frames of the log at ``path`` in lists of at most :data:`BATCH`."""
    reader = open_log(path, sensor)
    batch: list[Any] = []
    try:
        for message in reader:
            batch.append(message)
            if len(batch) >= BATCH:
                yield batch
                batch = []
    except Exception as err:  # a log cut short or damaged: what was read is kept
        if batch:
            yield batch
        raise SourceError(
            f"python-can stopped reading {str(path)!r}: {type(err).__name__}: {err}",
            sensor=sensor,
        ) from err
    finally:
        stop = getattr(reader, "stop", None)
        if stop is not None:
            stop()
    if batch:
        yield batch


def open_bus(interface: str, channel: Any, options: Mapping[str, Any], sensor: str) -> Any:
    """A python-can bus, or :class:`SourceOpenError` naming the interface and channel."""
    import can

    try:
        return can.Bus(interface=interface, channel=channel, **dict(options))
    except Exception as err:
        raise SourceOpenError(
            f"cannot open CAN interface {interface!r} channel {channel!r}: {err}", sensor=sensor
        ) from err


def bus_batch(
    bus: Any, now: Callable[[], int], timeout: float, limit: int = 256
) -> tuple[list[Any], list[int], list[str]]:
    """Frames waiting on ``bus`` (blocking up to ``timeout`` s for the first), their
    arrival times and the bus errors met (python-can's ``CanError`` messages)."""
    import can

    messages: list[Any] = []
    arrivals: list[int] = []
    errors: list[str] = []
    wait = timeout
    while len(messages) < limit:
        try:
            message = bus.recv(wait)
        except can.CanError as err:
            errors.append(f"{type(err).__name__}: {err}")
            if len(errors) >= BUS_ERRORS_IN_A_ROW:
                break
            continue
        if message is None:
            break
        messages.append(message)
        arrivals.append(now())
        wait = 0.0
    return messages, arrivals, errors
