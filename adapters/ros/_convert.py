"""One serialised ROS message -> one frame: the conversion every ROS source shares.

Why a module of its own: a message must become the same frame whether it was
read from a bag (:class:`~adapters.BagSource`) or taken live from a ROS 2
topic (:class:`~adapters.ros.Ros2Source`). Both build a
:class:`MessageConverter` per message type from a rosbags type store and
turn each message's bytes into a frame with :func:`message_frame`.

A converter decodes the standard sensor types straight from their bytes
(:mod:`adapters.ros._rawdecode`) when the store defines them the standard
way, other types with a generated flat decoder (:mod:`adapters.ros._flatdecode`)
when it has one, and everything else, and any bytes those fast paths cannot
parse, through rosbags' deserialiser and the type's decoder
(:mod:`adapters.ros._messages`). Bytes that do not decode raise
:class:`~adapters.errors.DecodeError` with rosbags' reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.errors import DecodeError
from adapters.ros._flatdecode import FlatDecoder, compile_flat
from adapters.ros._messages import Decoder, decoder_info, header_stamp
from adapters.ros._passthrough import RAW
from adapters.ros._rawdecode import RAW_ERRORS, Malformed, RawDecoder, raw_decoder, standard_layout
from fusion import Frame

Converted = tuple[int | None, str | None, Any, dict[str, Any]]
"""``(header stamp ns or None, frame_id or None, data, meta)`` of one message."""


class MessageConverter:
    """Decodes the serialised messages of one type (see the module docstring).

    ``deserialize(raw, msgtype)`` is rosbags' deserialiser for the wire format
    (``typestore.deserialize_cdr`` for ROS 2, ``deserialize_ros1`` for ROS 1);
    ``reference`` is the ROS distribution's standard store, against which
    ``typestore``'s definition is compared before a raw decoder is trusted.
    """

    __slots__ = ("decoder", "deserialize", "fast", "msgtype", "standard")

    def __init__(
        self,
        typestore: Any,
        reference: Any,
        msgtype: str,
        *,
        cdr: bool,
        decode_images: bool,
        deserialize: Callable[[Any, str], Any],
    ) -> None:
        self.msgtype = msgtype
        self.deserialize = deserialize
        info = decoder_info(msgtype)
        self.decoder: Decoder = info.make(decode_images)
        fast: RawDecoder | FlatDecoder | None = None
        if standard_layout(typestore, reference, msgtype):
            fast = raw_decoder(msgtype, cdr, decode_images)
        self.standard = fast is not None
        """Decoded straight from its bytes as a standard type (:mod:`adapters.ros._rawdecode`)."""
        if fast is None and info.name == "generic":
            fast = compile_flat(msgtype, typestore, cdr)
        self.fast = fast
        """The decoder from bytes, ``None`` when rosbags deserialises every message."""

    def __call__(self, raw: Any) -> Converted:
        """The message's ``(stamp, frame_id, data, meta)``; :class:`DecodeError` if it does not
        decode."""
        fast = self.fast
        try:
            if fast is not None:
                try:
                    return fast(raw)
                except (Malformed, *RAW_ERRORS):
                    pass
            msg = self.deserialize(raw, self.msgtype)
            data, meta = self.decoder(msg)
            frame_id = getattr(getattr(msg, "header", None), "frame_id", None)
            return header_stamp(msg), frame_id, data, meta
        except DecodeError:
            raise
        except Exception as err:  # rosbags' deserialiser errors have no common base
            raise DecodeError(f"{self.msgtype} message does not deserialise: {err}") from err


def message_frame(
    sensor: str,
    seq: int,
    topic: str,
    converted: Converted,
    raw: Any,
    received: int,
    *,
    keep: bool,
    received_name: str,
) -> Frame:
    """The frame of one converted message: ``t`` and ``t_sensor`` its header stamp
    (``received`` when it has none, ``meta["stamp"] = received_name`` saying so),
    ``t_arrival`` = ``received``; ``meta`` has the topic, the ``frame_id`` and,
    with ``keep``, the message's bytes (``meta["ros_message"]``)."""
    stamp, frame_id, data, meta = converted
    if keep:
        if type(raw) is not bytes:
            raw = bytes(raw)
        meta = {"topic": topic, **meta, RAW: raw} if meta else {"topic": topic, RAW: raw}
    else:
        meta = {"topic": topic, **meta} if meta else {"topic": topic}
    if frame_id:
        meta["frame_id"] = frame_id
    if stamp is None:
        stamp = received
        meta["stamp"] = received_name
    return Frame(sensor, seq, stamp, data, stamp, received, meta)
