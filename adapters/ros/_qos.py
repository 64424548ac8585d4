"""QoS of a ROS 2 topic on DDS: the three policies a ROS 2 profile sets, and their DDS form.

A ROS 2 QoS profile is reliability, durability and history depth (plus
deadline, lifespan and liveliness, which sensor topics leave at their
defaults). :class:`TopicQos` holds the three; :data:`SENSOR_DATA` is ROS 2's
``rmw_qos_profile_sensor_data`` (best effort, volatile, keep last 5) and the
default of a :class:`~adapters.ros.Ros2Source` topic, because a best-effort
volatile reader matches every publisher (reliable or not, durable or not:
DDS's request-versus-offer rule); :data:`DEFAULT` is ``rmw_qos_profile_default``
(reliable, volatile, keep last 10).

The DDS policies are built the way ``rmw_cyclonedds_cpp`` builds them
(``create_readwrite_qos`` in its ``rmw_node.cpp``): a reliable writer blocks
without limit, ``TRANSIENT_LOCAL`` keeps ``depth`` samples for late joiners
(its durability service), writers do not auto-dispose, and the payload is
XCDR1 (``CDR_LE``), the only representation rmw_cyclonedds' types allow and
the one rosbags' CDR reader and writer speak. Two differences, both on the
reader side, so that nothing is lost without a word:

* the reader keeps **all** samples up to ``depth`` waiting (``KEEP_ALL`` with
  ``max_samples = depth``) instead of the newest ``depth``: a sample that
  finds the queue full is *rejected*, which DDS counts (the
  ``SAMPLE_REJECTED`` status), where ``KEEP_LAST`` would overwrite the
  oldest without a trace. From a best-effort reader a rejected sample is
  lost; a reliable writer sends it again;
* the writer's ``USER_DATA`` carries ``typehash=RIHS01_...;`` when the type
  hash is known, as Iron and later rmw implementations put it there
  (``encode_type_hash_for_user_data_qos`` in rmw_dds_common); a reader
  carries it too.

``cyclonedds`` is imported only by the functions that build its objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Reliability = Literal["best_effort", "reliable"]
Durability = Literal["volatile", "transient_local"]

_RELIABILITY = ("best_effort", "reliable")
_DURABILITY = ("volatile", "transient_local")


@dataclass(frozen=True, slots=True)
class TopicQos:
    """Reliability, durability and history depth of one topic (a ROS 2 QoS profile)."""

    reliability: Reliability = "best_effort"
    durability: Durability = "volatile"
    depth: int = 5
    """Samples kept: a writer's history; a reader's queue of samples not yet taken."""

    def __post_init__(self) -> None:
        if self.reliability not in _RELIABILITY:
            raise ValueError(
                f"QoS reliability {self.reliability!r}: expected one of {', '.join(_RELIABILITY)}"
            )
        if self.durability not in _DURABILITY:
            raise ValueError(
                f"QoS durability {self.durability!r}: expected one of {', '.join(_DURABILITY)}"
            )
        if not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 1:
            raise ValueError(f"QoS depth must be an integer >= 1, got {self.depth!r}")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], base: TopicQos | None = None) -> TopicQos:
        """A profile from ``{"reliability": ..., "durability": ..., "depth": ...}`` (a TOML
        table); keys not given keep ``base``'s values (default :data:`SENSOR_DATA`)."""
        base = SENSOR_DATA if base is None else base
        unknown = sorted(set(raw) - {"reliability", "durability", "depth"})
        if unknown:
            raise ValueError(
                f"unknown QoS key {', '.join(map(repr, unknown))}: "
                "expected reliability, durability, depth"
            )
        return cls(
            raw.get("reliability", base.reliability),
            raw.get("durability", base.durability),
            raw.get("depth", base.depth),
        )

    def describe(self) -> str:
        """``best_effort, volatile, depth 5``."""
        return f"{self.reliability}, {self.durability}, depth {self.depth}"

    def reader_qos(self, type_hash: str | None = None) -> Any:
        """The ``cyclonedds.core.Qos`` of a data reader with this profile."""
        from cyclonedds.core import Policy, Qos

        return Qos(
            *self._common(Policy, type_hash),
            Policy.History.KeepAll,
            Policy.ResourceLimits(
                max_samples=self.depth, max_instances=-1, max_samples_per_instance=-1
            ),
        )

    def writer_qos(self, type_hash: str | None = None, max_blocking_ns: int | None = None) -> Any:
        """The ``cyclonedds.core.Qos`` of a data writer with this profile, as rmw_cyclonedds'.

        ``max_blocking_ns`` bounds how long a reliable writer's ``write`` waits for a
        slow reader (rmw_cyclonedds: forever); ``None`` keeps rmw's infinity."""
        from cyclonedds.core import Policy, Qos

        policies = [
            *self._common(Policy, type_hash, max_blocking_ns),
            Policy.History.KeepLast(self.depth),
            Policy.WriterDataLifecycle(autodispose=False),
        ]
        if self.durability == "transient_local":
            policies.append(
                Policy.DurabilityService(
                    cleanup_delay=0,
                    history=Policy.History.KeepLast(self.depth),
                    max_samples=-1,
                    max_instances=-1,
                    max_samples_per_instance=-1,
                )
            )
        return Qos(*policies)

    def _common(
        self, policy: Any, type_hash: str | None, max_blocking_ns: int | None = None
    ) -> list[Any]:
        infinity = 0x7FFFFFFFFFFFFFFF  # DDS_INFINITY: rmw_cyclonedds' reliable writers wait on
        blocking = infinity if max_blocking_ns is None else max_blocking_ns
        out = [
            policy.Reliability.BestEffort
            if self.reliability == "best_effort"
            else policy.Reliability.Reliable(max_blocking_time=blocking),
            policy.Durability.Volatile
            if self.durability == "volatile"
            else policy.Durability.TransientLocal,
            policy.DataRepresentation(use_cdrv0_representation=True),
        ]
        if type_hash:
            out.append(policy.Userdata(data=type_hash_user_data(type_hash)))
        return out


SENSOR_DATA = TopicQos("best_effort", "volatile", 5)
"""ROS 2's ``rmw_qos_profile_sensor_data``: best effort, volatile, keep last 5."""

DEFAULT = TopicQos("reliable", "volatile", 10)
"""ROS 2's ``rmw_qos_profile_default``: reliable, volatile, keep last 10."""


def type_hash_user_data(type_hash: str) -> bytes:
    """``RIHS01_ab...`` -> ``b"typehash=RIHS01_ab...;"``: an endpoint's ``USER_DATA`` in Iron+."""
    if not type_hash.startswith("RIHS01_"):
        raise ValueError(f"{type_hash!r} is not a RIHS01 type hash")
    return f"typehash={type_hash};".encode("ascii")


def type_hash_from_user_data(user_data: bytes | None) -> str | None:
    """The ``typehash`` value of an endpoint's ``USER_DATA`` (``key=value;`` pairs), if any."""
    if not user_data:
        return None
    for item in bytes(user_data).decode("utf-8", "replace").split(";"):
        key, sep, value = item.partition("=")
        if sep and key.strip() == "typehash":
            return value.strip() or None
    return None
