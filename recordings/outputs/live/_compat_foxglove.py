"""Every reach into foxglove-sdk's internals, in one place (principle 12).

What is used, and why: the SDK's only trace of a message it drops for a slow client is an
INFO log record of its Rust module ``foxglove::websocket::connected_client::send_lossy``
(``send_lossy.rs``), ``outbox for client ADDR full``, which reaches Python through
pyo3-log as the logger :data:`DROP_LOGGER`. Neither the logger's name nor the text is
documented; :class:`~recordings.outputs.live._relay.Relay` listens for it to know that the
SDK dropped a message on its way to the relay (then every client's drop count is a lower
bound, not exact). Also relied on: the SDK answers the subprotocol ``foxglove.sdk.v1``
(0.30 no longer answers ``foxglove.websocket.v1`` alone; the relay offers both).

And a race: the SDK advertises a new channel to a connected client before it takes
subscriptions to it. A subscribe that comes back at once (the relay's, as soon as a client
asks) is dropped with the status ``Unknown channel ID: N`` (level error) and nothing else;
:func:`unknown_channel` reads that status, and the relay subscribes again
(:class:`~recordings.outputs.live._relay_state.Resubscriptions`). Without it a client that
subscribes to a channel the moment it appears (Foxglove does, live) never gets a message of
that channel.

If a release renames the logger or rewords the record, :func:`dropped_for` hears nothing:
the counts then claim to be exact when the SDK dropped (what a live view showed before the
relay listened). Checked against foxglove-sdk :data:`CHECKED`
(``tests/recordings/test_compat_foxglove.py`` makes the real SDK drop for a client that
does not read and hears the record; it fails, naming this module, on a release outside
that range).
"""

from __future__ import annotations

import re

DISTRIBUTION = "foxglove-sdk"
CHECKED = ">=0.30.0,<=0.30.3"
"""The releases this module was read against and its tests passed with."""

DROP_LOGGER = "foxglove.websocket.connected_client.send_lossy"
"""The logger the SDK's ``outbox for client ADDR full`` record reaches through pyo3-log."""
_DROP = re.compile(r"outbox for client (\S+) full")


_UNKNOWN_CHANNEL = re.compile(r"Unknown channel ID: (\d+)")


def dropped_for(message: str) -> str | None:
    """The ``host:port`` of the client a record of :data:`DROP_LOGGER` says the SDK dropped a
    message for, or ``None`` if the record says something else."""
    match = _DROP.search(message)
    return None if match is None else match[1]


def unknown_channel(status: str) -> int | None:
    """The channel a status message of the SDK says it did not know when the relay
    subscribed to it, or ``None`` if the status says something else."""
    match = _UNKNOWN_CHANNEL.fullmatch(status)
    return None if match is None else int(match[1])
