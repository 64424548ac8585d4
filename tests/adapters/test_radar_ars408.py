"""RadarSource(model="ars408"): the ARS408's cluster and object lists from CAN frames,
decoded with the packaged DBC through the CAN adapter (python-can + cantools), against
an independent byte-mask reader compiled with g++ (tests/data/radar/ars408_reference.cpp,
the bit layouts tier4/ars408_driver and Apollo's conti_radar read) fed the same frames.

No public ARS408 CAN capture exists: the frames are made here, with every byte random
(hypothesis), so each signal spans its whole range.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import can
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters import RadarSource
from adapters.errors import DecodeError
from adapters.radar import ARS408_CLUSTER_DTYPE, ARS408_OBJECT_DTYPE
from adapters.radar._ars408 import ANGLE_RMS, LINEAR_RMS, PROB_OF_EXIST
from fusion._frames import Frame
from fusion.errors import ConfigError
from tests.adapters.ars408_testdata import (
    Cycle,
    compile_reference,
    cycle_messages,
    run_reference,
    write_log,
)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_reference(tmp_path_factory.mktemp("ars408"))


def decode(log: Path, **kw: Any) -> tuple[list[Frame], RadarSource]:
    source = RadarSource(log=log, model="ars408", name="front", **kw)

    async def run() -> list[Frame]:
        return [f async for f in source.frames()]

    return anyio.run(run), source


CLUSTER_FIELDS = {"x": "x", "y": "y", "vx": "vx", "vy": "vy", "rcs": "rcs", "id": "id",
                  "dyn_prop": "dyn_prop"}  # fmt: skip
RMS = {"x_rms", "y_rms", "vx_rms", "vy_rms", "ax_rms", "ay_rms"}


def check_row(row: np.void, ref: dict[str, float], quality: dict[str, float] | None) -> None:
    for name in CLUSTER_FIELDS:
        assert float(row[name]) == pytest.approx(ref[name], abs=1e-4), name
    x, y, vx, vy = ref["x"], ref["y"], ref["vx"], ref["vy"]
    r = math.hypot(x, y)
    assert float(row["range"]) == pytest.approx(r, rel=1e-6, abs=1e-4)
    assert float(row["azimuth"]) == pytest.approx(math.atan2(y, x), abs=1e-6)
    rate = (x * vx + y * vy) / r if r > 0 else 0.0
    assert float(row["range_rate"]) == pytest.approx(rate, rel=1e-5, abs=1e-4)
    assert row["z"] == 0
    if quality is None:
        assert not row["quality"]
        assert math.isnan(float(row["x_rms"]))
        return
    assert row["quality"]
    for name, code in quality.items():
        if name in RMS:
            assert float(row[name]) == pytest.approx(LINEAR_RMS[int(code)], rel=1e-6), name
        elif name == "orientation_rms":
            assert float(row[name]) == pytest.approx(ANGLE_RMS[int(code)], rel=1e-6)
        elif name == "prob_exist":
            assert float(row[name]) == pytest.approx(PROB_OF_EXIST[int(code)], rel=1e-6)
        elif name != "id":
            assert int(row[name]) == int(code), name


payload = st.binary(min_size=8, max_size=8)
cluster = st.tuples(payload, st.one_of(st.none(), st.binary(min_size=5, max_size=5)))
obj = st.tuples(
    payload,
    st.one_of(st.none(), st.binary(min_size=7, max_size=7)),
    st.one_of(st.none(), payload),
)
cycles = st.lists(
    st.builds(
        Cycle,
        counter=st.integers(0, 0xFFFF),
        clusters=st.lists(cluster, max_size=12),
        objects=st.lists(obj, max_size=8),
        state=st.one_of(st.none(), payload),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cycles=cycles)
def test_every_field_equals_the_reference_reader(
    reference: Path, tmp_path_factory: pytest.TempPathFactory, cycles: list[Cycle]
) -> None:
    messages: list[can.Message] = []
    for k, cycle in enumerate(cycles):
        messages += cycle_messages(cycle, 1000.0 + 0.072 * k)
    log = write_log(tmp_path_factory.mktemp("log") / "ars408.log", messages)
    frames, source = decode(log)
    ref = run_reference(reference, messages)
    assert len(ref) == len(messages)
    clusters = [f for f in frames if f.sensor == "front_detections"]
    objects = [f for f in frames if f.sensor == "front_objects"]
    assert len(clusters) == len(objects) == len(cycles)
    at = 0
    for cycle, c_frame, o_frame in zip(cycles, clusters, objects, strict=True):
        lines = ref[at : at + len(cycle_messages(cycle, 0.0))]
        at += len(lines)
        by_id: dict[int, list[dict[str, float]]] = {}
        for can_id, fields in lines:
            by_id.setdefault(can_id, []).append(fields)
        (status,) = by_id[0x600]
        assert c_frame.meta["near"] == status["near"] == len(cycle.clusters)
        assert c_frame.meta["measurement_counter"] == status["counter"] == cycle.counter
        (o_status,) = by_id[0x60A]
        assert o_frame.meta["measurement_counter"] == o_status["counter"]
        assert c_frame.data.dtype == ARS408_CLUSTER_DTYPE
        assert o_frame.data.dtype == ARS408_OBJECT_DTYPE
        assert c_frame.t_sensor == round(
            cycle_messages(cycle, 1000.0 + 0.072 * clusters.index(c_frame))[
                1 if cycle.state else 0
            ].timestamp
            * 1e9
        )
        quality = {int(q["id"]): q for q in by_id.get(0x702, [])}
        for row, general in zip(c_frame.data, by_id.get(0x701, []), strict=True):
            check_row(row, general, quality.get(int(general["id"])))
        o_quality = {int(q["id"]): q for q in by_id.get(0x60C, [])}
        extended = {int(e["id"]): e for e in by_id.get(0x60D, [])}
        for row, general in zip(o_frame.data, by_id.get(0x60B, []), strict=True):
            check_row(row, general, o_quality.get(int(general["id"])))
            e = extended.get(int(general["id"]))
            assert bool(row["extended"]) == (e is not None)
            if e is not None:
                for name in ("ax", "ay", "orientation", "length", "width", "classification"):
                    assert float(row[name]) == pytest.approx(e[name], abs=1e-4), name
        if cycle.state is not None:
            (state,) = by_id[0x201]
            got = c_frame.meta["radar_state"]
            assert got["RadarState_MaxDistanceCfg"] == state["max_distance"]
            assert got["RadarState_SensorID"] == state["sensor_id"]
            assert got["RadarState_OutputTypeCfg"] == state["output_type"]
            assert got["RadarState_SendQualityCfg"] == state["send_quality"]
            assert got["RadarState_SendExtInfoCfg"] == state["send_ext"]
            assert got["RadarState_RCS_Threshold"] == state["rcs_threshold"]
    ledgers = source.ledgers()
    for stats in ledgers.values():
        assert stats.unit == "can_frame"
        assert stats.received == stats.emitted + sum(stats.lost.values())
    states = sum(c.state is not None for c in cycles)
    assert ledgers["front_detections"].lost == ({"unused": states} if states else {})
    assert ledgers["front_objects"].lost == {}
    assert sum(s.received for s in ledgers.values()) == len(messages)


def test_losses_are_counted_by_reason(tmp_path: Path) -> None:
    good = bytes(range(8))
    first = Cycle(1, clusters=[(good, None)] * 2, objects=[(good, good[:7], good)])
    msgs = cycle_messages(first, 10.0)
    at = next(i for i, m in enumerate(msgs) if m.arbitration_id == 0x60B)
    msgs.insert(at + 1, msgs[at])  # object 0 twice in the first list
    # before the first status: a general frame of a list not yet announced
    early = can.Message(timestamp=9.9, arbitration_id=0x701, data=good, is_extended_id=False)
    second = cycle_messages(Cycle(2, clusters=[(good, None)] * 3), 10.07)
    second = [m for m in second if not (m.arbitration_id == 0x701 and m.data[0] == 2)]  # 2 of 3
    extra = [
        can.Message(timestamp=10.08, arbitration_id=0x123, data=b"\x01", is_extended_id=False),
        can.Message(timestamp=10.081, arbitration_id=0x60C, data=bytes([9]) + good[1:7],
                    is_extended_id=False),  # quality of object 9: not in the list
        can.Message(timestamp=10.082, arbitration_id=0x60B, data=good[:5], is_extended_id=False),
        can.Message(timestamp=10.083, arbitration_id=0x60B, data=bytes([0]) + good[1:],
                    is_extended_id=False),  # an object in a list that announced none
    ]  # fmt: skip
    log = write_log(tmp_path / "lossy.log", [early, *msgs, *second, *extra])
    frames, source = decode(log)
    assert [(f.sensor, len(f.data)) for f in frames] == [
        ("front_detections", 2),
        ("front_objects", 1),
    ]
    ledgers = source.ledgers()
    detections, objects = ledgers["front_detections"], ledgers["front_objects"]
    assert detections.lost == {"incomplete": 1 + 3, "unknown_id": 1}  # early; 1 status + 2
    # undecodable: the duplicate, and the second list (its status and 1 of 0 objects)
    assert objects.lost == {"unknown_id": 1, "bad_length": 1, "undecodable": 1 + 2}
    assert objects.emitted == 4
    assert detections.emitted == 3
    for stats in ledgers.values():
        assert stats.received == stats.emitted + sum(stats.lost.values())
    assert sum(s.received for s in ledgers.values()) == 1 + len(msgs) + len(second) + 4
    messages = " ".join(m for k in source.error_messages.values() for m in k)
    assert "2 of the 3 entries" in messages
    assert "id 9 is not an entry of the list" in messages
    assert "id 0 twice in one list" in messages
    assert "1 of the 0 entries" in messages


def test_a_log_without_any_list_says_what_it_held(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "none.log",
        [can.Message(timestamp=1.0, arbitration_id=0x123, data=b"\x00", is_extended_id=False)],
    )
    with pytest.raises(DecodeError, match=r"1 CAN frame\(s\) gave no ARS408 list \(1 unknown_id"):
        decode(log)


def test_inputs_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"log= .* or interface="):
        RadarSource(model="ars408")
    with pytest.raises(ConfigError, match="pcap= is not an input of the ars408"):
        RadarSource("x.pcap", model="ars408", interface="virtual")
    with pytest.raises(ConfigError, match="log= is not an input of the ars548"):
        RadarSource(port=0, log="x.log")
