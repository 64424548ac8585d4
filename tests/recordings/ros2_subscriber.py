"""A ROS 2 subscriber without ROS, for the tests: what a ROS 2 node's middleware receives.

Run as a process: ``python ros2_subscriber.py --domain 17 --topic /cam=sensor_msgs/msg/Image
... --out FILE``. Written against ``cyclonedds`` directly; it shares no code
with ``adapters.ros`` or ``recordings``: DDS topic names after the ros2/design
article (``rt/<topic>``), the types written out by hand from the ROS 2 ``.msg``
files (``<pkg>::msg::dds_::<Type>_``, fields in order; those of
``tests/adapters/ros2/ros2_publisher.py`` plus the few below), reliable
volatile readers with XCDR1, as rmw_cyclonedds makes them. Cyclone checks
each writer's XTypes type information against these, so a publisher whose
type differs by a field does not match.

Each sample's serialised bytes are kept, not decoded here: they go to
``--out`` as ``<u16 topic length><u32 data length><i64 monotonic receive ns><topic><CDR>``
records, for the test to decode with rosbags. It prints ``ready`` once its
readers exist, stops after ``--count`` samples, ``--start-s`` seconds without a
first one or ``--idle-s`` seconds without another, and
prints ``got <n>``. With ``--stall`` it takes nothing (a subscriber that stopped
reading: its queue holds ``--depth`` samples) until SIGTERM.
"""

# No "from __future__ import annotations": cyclonedds resolves the field types at runtime.
# mypy: disable-error-code="type-arg, valid-type"
import argparse
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyclonedds.core import InstanceState, Policy, Qos, ReadCondition, SampleState, ViewState
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import byte, sequence
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.adapters.ros2 import ros2_publisher as hand  # the hand-written ROS 2 types

Header = hand.Header


@dataclass
class String(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str


@dataclass
class KeyValue(IdlStruct, typename="diagnostic_msgs::msg::dds_::KeyValue_"):
    key: str
    value: str


@dataclass
class DiagnosticStatus(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticStatus_"):
    level: byte  # ROS 2 "byte" is IDL octet
    name: str
    message: str
    hardware_id: str
    values: sequence[KeyValue]


@dataclass
class DiagnosticArray(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticArray_"):
    header: Header
    status: sequence[DiagnosticStatus]


TYPES: dict[str, type] = {
    **hand.TYPES,
    "std_msgs/msg/String": String,
    "diagnostic_msgs/msg/DiagnosticArray": DiagnosticArray,
}


class Raw:
    """What ``take`` returns here: the sample's serialised bytes, undecoded."""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _keep_bytes(cls: type, /, data: bytes, has_header: bool = True, **_: Any) -> Raw:
    return Raw(bytes(data))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--domain", type=int, required=True)
    ap.add_argument("--topic", action="append", required=True, help="TOPIC=pkg/msg/Type")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--count", type=int, default=1 << 30)
    ap.add_argument("--idle-s", type=float, default=1.0, help="after the first sample")
    ap.add_argument("--start-s", type=float, default=30.0, help="for the first sample")
    ap.add_argument("--stall", action="store_true")
    ap.add_argument("--depth", type=int, default=4)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    domain = Domain(args.domain, hand.LOOPBACK)
    participant = DomainParticipant(args.domain)
    qos = Qos(
        Policy.Reliability.Reliable(max_blocking_time=duration(seconds=1)),
        Policy.Durability.Volatile,
        Policy.History.KeepAll,
        Policy.ResourceLimits(
            max_samples=args.depth if args.stall else -1,
            max_instances=-1,
            max_samples_per_instance=-1,
        ),
        Policy.DataRepresentation(use_cdrv0_representation=True),
    )
    readers: list[tuple[str, DataReader]] = []
    for item in args.topic:
        topic, _, msgtype = item.partition("=")
        cls = TYPES[msgtype]
        setattr(cls, "deserialize", classmethod(_keep_bytes))  # noqa: B010 - a class patch
        readers.append((topic, DataReader(participant, Topic(participant, "rt" + topic, cls), qos)))
    print("ready", flush=True)
    if args.stall:
        time.sleep(3600)
        return 0
    from cyclonedds.core import WaitSet

    waitset = WaitSet(participant)
    any_sample = SampleState.Any | ViewState.Any | InstanceState.Any
    conditions = [ReadCondition(reader, any_sample) for _, reader in readers]
    for condition in conditions:
        waitset.attach(condition)
    out = open(args.out, "wb") if args.out else None  # noqa: SIM115 - closed below
    got = 0
    started = time.monotonic()
    last: float | None = None
    while got < args.count:
        now = time.monotonic()
        if (now - started > args.start_s) if last is None else (now - last > args.idle_s):
            break
        waitset.wait(duration(milliseconds=200))
        for topic, reader in readers:
            for sample in reader.take(N=256):
                if not isinstance(sample, Raw):
                    continue  # a sample-info-only notification (a writer left)
                got += 1
                last = time.monotonic()
                if out is not None:
                    name = topic.encode()
                    head = struct.pack("<HIq", len(name), len(sample.data), time.monotonic_ns())
                    out.write(head + name + sample.data)
    if out is not None:
        out.close()
    print(f"got {got}", flush=True)
    del domain
    return 0


if __name__ == "__main__":
    sys.exit(main())
