"""CAN buses: logs and live interfaces through python-can, signals through cantools.

:class:`CanSource` reads a log (candump, ASC, BLF, TRC, CSV, MF4) or a live
bus and makes frames of kind ``can``: raw frames as :data:`RAW_DTYPE` rows and,
with a database, decoded signals per message. :class:`CanDecoder` is its
sans-I/O core (python-can messages in, events and counted losses out), for a
source built on CAN (a radar's cluster and object lists). python-can and
cantools load only when a source or decoder is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.can._decoder import (
        RAW_DTYPE,
        Block,
        CanDecoder,
        Event,
        Loss,
        id_sensor,
        load_database,
    )
    from adapters.can._io import BUS_ERRORS_IN_A_ROW, LOG_SUFFIXES, bus_batch, log_batches, open_bus
    from adapters.can._source import CanSource


__all__ = [
    "BUS_ERRORS_IN_A_ROW",
    "LOG_SUFFIXES",
    "RAW_DTYPE",
    "Block",
    "CanDecoder",
    "CanSource",
    "Event",
    "Loss",
    "bus_batch",
    "id_sensor",
    "load_database",
    "log_batches",
    "open_bus",
]

_HOMES = {
    "BUS_ERRORS_IN_A_ROW": "adapters.can._io",
    "Block": "adapters.can._decoder",
    "CanDecoder": "adapters.can._decoder",
    "CanSource": "adapters.can._source",
    "Event": "adapters.can._decoder",
    "LOG_SUFFIXES": "adapters.can._io",
    "Loss": "adapters.can._decoder",
    "RAW_DTYPE": "adapters.can._decoder",
    "bus_batch": "adapters.can._io",
    "id_sensor": "adapters.can._decoder",
    "load_database": "adapters.can._decoder",
    "log_batches": "adapters.can._io",
    "open_bus": "adapters.can._io",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
