"""What an MCAP writer knows of each sensor: its spec, original ROS type, topic and video track.

Both MCAP profiles route a frame the same way, so they share one
:class:`SensorMap`:

* a sensor whose spec carries a stored message type
  (:mod:`adapters.ros._passthrough`) writes its frames' original messages,
  on its original topic when no other sensor has taken it;
* every other sensor writes on ``<prefix><sensor>`` by payload kind;
* a video sensor's codec is followed from the parameters on its key packets
  (:class:`~recordings.outputs.encoders._annexb.VideoTrack`), and its packets keep
  decode order in log time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from adapters.ros import RAW, Ros2MessageType, passthrough_type
from fusion import Frame, SensorSpec
from recordings.hfr.video import META_KEY
from recordings.outputs.encoders._annexb import VideoTrack, packet_key
from recordings.outputs.encoders._groups import GROUP_TOPIC
from recordings.outputs.encoders._kinds import video_format
from recordings.outputs.encoders._shapes import shape_of_type


def one_type_per_topic(topic: str, carried: str, wanted: str) -> None:
    """Refuse a second message type on a topic (MCAP, Foxglove and DDS readers each
    decode a topic with one schema): ``ValueError`` naming both."""
    if carried != wanted:
        raise ValueError(f"topic {topic} already carries {carried}, not {wanted}")


class SensorMap:
    """Per-sensor routing state of one writer."""

    def __init__(self, prefix: str = "/", types: Mapping[str, str] | None = None) -> None:
        self.prefix = prefix
        self.types = {k: shape_of_type(v) for k, v in (types or {}).items()}
        """Typed-export overrides, sensor -> shape (:mod:`recordings.outputs.encoders._shapes`)."""
        self.specs: dict[str, SensorSpec] = {}
        self.passthrough: dict[str, Ros2MessageType | None] = {}
        self.topics: dict[str, str] = {}
        self.video: dict[str, VideoTrack] = {}
        self.notes: list[str] = []
        """Things the export could not do as asked, one line each."""

    def declare(self, spec: SensorSpec) -> None:
        """Know ``spec``: a sensor from a bag keeps its topic and its messages' type; an
        ``export_type`` in its meta (a TOML source's) is its typed-export override."""
        self.specs[spec.name] = spec
        declared = spec.meta.get("export_type")
        if declared is not None and spec.name not in self.types:
            try:
                self.types[spec.name] = shape_of_type(str(declared))
            except ValueError as err:
                self.notes.append(f"sensor {spec.name!r}: export_type: {err}")
        try:
            self.passthrough[spec.name] = passthrough_type(spec.meta)
        except ValueError as err:
            self.passthrough[spec.name] = None
            self.notes.append(
                f"sensor {spec.name!r}: {err}; its frames are written from their data"
            )

    def declare_video(self, sensor: str, key_meta: Mapping[str, Any]) -> None:
        """Know a video sensor's track from its first key packet's meta.

        An export window may open between key frames; its first packets still
        get their codec this way.
        """
        self.video.setdefault(sensor, VideoTrack()).update(key_meta)

    def forced(self, sensor: str) -> str | None:
        """The shape a sensor's frames are exported as by override, or ``None``."""
        return self.types.get(sensor)

    def kind(self, sensor: str, given: str | None) -> str:
        """The sensor kind that breaks payload ties: ``given``, else the declared spec's."""
        if given is not None:
            return given
        spec = self.specs.get(sensor)
        return spec.kind if spec is not None else "generic"

    def topic_for(self, sensor: str) -> str:
        """``<prefix><sensor>``, or the original topic of a sensor that came from a bag."""
        topic = self.topics.get(sensor)
        if topic is None:
            topic = self.prefix.rstrip("/") + "/" + sensor
            spec = self.specs.get(sensor)
            original = spec.meta.get("topic") if spec is not None else None
            if (
                self.passthrough.get(sensor) is not None
                and isinstance(original, str)
                and original not in self.topics.values()
                and original != GROUP_TOPIC
            ):
                topic = original
            self.topics[sensor] = topic
        return topic

    def original(
        self, frame: Frame
    ) -> tuple[Ros2MessageType, bytes | bytearray | memoryview] | None:
        """The frame's stored message type and bytes, when it goes out as its original message."""
        ptype = self.passthrough.get(frame.sensor)
        raw = frame.meta.get(RAW)
        if ptype is None or not isinstance(raw, (bytes, bytearray, memoryview)):
            return None
        return ptype, raw

    def original_cdr(
        self, frame: Frame, skipped: Counter[tuple[str, str]]
    ) -> tuple[Ros2MessageType, bytes | None] | None:
        """The frame's original message type and its CDR bytes, for both MCAP profiles.

        ``None`` when the frame does not go out as its original message; bytes
        ``None`` (and counted in ``skipped``) when its message does not convert.
        """
        original = self.original(frame)
        if original is None:
            return None
        ptype, raw = original
        try:
            return ptype, ptype.to_cdr(raw)
        except Exception as err:  # rosbags' converter errors have no common base
            skipped[(frame.sensor, f"{ptype.name} does not convert to CDR: {err}")] += 1
            return ptype, None

    def video_payload(
        self, frame: Frame, skipped: Counter[tuple[str, str]]
    ) -> tuple[bytes | None, str]:
        """``(bytes, format)`` of a video frame for ``CompressedVideo``.

        ``None`` (and counted) for a recorded packet whose codec is not known yet.
        """
        if META_KEY not in frame.meta:
            return bytes(frame.data), video_format(frame)
        track = self.video.setdefault(frame.sensor, VideoTrack())
        track.update(frame.meta)
        if track.format is None:
            skipped[(frame.sensor, "video packet before its track's first key frame")] += 1
            return None, ""
        return track.annexb(frame.data, packet_key(frame.meta)), track.format

    def video_log_time(self, sensor: str, log_time: int) -> int:
        """A log time that keeps a recorded track's packets in decode order."""
        track = self.video.get(sensor)
        return log_time if track is None else track.log_time(log_time)
