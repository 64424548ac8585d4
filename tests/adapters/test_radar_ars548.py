"""The ARS548 decoder and RadarSource against nebula's decoder ground truth (real packets).

The reference is tier4/nebula's own unit-test output: the YAML of the detection
and object lists its C++ decoder made from the packets of the bag beside it
(../shared/data/real/radar/ars548, PROVENANCE.md there). Every field of every
row is compared; the packets reach our decoder from the bag (our NebulaPackets
reader), from a pcap and a pcapng written around the same payloads, and over
UDP on loopback.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.radar import DETECTION_DTYPE, OBJECT_DTYPE, RadarSource, _ars548, _nebula
from fusion._frames import Frame
from fusion.errors import ConfigError
from tests.adapters.lidar_testdata import write_pcap
from tests.adapters.radar_testdata import (
    BAG,
    DETECTION_TRUTH,
    OBJECT_TRUTH,
    bag_packets,
    nebula_typestore,
    raw_messages,
    truth,
)

PORT = _ars548.DEFAULT_PORT

# nebula's field name -> ours (the YAML's names are continental_msgs')
DETECTION_FIELDS = {
    "azimuth_angle": "azimuth",
    "azimuth_angle_std": "azimuth_std",
    "elevation_angle": "elevation",
    "elevation_angle_std": "elevation_std",
    "range": "range",
    "range_std": "range_std",
    "range_rate": "range_rate",
    "range_rate_std": "range_rate_std",
    "rcs": "rcs",
    "measurement_id": "measurement_id",
    "raw_positive_predictive_value": "positive_predictive_value",
    "classification": "classification",
    "raw_multi_target_probability": "multi_target_probability",
    "object_id": "object_id",
    "raw_ambiguity_flag": "ambiguity_flag",
}
INVALID_BITS = [
    "invalid_distance",
    "invalid_distance_std",
    "invalid_azimuth",
    "invalid_azimuth_std",
    "invalid_elevation",
    "invalid_elevation_std",
    "invalid_range_rate",
    "invalid_range_rate_std",
]
OBJECT_FIELDS = {
    "object_id": "id",
    "age": "age",
    "status_measurement": "status_measurement",
    "status_movement": "status_movement",
    "position_reference": "position_reference",
    "position.x": "x",
    "position.y": "y",
    "position.z": "z",
    "position_std.x": "x_std",
    "position_std.y": "y_std",
    "position_std.z": "z_std",
    "position_covariance_xy": "position_covariance_xy",
    "orientation": "orientation",
    "orientation_std": "orientation_std",
    "raw_existence_probability": "existence_probability",
    **{f"raw_classification_{c}": f"class_{c}" for c in _ars548.CLASSES},
    "absolute_velocity.x": "abs_vel_x",
    "absolute_velocity.y": "abs_vel_y",
    "absolute_velocity_std.x": "abs_vel_x_std",
    "absolute_velocity_std.y": "abs_vel_y_std",
    "absolute_velocity_covariance_xy": "abs_vel_covariance_xy",
    # nebula's decoder (continental_ars548_decoder.cpp at 606ac41f) writes the object's
    # relative *acceleration* into relative_velocity, after the relative velocity, and
    # never fills relative_acceleration: its ground truth holds the acceleration there
    "relative_velocity.x": "rel_accel_x",
    "relative_velocity.y": "rel_accel_y",
    "relative_velocity_std.x": "rel_accel_x_std",
    "relative_velocity_std.y": "rel_accel_y_std",
    "relative_velocity_covariance_xy": "rel_accel_covariance_xy",
    "absolute_acceleration.x": "abs_accel_x",
    "absolute_acceleration.y": "abs_accel_y",
    "absolute_acceleration_std.x": "abs_accel_x_std",
    "absolute_acceleration_std.y": "abs_accel_y_std",
    "absolute_acceleration_covariance_xy": "abs_accel_covariance_xy",
    "orientation_rate_mean": "orientation_rate",
    "orientation_rate_std": "orientation_rate_std",
    "shape_length_edge_mean": "length",
    "shape_width_edge_mean": "width",
}
UNSET_BY_NEBULA = [  # always 0 in nebula's message (z of 2-D vectors, the field it never sets)
    "absolute_velocity.z",
    "relative_velocity.z",
    "absolute_acceleration.z",
    "relative_acceleration.x",
    "relative_acceleration.y",
    "relative_acceleration.z",
    "relative_acceleration_std.x",
    "relative_acceleration_std.y",
    "relative_acceleration_covariance_xy",
]


def _get(row: dict[str, Any], dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        value = value[part]
    return value


def _stamp(doc: dict[str, Any]) -> int:
    return int(doc["header"]["stamp"]["sec"]) * 1_000_000_000 + int(
        doc["header"]["stamp"]["nanosec"]
    )


def _close(ours: Any, theirs: Any, what: str) -> None:
    """Equal as the YAML writes it: integers exactly, floats to the 6 significant digits
    rosidl's ``to_yaml`` prints of each float32 (C++ stream precision 6)."""
    if isinstance(theirs, (bool, int)):
        assert int(ours) == int(theirs), (what, ours, theirs)
    else:
        assert float(f"{float(ours):.6g}") == float(theirs), (what, ours, theirs)


def check_detections(frame: Frame, tick: int = 1) -> None:
    """``tick``: the resolution of the arrival stamps (a pcap's microseconds: 1000)."""
    doc = truth(DETECTION_TRUTH)
    assert frame.t_arrival == _stamp(doc) // tick * tick
    rows = frame.data
    assert rows.dtype == DETECTION_DTYPE
    assert len(rows) == len(doc["detections"]) == 308
    for i, det in enumerate(doc["detections"]):
        for theirs, ours in DETECTION_FIELDS.items():
            _close(rows[ours][i], det[theirs], f"detection {i} {theirs}")
        for bit, name in enumerate(INVALID_BITS):
            assert bool(rows["invalid_flags"][i] & (1 << bit)) == det[name], (i, name)
    meta = frame.meta
    assert meta["sync_status"] == doc["stamp_sync_status"]
    for axis in "xyz":
        _close(meta[f"origin_{axis}"], doc["origin_pos"][axis], f"origin {axis}")
    for key in ("origin_pitch", "origin_pitch_std", "origin_yaw", "origin_yaw_std"):
        _close(meta[key], doc[key], key)
    _close(meta["velocity_min"], doc["ambiguity_free_velocity_min"], "velocity min")
    _close(meta["velocity_max"], doc["ambiguity_free_velocity_max"], "velocity max")
    _close(meta["alignment_azimuth"], doc["alignment_azimuth_correction"], "alignment az")
    _close(meta["alignment_elevation"], doc["alignment_elevation_correction"], "alignment el")
    assert meta["alignment_status"] == doc["alignment_status"]
    # x, y, z are the spherical coordinates turned Cartesian (as nebula's point cloud does)
    r, az, el = (rows[k].astype(np.float64) for k in ("range", "azimuth", "elevation"))
    np.testing.assert_allclose(rows["x"], r * np.cos(el) * np.cos(az), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rows["y"], r * np.cos(el) * np.sin(az), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rows["z"], r * np.sin(el), rtol=1e-6, atol=1e-6)


def check_objects(frame: Frame, tick: int = 1) -> None:
    doc = truth(OBJECT_TRUTH)
    assert frame.t_arrival == _stamp(doc) // tick * tick
    rows = frame.data
    assert rows.dtype == OBJECT_DTYPE
    assert len(rows) == len(doc["objects"]) == 50
    assert frame.meta["sync_status"] == doc["stamp_sync_status"]
    for i, obj in enumerate(doc["objects"]):
        for theirs, ours in OBJECT_FIELDS.items():
            _close(rows[ours][i], _get(obj, theirs), f"object {i} {theirs}")
        for theirs in UNSET_BY_NEBULA:
            assert _get(obj, theirs) == 0, (i, theirs)
        classes = [obj[f"raw_classification_{c}"] for c in _ars548.CLASSES]
        assert rows["classification"][i] == int(np.argmax(classes))


async def _collect(source: RadarSource) -> list[Frame]:
    with anyio.fail_after(30):
        return [f async for f in source.frames()]


def _by_sensor(frames: list[Frame]) -> dict[str, list[Frame]]:
    out: dict[str, list[Frame]] = {}
    for f in frames:
        out.setdefault(f.sensor, []).append(f)
    return out


# -- the decoder on the real packets ------------------------------------------------------


def test_bag_lists_equal_nebulas_ground_truth_field_by_field() -> None:
    source = RadarSource(bag=BAG, name="front")
    frames = _by_sensor(anyio.run(_collect, source))
    assert [f.sensor for f in frames["front_detections"]] == ["front_detections"]
    check_detections(frames["front_detections"][0])
    check_objects(frames["front_objects"][0])
    # the lists' own stamp (the sensor's clock, PTP-synchronised: sync_status 1)
    sensor_time = 1708578203_955760000
    assert frames["front_detections"][0].t_sensor == sensor_time
    assert frames["front_objects"][0].t_sensor == sensor_time
    ledgers = source.ledgers()
    for sensor in ("front_detections", "front_objects"):
        stats = ledgers[sensor]
        assert (stats.received, stats.emitted, stats.frames, stats.lost) == (1, 1, 1, {})


def test_nebula_packets_reader_equals_rosbags_with_nebulas_definitions() -> None:
    store = nebula_typestore()
    for raw in raw_messages():
        ours = _nebula.parse(raw)
        theirs = store.deserialize_cdr(raw, _nebula.MSGTYPE)
        assert ours.frame_id == theirs.header.frame_id == "front_center/radar_link"
        assert ours.stamp == theirs.header.stamp.sec * 10**9 + theirs.header.stamp.nanosec
        assert [(t, bytes(d)) for t, d in ours.packets] == [
            (p.stamp.sec * 10**9 + p.stamp.nanosec, bytes(p.data)) for p in theirs.packets
        ]


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_capture_of_the_packets_decodes_as_the_bag_and_counts_every_other_datagram(
    tmp_path: Path, fmt: str
) -> None:
    packets = bag_packets()  # read by rosbags, not by us
    status = struct.pack(">HHI", 0, _ars548.STATUS_METHOD, 76) + bytes(76)
    unknown = struct.pack(">HHI", 0, 777, 4) + bytes(4)
    cut = packets[1][1][:20_000]  # a detection list cut short
    records = [(t, PORT, payload) for t, payload in packets]
    records += [(packets[-1][0] + 1000 * i, PORT, p) for i, p in enumerate([status, unknown, cut])]
    records.append((packets[-1][0] + 9000, 2368, b"\x00" * 1206))  # another device's port
    path = tmp_path / f"ars548.{fmt}"
    if fmt == "pcap":
        write_pcap(path, records)
    else:
        _write_pcapng(path, records)
    source = RadarSource(path, name="radar")
    frames = _by_sensor(anyio.run(_collect, source))
    check_detections(frames["radar_detections"][0], tick=1000)  # microsecond captures
    check_objects(frames["radar_objects"][0], tick=1000)
    det = source.ledgers()["radar_detections"]
    assert det.frames == 1
    assert det.lost == {"unused": 1, "unknown_id": 1, "bad_length": 1, "wrong_port": 1}
    assert det.received == det.emitted + det.lost_total == 5
    assert (
        source.error_messages["bad_length"]
        .most_common(1)[0][0]
        .endswith("detection list of 20,000 bytes (SOME/IP length 35,328); expected 35,336 bytes")
    )


def _write_pcapng(path: Path, records: list[tuple[int, int, bytes]]) -> None:
    """The same records as a pcapng (section, one Ethernet interface, enhanced packets)."""

    def block(kind: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        size = 12 + len(body)
        return struct.pack("<II", kind, size) + body + struct.pack("<I", size)

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    out.append(block(1, struct.pack("<HHI", 1, 0, 65535)))  # microsecond stamps
    for t_ns, port, payload in records:
        udp = struct.pack(">HHHH", port, port, 8 + len(payload), 0) + payload
        ip = struct.pack(
            ">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
            bytes([10, 13, 1, 114]), bytes([224, 0, 2, 2]),
        )  # fmt: skip
        frame = b"\x01\x00\x5e\x00\x02\x02" + b"\x00" * 6 + b"\x08\x00" + ip + udp
        us = t_ns // 1000
        head = struct.pack("<IIIII", 0, us >> 32, us & 0xFFFFFFFF, len(frame), len(frame))
        out.append(block(6, head + frame))
    path.write_bytes(b"".join(out))


def test_a_second_sender_in_a_capture_is_counted_foreign(tmp_path: Path) -> None:
    packets = bag_packets()
    path = tmp_path / "two.pcap"
    write_pcap(path, [(t, PORT, p) for t, p in packets])
    data = bytearray(path.read_bytes())
    # a copy of the object list from another address: the pcap writer's source is
    # 192.168.1.201, this record's is 192.168.1.202
    write_pcap(tmp_path / "one.pcap", [(packets[0][0] + 1, PORT, packets[0][1])])
    extra = bytearray((tmp_path / "one.pcap").read_bytes()[24:])
    extra[16 + 14 + 15] = 202
    path.write_bytes(bytes(data + extra))
    source = RadarSource(path)
    frames = anyio.run(_collect, source)
    assert len(frames) == 2
    assert source.ledgers()["radar_detections"].lost == {"foreign_sender": 1}
    assert "192.168.1.202" in source.error_messages["foreign_sender"].most_common(1)[0][0]


def test_a_capture_with_nothing_of_the_radar_says_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "lidar.pcap"
    write_pcap(path, [(1_000, 2368, b"\x00" * 1206)])
    with pytest.raises(Exception, match=r"1 datagram\(s\) gave no radar list \(1 wrong_port\)"):
        anyio.run(_collect, RadarSource(path))


def test_options_are_checked_when_the_source_is_made(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"exactly one of pcap= .* or port= .*, got none"):
        RadarSource()
    with pytest.raises(ConfigError, match="got pcap, port"):
        RadarSource(tmp_path, port=0)
    with pytest.raises(ConfigError, match="radar model 'ars999' is not one of ars548"):
        RadarSource(port=0, model="ars999")
    with pytest.raises(Exception, match="does not exist"):
        RadarSource(tmp_path / "missing.pcap")


def test_a_bag_without_nebula_packets_is_refused_with_its_topics() -> None:
    bags = Path(BAG).parents[2] / "bags"
    bag = next(p for p in sorted(bags.rglob("*.db3")))  # any real ROS 2 bag of other topics
    with pytest.raises(Exception, match="expected one topic of type nebula_msgs/msg/NebulaPackets"):
        anyio.run(_collect, RadarSource(bag=bag.parent if bag.parent != bags else bag))


# -- live over UDP -----------------------------------------------------------------------


async def test_live_datagrams_decode_as_the_file_and_bad_ones_are_counted() -> None:
    packets = bag_packets()
    source = RadarSource(port=0, host="127.0.0.1", sender="127.0.0.1", name="radar")
    got: list[Frame] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:

            async def collect() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == 2:
                        tg.cancel_scope.cancel()

            tg.start_soon(collect)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
                tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
                tx.sendto(b"\x00\x01", ("127.0.0.1", port))  # too short: bad_length
                for _t, payload in packets:
                    tx.sendto(payload, ("127.0.0.1", port))
    frames = _by_sensor(got)
    for frame in got:
        assert frame.t_arrival is not None
    obj, det = frames["radar_objects"][0], frames["radar_detections"][0]
    file_frames = _by_sensor(await _collect(RadarSource(bag=BAG)))
    for live, offline in (
        (obj, file_frames["radar_objects"][0]),
        (det, file_frames["radar_detections"][0]),
    ):
        assert live.t_sensor == offline.t_sensor
        assert live.data.tobytes() == offline.data.tobytes()
    assert source.ledgers()["radar_detections"].lost == {"bad_length": 1}


async def test_live_lists_sent_to_a_multicast_group_are_received() -> None:
    import random

    group = f"239.{random.randint(1, 250)}.{random.randint(1, 250)}.{random.randint(1, 250)}"
    packets = bag_packets()
    source = RadarSource(port=0, group=group, name="radar")
    got: list[Frame] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:

            async def collect() -> None:
                async for frame in source.frames():
                    got.append(frame)
                    if len(got) == 2:
                        tg.cancel_scope.cancel()

            tg.start_soon(collect)
            port = await source.wait_listening()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
                tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
                tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                for _t, payload in packets:
                    tx.sendto(payload, (group, port))
    assert sorted(f.sensor for f in got) == ["radar_detections", "radar_objects"]


def test_a_multicast_group_must_be_one() -> None:
    from adapters.net._udp import UdpReceiver

    with pytest.raises(ConfigError, match=r"'10\.0\.0\.1' is not a multicast address"):
        UdpReceiver(RadarSource(port=0), group="10.0.0.1")


# -- any bytes ---------------------------------------------------------------------------

REAL = [p for _t, p in bag_packets()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_any_bytes_decode_or_are_rejected_with_a_reason(data: bytes) -> None:
    result = _ars548.decode(data)
    assert isinstance(result, (_ars548.Scan, _ars548.Rejected))
    if isinstance(result, _ars548.Rejected):
        assert result.reason in {"bad_length", "unknown_id", "undecodable", "bad_time", "unused"}
        assert result.message


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(REAL))), st.integers(0, 40_000))
def test_a_truncated_list_is_counted_bad_length(which: int, cut: int) -> None:
    # an index, not the packet: a failing example's report stays short (a 35 kB
    # bytes repr makes hypothesis warn, and the suite's warnings are errors)
    packet = REAL[which]
    cut = min(cut, len(packet) - 1)
    result = _ars548.decode(packet[:cut])
    assert isinstance(result, _ars548.Rejected)
    assert result.reason == "bad_length"


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(range(len(REAL))),
    st.lists(st.tuples(st.integers(0, 40_000), st.integers(0, 255)), max_size=8),
)
def test_a_damaged_list_of_the_right_size_never_crashes(
    which: int, edits: list[tuple[int, int]]
) -> None:
    data = bytearray(REAL[which])
    for at, value in edits:
        data[at % len(data)] = value
    result = _ars548.decode(bytes(data))
    if isinstance(result, _ars548.Scan):
        dtype = DETECTION_DTYPE if result.kind == "detections" else OBJECT_DTYPE
        assert result.data.dtype == dtype
        assert len(result.data) <= (_ars548.MAX_DETECTIONS if result.kind == "detections" else 200)
    else:
        assert result.reason in {"bad_length", "unknown_id", "undecodable", "bad_time", "unused"}


def test_a_damaged_float_that_reads_as_a_signalling_nan_is_a_nan_point() -> None:
    # Found by the damaged-list property: byte 4501 of the capture's detection list set
    # to 127 makes detection 100's azimuth 0x7f843e36, a signalling NaN, and widening it
    # to float64 raised numpy's "invalid value encountered in cast" (an error here).
    packet = next(p for p in REAL if len(p) == _ars548.DETECTION_LIST_SIZE)
    list_fields, fields = _ars548.WIRE_DETECTION_LIST.fields, _ars548.WIRE_DETECTION.fields
    assert list_fields is not None
    assert fields is not None
    detections = list_fields["detections"][1]
    size = _ars548.WIRE_DETECTION.itemsize
    data = bytearray(packet)
    data[4501] = 127
    assert data[4501:4505] == bytes.fromhex("7f843e36")
    assert (4501 - detections) // size == 100
    for field in ("range", "elevation"):  # the other two widened floats, on detection 7
        at = detections + 7 * size + fields[field][1]
        data[at : at + 4] = bytes.fromhex("ff800001")
    result = _ars548.decode(bytes(data))
    assert isinstance(result, _ars548.Scan)
    assert result.data["azimuth"].size == 308
    assert np.isnan(result.data["azimuth"][100])
    for point in (7, 100):
        assert np.isnan(result.data[["x", "y"]][point].tolist()).all()
    assert np.isnan(result.data["z"][7])
    intact = np.ones(308, bool)
    intact[[7, 100]] = False
    assert np.isfinite(result.data["x"][intact]).all()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_are_a_nebula_message_or_malformed(data: bytes) -> None:
    try:
        _nebula.parse(data)
    except _nebula.Malformed as err:
        message = str(err)
        assert message
