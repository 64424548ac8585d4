"""Property tests: no input bytes make the Velodyne packet parser raise, and every
packet is either accepted or counted as rejected."""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lidar_testdata import VLP16, data_packets

from adapters.lidar import HDL_32E, MODELS, VLP_16, SweepAssembler, VelodyneModel
from adapters.lidar._velodyne_packets import PACKET_SIZE


@functools.cache
def real_packets() -> list[bytes]:
    return [payload for _t, payload in data_packets(VLP16)[:200]]


def check(model: VelodyneModel, payloads: list[bytes], *, batched: bool = False) -> None:
    assembler = SweepAssembler(model)
    sweeps = []
    if batched:
        sweeps += assembler.push_many(payloads)
    for payload in [] if batched else payloads:
        sweeps += assembler.push(payload, 0)
    sweeps += assembler.flush()
    assert assembler.accepted + sum(assembler.rejected.values()) == len(payloads)
    blocks = 0
    for sweep in sweeps:
        points = sweep.decode(model)
        assert len(points) <= 32 * 12 * len(sweep.packets)
        blocks += (len(sweep.packets) - 1) * 12 + sweep.end_block - sweep.first_block
    assert blocks == 12 * assembler.accepted  # every accepted block is in exactly one sweep
    assert sum(s.units for s in sweeps) == assembler.accepted  # and every packet, once


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=1300), max_size=8), st.booleans())
def test_random_bytes_never_raise(payloads: list[bytes], hdl: bool) -> None:
    check(HDL_32E if hdl else VLP_16, payloads)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.binary(min_size=PACKET_SIZE, max_size=PACKET_SIZE), max_size=6),
    st.sampled_from(sorted(MODELS)),
    st.booleans(),
)
def test_random_packets_of_the_right_size_never_raise(
    payloads: list[bytes], model: str, batched: bool
) -> None:
    check(MODELS[model], payloads, batched=batched)


mutation = st.tuples(st.integers(0, PACKET_SIZE - 1), st.integers(0, 255))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 180),
    st.integers(1, 20),
    st.lists(st.tuples(st.integers(0, 19), st.lists(mutation, min_size=1, max_size=6))),
    st.sampled_from(["flip", "truncate", "extend"]),
)
def test_mutated_real_packets_never_raise(
    start: int, count: int, edits: list[tuple[int, list[tuple[int, int]]]], how: str
) -> None:
    payloads = [bytearray(p) for p in real_packets()[start : start + count]]
    for index, changes in edits:
        if index >= len(payloads):
            continue
        if how == "flip":
            for offset, value in changes:
                payloads[index][offset] = value
        elif how == "truncate":
            del payloads[index][changes[0][0] :]
        else:
            payloads[index] += bytes(v for _, v in changes)
    check(VLP_16, [bytes(p) for p in payloads])


def test_each_kind_of_bad_packet_is_counted_by_reason() -> None:
    good = real_packets()[0]
    bad_flag = good[:100] + b"\x00\xee" + good[102:]
    bad_azimuth = good[:2] + (36001).to_bytes(2, "little") + good[4:]
    bad_stamp = good[:1200] + (3_600_000_000).to_bytes(4, "little") + good[1204:]
    bad_mode = good[:1204] + b"\x42" + good[1205:]
    assembler = SweepAssembler(VLP_16)
    for payload in [good[:-1], good + b"\x00", bad_flag, bad_azimuth, bad_stamp, bad_mode]:
        assert assembler.push(payload) == []
    assert assembler.rejected == {
        "bad_length": 2,
        "bad_block_flag": 1,
        "bad_azimuth": 1,
        "bad_timestamp": 1,
        "bad_return_mode": 1,
    }
    assert assembler.accepted == 0
    assert assembler.last_error == (
        "packet 5: return mode 0x42 is unknown (expected 0x37 strongest, 0x38 last or 0x39 dual)"
    )
