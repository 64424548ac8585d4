"""Asks a Hesai sensor over PTC (TCP) for its angle correction: one connection, one
request, one reply, every wait bounded (:mod:`adapters.lidar._hesai_ptc` frames it)."""

from __future__ import annotations

import anyio

from adapters.errors import DecodeError, SourceOpenError
from adapters.lidar._hesai_correction import HesaiCorrection
from adapters.lidar._hesai_models import HesaiAngles, parse_any_angles
from adapters.lidar._hesai_ptc import (
    GET_CALIBRATION,
    MAX_PAYLOAD,
    PtcError,
    ReplyReader,
    command_name,
    encode_request,
)

DEFAULT_WAIT_S = 5.0


async def ptc_request(
    host: str,
    port: int,
    command: int,
    payload: bytes = b"",
    *,
    wait_s: float = DEFAULT_WAIT_S,
    limit: int = MAX_PAYLOAD,
) -> bytes:
    """The payload of the sensor's reply to ``command``.

    The connection, the request and the whole reply together take at most
    ``wait_s`` seconds. Raises :class:`SourceOpenError` (not reachable, no
    reply in time, the connection closed early) or :class:`PtcError` (a
    malformed reply, or the sensor's refusal by return code), each one line
    naming the sensor's address and the command."""
    where = f"PTC {command_name(command)} to {host}:{port}"
    reader = ReplyReader(command, limit=limit)
    try:
        with anyio.fail_after(wait_s):
            async with await anyio.connect_tcp(host, port) as stream:
                await stream.send(encode_request(command, payload))
                reply = None
                while reply is None:
                    try:
                        chunk = await stream.receive(65536)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        raise SourceOpenError(f"{where}: {reader.ended()}") from None
                    reply = reader.feed(chunk)
    except TimeoutError:
        got = f"{reader.received:,} bytes of the reply" if reader.received else "no reply"
        raise SourceOpenError(f"{where}: {got} within {wait_s:g} s") from None
    except PtcError as err:
        raise PtcError(f"{where}: {err}") from None
    except OSError as err:
        cause = err.__cause__ if err.__cause__ is not None else err
        raise SourceOpenError(f"{where}: {getattr(cause, 'strerror', None) or cause}") from None
    if not reply.ok:
        raise PtcError(f"{where}: {reply.refusal()}")
    return reply.payload


async def fetch_angles(
    host: str, port: int, *, wait_s: float = DEFAULT_WAIT_S
) -> HesaiAngles | HesaiCorrection:
    """The sensor's own angle correction (PTC ``0x05``): an angle CSV, or the
    AT128's ``.dat``, parsed as a file of that kind would be.

    Raises :class:`SourceOpenError` or :class:`DecodeError` (see
    :func:`ptc_request`; a reply that is neither an angle CSV nor a ``.dat``
    is a DecodeError saying what was wrong with it)."""
    data = await ptc_request(host, port, GET_CALIBRATION, wait_s=wait_s)
    source = f"sensor {host}:{port} (PTC 0x05)"
    try:
        return parse_any_angles(data, source)
    except DecodeError as err:
        more = "..." if len(data) > 24 else ""
        raise DecodeError(f"{err} (the reply's {len(data):,} bytes: {data[:24]!r}{more})") from None
