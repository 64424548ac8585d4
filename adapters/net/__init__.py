"""Network transport shared by the live sources: UDP receiving with its losses counted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.net._udp import (
        DEFAULT_SENDER_TIMEOUT,
        DropCounter,
        SenderFilter,
        UdpReceiver,
        UdpStatistics,
        parse_sender,
    )


__all__ = [
    "DEFAULT_SENDER_TIMEOUT",
    "DropCounter",
    "SenderFilter",
    "UdpReceiver",
    "UdpStatistics",
    "parse_sender",
]

_HOMES = {
    "DEFAULT_SENDER_TIMEOUT": "adapters.net._udp",
    "DropCounter": "adapters.net._udp",
    "SenderFilter": "adapters.net._udp",
    "UdpReceiver": "adapters.net._udp",
    "UdpStatistics": "adapters.net._udp",
    "parse_sender": "adapters.net._udp",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
