"""adapters/ros/_compat_cyclonedds.py against the installed cyclonedds, on a loopback domain:
the release is one it was checked against, and each internal does what the module says."""

from __future__ import annotations

import time

from adapters.ros import (
    Participant,
    TopicQos,
    loopback_config,
    message_class,
    raw_sample,
    type_store,
    wait_matched,
)
from adapters.ros import _compat_cyclonedds as compat
from adapters.ros._idltypes import sample_bytes
from tests.adapters.ros2.ros2_helpers import free_domain
from tests.compat import assert_checked_release


def test_cyclonedds_is_a_release_the_compat_module_was_checked_against() -> None:
    assert_checked_release(compat)


def test_a_policy_s_kind_is_its_scope() -> None:
    from cyclonedds.core import Policy

    assert compat.policy_scope(Policy.Reliability.Reliable(0)) == "Reliability"
    assert compat.policy_scope(Policy.Userdata(b"x")) == "Userdata"
    assert compat.policy_scope(Policy.Durability.Volatile) == "Durability"
    assert compat.policy_scope(object()) is None


def test_raw_cdr_goes_through_dds_unchanged_and_entities_delete_at_once() -> None:
    """``serialize``/``deserialize`` replaced on the sample class: the bytes written are the
    bytes taken; the writer's acknowledgements are waited for; a deleted entity is gone from
    cyclonedds' table at once, and a second delete does nothing."""
    from cyclonedds.core import Entity, WaitSet
    from cyclonedds.sub import DataReader

    domain, config = free_domain(), loopback_config()
    store = type_store("jazzy")
    T = store.types
    msg = T["std_msgs/msg/String"](data="hello over DDS")
    cdr = bytes(store.serialize_cdr(msg, "std_msgs/msg/String"))
    qos = TopicQos("reliable", "transient_local", 10)
    with Participant(domain, config) as pub, Participant(domain, config) as sub:
        cls = message_class(store, "std_msgs/msg/String")
        writer = pub.writer("/chatter", cls, qos)
        reader = sub.reader("/chatter", cls, qos)
        assert wait_matched(writer, 1, 20.0)
        writer.write(raw_sample(cls, cdr))
        assert compat.wait_for_acks(writer, 10_000_000_000)
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got = [sample_bytes(s) for s in reader.take(N=10)]
            time.sleep(0.01)
        assert got == [cdr]
        assert store.deserialize_cdr(got[0], "std_msgs/msg/String").data == "hello over DDS"
        assert isinstance(reader, DataReader)
        waitset = WaitSet(sub.dds)
        ref = waitset._ref
        assert ref in Entity._entities
        compat.delete(waitset)
        assert ref not in Entity._entities
        compat.delete(waitset)  # nothing the second time


def test_an_acknowledgement_wait_that_fails_inside_cyclonedds_answers_false() -> None:
    class Timing:
        def wait_for_acks(self, timeout: int) -> bool:
            raise AttributeError("'DDSException' object has no attribute 'code'")

    assert compat.wait_for_acks(Timing(), 0) is False
