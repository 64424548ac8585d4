"""Network transport shared by the live sources: UDP receiving with its losses counted."""

from __future__ import annotations

from adapters.net.udp import DropCounter, SenderFilter, UdpReceiver, UdpStatistics, parse_sender

__all__ = ["DropCounter", "SenderFilter", "UdpReceiver", "UdpStatistics", "parse_sender"]
