"""The raw decoders equal rosbags' deserialise + our decoders, for CDR and ROS 1 bytes.

Random messages are built with rosbags' types, serialised with rosbags'
serialiser, then decoded both ways: the raw path (``adapters.ros._rawdecode``)
and the path every other type takes (``deserialize`` + the type's decoder).
Both must give the same stamp, frame_id, meta and arrays (dtype, shape and
bytes), or the same ``DecodeError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters import BagSource
from adapters.errors import DecodeError
from adapters.lidar._points import normalize
from adapters.ros._messages import decoder_info, header_stamp
from adapters.ros._rawdecode import RAW_ERRORS, Malformed, raw_decoder, standard_layout
from tests.interop.bagdata import TYPES, Builder, write_bag
from tests.interop.bagdata import points as bag_points

STORES: dict[bool, Any] = {}


def store(ros1: bool) -> Any:
    if ros1 not in STORES:
        from rosbags.typesys import Stores, get_typestore

        STORES[ros1] = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    return STORES[ros1]


def serialize(ros1: bool, msg: Any) -> bytes:
    ts = store(ros1)
    if ros1:
        return bytes(ts.serialize_ros1(msg, msg.__msgtype__))
    return bytes(ts.serialize_cdr(msg, msg.__msgtype__))


def header(ros1: bool, stamp: tuple[int, int], frame_id: str) -> Any:
    T = store(ros1).types
    t = T["builtin_interfaces/msg/Time"](sec=stamp[0], nanosec=stamp[1])
    if ros1:
        return T["std_msgs/msg/Header"](seq=7, stamp=t, frame_id=frame_id)
    return T["std_msgs/msg/Header"](stamp=t, frame_id=frame_id)


def slow(ros1: bool, raw: bytes, msgtype: str) -> tuple[Any, ...]:
    """What BagSource does for a type without a raw decoder."""
    ts = store(ros1)
    msg = ts.deserialize_ros1(raw, msgtype) if ros1 else ts.deserialize_cdr(raw, msgtype)
    data, meta = decoder_info(msgtype).make(False)(msg)
    return header_stamp(msg), msg.header.frame_id, data, meta


def both(ros1: bool, raw: bytes, msgtype: str, decoder: Any = None) -> tuple[Any, Any]:
    """``(raw path result, deserialise path result)``; a DecodeError stands for its text."""
    fast = decoder or raw_decoder(msgtype, cdr=not ros1, decode_images=False)
    assert fast is not None
    out = []
    for path in (lambda: fast(raw), lambda: slow(ros1, raw, msgtype)):
        try:
            out.append(path())
        except DecodeError as err:
            out.append(f"DecodeError: {err}")
    return out[0], out[1]


def assert_same(got: Any, want: Any) -> None:
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert got.tobytes() == want.tobytes()  # bitwise: NaNs and padding included
    elif isinstance(want, dict):
        assert isinstance(got, dict)
        assert list(got) == list(want)
        for key in want:
            assert_same(got[key], want[key])
    elif isinstance(want, tuple):
        assert isinstance(got, tuple)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    else:
        assert got == want


stamps = st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**32 - 1))
frame_ids = st.text(max_size=6)
doubles = st.floats(allow_nan=True, allow_infinity=True, width=64)
ros_versions = st.booleans()


@settings(max_examples=60, deadline=None)
@given(
    ros1=ros_versions,
    stamp=stamps,
    frame_id=frame_ids,
    values=st.lists(doubles, min_size=37, max_size=37),
)
def test_imu_raw_equals_deserialise(
    ros1: bool, stamp: tuple[int, int], frame_id: str, values: list[float]
) -> None:
    T = store(ros1).types
    V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    v = np.array(values)
    msg = T["sensor_msgs/msg/Imu"](
        header=header(ros1, stamp, frame_id),
        orientation=Q(x=v[0], y=v[1], z=v[2], w=v[3]),
        orientation_covariance=v[4:13],
        angular_velocity=V(x=v[13], y=v[14], z=v[15]),
        angular_velocity_covariance=v[16:25],
        linear_acceleration=V(x=v[25], y=v[26], z=v[27]),
        linear_acceleration_covariance=v[28:37],
    )
    got, want = both(ros1, serialize(ros1, msg), "sensor_msgs/msg/Imu")
    assert_same(got, want)


@settings(max_examples=40, deadline=None)
@given(
    ros1=ros_versions,
    stamp=stamps,
    frame_id=frame_ids,
    values=st.lists(doubles, min_size=12, max_size=12),
    status=st.integers(-128, 127),
    service=st.integers(0, 2**16 - 1),
    covariance_type=st.integers(0, 255),
)
def test_navsatfix_raw_equals_deserialise(
    ros1: bool,
    stamp: tuple[int, int],
    frame_id: str,
    values: list[float],
    status: int,
    service: int,
    covariance_type: int,
) -> None:
    T = store(ros1).types
    msg = T["sensor_msgs/msg/NavSatFix"](
        header=header(ros1, stamp, frame_id),
        status=T["sensor_msgs/msg/NavSatStatus"](status=status, service=service),
        latitude=values[0],
        longitude=values[1],
        altitude=values[2],
        position_covariance=np.array(values[3:]),
        position_covariance_type=covariance_type,
    )
    got, want = both(ros1, serialize(ros1, msg), "sensor_msgs/msg/NavSatFix")
    assert_same(got, want)


ENCODINGS = ["rgb8", "bgra8", "mono8", "mono16", "rgb16", "yuv422", "32FC1", "64FC3", "16SC2", "x9"]


@settings(max_examples=80, deadline=None)
@given(
    ros1=ros_versions,
    stamp=stamps,
    frame_id=frame_ids,
    encoding=st.sampled_from(ENCODINGS),
    height=st.integers(0, 4),
    width=st.integers(0, 5),
    row_pad=st.sampled_from([0, 0, 0, -2, 1, 5]),
    short=st.sampled_from([0, 0, 0, 0, 3]),
    bigendian=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_image_raw_equals_deserialise(
    ros1: bool,
    stamp: tuple[int, int],
    frame_id: str,
    encoding: str,
    height: int,
    width: int,
    row_pad: int,
    short: int,
    bigendian: bool,
    seed: int,
) -> None:
    T = store(ros1).types
    bpp = {"rgb8": 3, "bgra8": 4, "mono8": 1, "mono16": 2, "rgb16": 6, "yuv422": 2}.get(encoding, 8)
    step = max(0, width * bpp + row_pad)  # negative padding: rows too short, a DecodeError
    size = max(0, step * height - short)  # short data: a DecodeError
    data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    msg = T["sensor_msgs/msg/Image"](
        header=header(ros1, stamp, frame_id),
        height=height,
        width=width,
        encoding=encoding,
        is_bigendian=int(bigendian),
        step=step,
        data=data,
    )
    got, want = both(ros1, serialize(ros1, msg), "sensor_msgs/msg/Image")
    assert_same(got, want)


@settings(max_examples=30, deadline=None)
@given(
    ros1=ros_versions,
    stamp=stamps,
    frame_id=frame_ids,
    fmt=st.sampled_from(["jpeg", "png", "rgb8; jpeg compressed bgr8", ""]),
    data=st.binary(max_size=64),
)
def test_compressed_image_bytes_raw_equal_deserialise(
    ros1: bool, stamp: tuple[int, int], frame_id: str, fmt: str, data: bytes
) -> None:
    T = store(ros1).types
    msg = T["sensor_msgs/msg/CompressedImage"](
        header=header(ros1, stamp, frame_id), format=fmt, data=np.frombuffer(data, np.uint8)
    )
    got, want = both(ros1, serialize(ros1, msg), "sensor_msgs/msg/CompressedImage")
    assert_same(got, want)


SIZES = {1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 8: 8}
FieldList = list[tuple[str, int, int, int]]
XYZI: FieldList = [("x", 7, 1, 0), ("y", 7, 1, 0), ("z", 7, 1, 0), ("intensity", 7, 1, 0)]


@st.composite
def field_lists(draw: st.DrawFn) -> FieldList:
    """``[(name, datatype, count, padding before)]``: mostly valid clouds, sometimes not."""
    if draw(st.integers(0, 2)) == 0:  # exactly our layout: XYZI float32, packed
        core = [(name, 7, 1, 0) for name in ("x", "y", "z", "intensity")]
        return core + [("ring", 4, 1, 0)] * draw(st.integers(0, 1))
    fields = []
    for name in ("x", "y", "z", "intensity"):
        keep = draw(st.integers(0, 19)) > 0 if name != "intensity" else draw(st.booleans())
        if keep:
            fields.append((name, draw(st.sampled_from(list(SIZES))), 1, draw(st.integers(0, 3))))
    extras = st.tuples(
        st.sampled_from(["ring", "t", "rgb", "", "x"]),  # "": PCL padding; "x": a duplicate
        st.sampled_from([*SIZES, *SIZES, 9]),  # 9: not a PointField datatype
        st.integers(0, 3),  # count (0 counts as 1, as in PCL)
        st.integers(0, 3),
    )
    fields += draw(st.lists(extras, max_size=3))
    return list(draw(st.permutations(fields)))


def cloud(
    ros1: bool,
    fields: FieldList,
    height: int,
    width: int,
    point_pad: int,
    row_pad: int,
    bigendian: bool,
    seed: int,
) -> Any:
    T = store(ros1).types
    offset, out = 0, []
    for name, datatype, count, pad in fields:
        offset += pad
        out.append(
            T["sensor_msgs/msg/PointField"](
                name=name, offset=offset, datatype=datatype, count=count
            )
        )
        offset += SIZES.get(datatype, 1) * max(1, count)
    step = offset + point_pad
    row_step = max(0, width * step + row_pad)  # -1: rows too short, a DecodeError
    data = np.random.default_rng(seed).integers(0, 256, row_step * height, dtype=np.uint8)
    return T["sensor_msgs/msg/PointCloud2"](
        header=header(ros1, (5, 6), "lidar"),
        height=height,
        width=width,
        fields=out,
        is_bigendian=bigendian,
        point_step=step,
        row_step=row_step,
        data=data,
        is_dense=True,
    )


@settings(max_examples=120, deadline=None)
@given(
    ros1=ros_versions,
    first=field_lists(),
    second=st.one_of(st.none(), field_lists()),  # None: the same field list again
    height=st.integers(0, 3),
    width=st.integers(0, 6),
    point_pad=st.sampled_from([0, 0, 1, 3]),
    row_pad=st.sampled_from([0, 0, 0, -1, 4]),
    bigendian=st.sampled_from([False, False, True]),
    seed=st.integers(0, 2**16),
)
@example(  # the second field list starts with the bytes of the first: no stale cache
    ros1=False,
    first=XYZI,
    second=[*XYZI, ("ring", 4, 1, 0)],
    height=1,
    width=2,
    point_pad=0,
    row_pad=0,
    bigendian=False,
    seed=0,
)
def test_pointcloud2_raw_equals_deserialise_and_normalize(
    ros1: bool,
    first: FieldList,
    second: FieldList | None,
    height: int,
    width: int,
    point_pad: int,
    row_pad: int,
    bigendian: bool,
    seed: int,
) -> None:
    msgtype = "sensor_msgs/msg/PointCloud2"
    decoder = raw_decoder(msgtype, cdr=not ros1)  # one decoder: its field-list cache is used
    for i, fields in enumerate([first, first if second is None else second]):
        msg = cloud(ros1, fields, height, width, point_pad, row_pad, bigendian, seed + i)
        got, want = both(ros1, serialize(ros1, msg), msgtype, decoder)
        assert_same(got, want)
        if isinstance(got, str):
            continue
        points = got[2]
        # The layout is what adapters.lidar._points.normalize makes of the fields by name.
        records = np.frombuffer(
            np.ascontiguousarray(
                msg.data.reshape(height, -1)[:, : width * msg.point_step] if height else msg.data
            ),
            _record_dtype(msg),
            height * width,
        )
        columns = {
            n: records[n].astype(records[n].dtype.newbyteorder("=")) for n in records.dtype.names
        }
        with np.errstate(over="ignore", invalid="ignore"):
            assert_same(points, normalize(columns, height * width))


def _record_dtype(msg: Any) -> np.dtype[Any]:
    codes = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
    order = ">" if msg.is_bigendian else "<"
    names, formats, offsets = [], [], []
    for f in msg.fields:
        if f.name and f.name not in names:
            names.append(f.name)
            fmt = order + codes[f.datatype]
            formats.append((fmt, (f.count,)) if f.count > 1 else fmt)
            offsets.append(f.offset)
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": msg.point_step}
    )


def test_a_cloud_in_our_layout_is_a_view_of_the_message_bytes() -> None:
    b = Builder(store(False))
    raw = b.serialize(b.make("/lidar", 10**9, bag_points(3)))
    decoder = raw_decoder("sensor_msgs/msg/PointCloud2", cdr=True)
    assert decoder is not None
    _, _, points, _ = decoder(raw)
    assert points.base is not None
    assert not points.flags.owndata
    assert points.dtype.names == ("x", "y", "z", "intensity", "ring", "time")


@pytest.mark.parametrize("ros1", [False, True])
def test_bytes_that_do_not_parse_are_left_to_rosbags(ros1: bool) -> None:
    T = store(ros1).types
    V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    msg = T["sensor_msgs/msg/Imu"](
        header=header(ros1, (1, 2), "imu"),
        orientation=Q(x=0.0, y=0.0, z=0.0, w=1.0),
        orientation_covariance=np.zeros(9),
        angular_velocity=V(x=0.0, y=0.0, z=0.0),
        angular_velocity_covariance=np.zeros(9),
        linear_acceleration=V(x=0.0, y=0.0, z=0.0),
        linear_acceleration_covariance=np.zeros(9),
    )
    raw = serialize(ros1, msg)
    decoder = raw_decoder("sensor_msgs/msg/Imu", cdr=not ros1)
    assert decoder is not None
    for bad in (raw[:-5], raw + b"\x00" * 8, b"\x00\x00" + raw[2:] if not ros1 else raw[:3]):
        with pytest.raises((Malformed, *RAW_ERRORS)):
            decoder(bad)


async def test_bag_source_decodes_standard_types_raw_and_broken_bytes_get_rosbags_error(
    tmp_path: Path,
) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = store(False)
    b = Builder(ts)
    path = tmp_path / "bag"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        imu = w.add_connection("/imu", TYPES["/imu"], typestore=ts)
        pose = w.add_connection("/pose", TYPES["/pose"], typestore=ts)
        for i in range(3):
            raw = b.serialize(b.make("/imu", 1000 + i, {"accel": [i, 0, 0], "gyro": [0, 0, i]}))
            w.write(imu, 2000 + i, raw[:-9] if i == 1 else raw)  # one truncated message
        w.write(pose, 2005, b.serialize(b.make("/pose", 1005, 1.5)))
    source = BagSource(path)
    assert source.raw_decoded == {"/imu"}
    frames = []
    async with source:
        async for frame in source.frames():
            frames.append(frame)
    assert [(f.sensor, f.seq) for f in frames] == [("imu", 0), ("imu", 2), ("pose", 0)]
    assert source.errors == {"undecodable": 1}
    assert source.last_error is not None
    assert "sensor 'imu' seq 1: sensor_msgs/msg/Imu message does not deserialise" in (
        source.last_error
    )
    assert float(frames[1].data["accel"][0]) == 2.0
    meta = dict(frames[1].meta)
    assert isinstance(meta.pop("ros_message"), bytes)  # the original rides along
    assert meta == {"topic": "/imu", "frame_id": "imu"}


@pytest.mark.parametrize("kind", ["mcap", "sqlite3", "ros1"])
def test_standard_types_are_raw_decoded_in_every_bag_kind(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ("drive.bag" if kind == "ros1" else "drive")
    write_bag(path, kind)
    source = BagSource(path)
    try:
        assert source.raw_decoded == {"/cam/image", "/cam/jpeg", "/lidar", "/imu", "/gps"}
    finally:
        source.close()


async def test_a_custom_definition_of_a_standard_type_goes_through_rosbags(
    tmp_path: Path,
) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    humble = get_typestore(Stores.ROS2_HUMBLE)
    nested = [
        "builtin_interfaces/msg/Time",
        "std_msgs/msg/Header",
        "geometry_msgs/msg/Vector3",
        "geometry_msgs/msg/Quaternion",
    ]
    ts = get_typestore(Stores.EMPTY)
    ts.register({name: humble.fielddefs[name] for name in nested})
    definition = """
std_msgs/Header header
geometry_msgs/Vector3 linear_acceleration
float64 temperature
geometry_msgs/Quaternion orientation
float64[9] orientation_covariance
geometry_msgs/Vector3 angular_velocity
float64[9] angular_velocity_covariance
float64[9] linear_acceleration_covariance
"""
    ts.register(get_types_from_msg(definition, "sensor_msgs/msg/Imu"))
    assert ts.fielddefs["sensor_msgs/msg/Imu"] != humble.fielddefs["sensor_msgs/msg/Imu"]
    T = ts.types
    V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    msg = T["sensor_msgs/msg/Imu"](
        header=T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](sec=1, nanosec=5), frame_id="imu"
        ),
        linear_acceleration=V(x=1.0, y=2.0, z=3.0),
        temperature=21.5,
        orientation=Q(x=0.0, y=0.0, z=0.0, w=1.0),
        orientation_covariance=np.zeros(9),
        angular_velocity=V(x=4.0, y=5.0, z=6.0),
        angular_velocity_covariance=np.zeros(9),
        linear_acceleration_covariance=np.zeros(9),
    )
    path = tmp_path / "custom"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=ts)
        w.write(conn, 10, bytes(ts.serialize_cdr(msg, "sensor_msgs/msg/Imu")))
    source = BagSource(path)
    assert source.raw_decoded == set()
    assert not standard_layout(source._reader.typestore, store(False), "sensor_msgs/msg/Imu")
    frames = []
    async with source:
        async for frame in source.frames():
            frames.append(frame)
    assert frames[0].t_sensor == 1_000_000_005
    np.testing.assert_array_equal(frames[0].data["accel"], [1, 2, 3])
    np.testing.assert_array_equal(frames[0].data["gyro"], [4, 5, 6])


def reference_arrays(value: Any, key: str = "", depth: int = 0) -> dict[str, np.ndarray]:
    """message_to_arrays as first written: a plain recursive walk (the generic path's oracle)."""
    out: dict[str, np.ndarray] = {}
    if depth > 8:
        return out
    if isinstance(value, np.ndarray):
        out[key] = value
    elif isinstance(value, (bool, int, float, str)):
        out[key] = np.asarray(value)
    elif isinstance(value, list):
        if not value or not hasattr(value[0], "__dataclass_fields__"):
            out[key] = np.asarray(value) if value else np.empty(0)
        else:
            parts = [reference_arrays(item) for item in value]
            for name in parts[0]:
                column = [p.get(name) for p in parts]
                if all(c is not None and c.shape == column[0].shape for c in column):  # type: ignore[union-attr]
                    out[f"{key}.{name}"] = np.stack(column)  # type: ignore[arg-type]
                else:
                    for i, c in enumerate(column):
                        if c is not None:
                            out[f"{key}.{i}.{name}"] = c
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            if not name.startswith("__"):
                sub = f"{key}.{name}" if key else name
                out.update(reference_arrays(getattr(value, name), sub, depth + 1))
    return out


GENERIC_TYPES = {
    "test_msgs/msg/Item": "string name\nint32 id\ngeometry_msgs/Point[] points\nfloat64[] values",
    "test_msgs/msg/Bundle": (
        "std_msgs/Header header\ntest_msgs/Item first\ntest_msgs/Item[] items\nstring[] tags"
    ),
}


def generic_store() -> Any:
    if "generic" not in STORES:
        from rosbags.typesys import Stores, get_types_from_msg, get_typestore

        ts = get_typestore(Stores.ROS2_HUMBLE)
        for name, text in GENERIC_TYPES.items():
            ts.register(get_types_from_msg(text, name))
        STORES["generic"] = ts
    return STORES["generic"]


items = st.tuples(
    st.text(max_size=3), st.integers(-5, 5), st.integers(0, 3), st.lists(doubles, max_size=3)
)


@settings(max_examples=40, deadline=None)
@given(
    first=items, more=st.lists(items, max_size=4), tags=st.lists(st.text(max_size=2), max_size=3)
)
def test_generic_messages_flatten_as_the_plain_walk_does(
    first: tuple[str, int, int, list[float]],
    more: list[tuple[str, int, int, list[float]]],
    tags: list[str],
) -> None:
    from adapters.ros._messages import decode_generic, message_to_arrays

    ts = generic_store()
    T = ts.types

    def item(name: str, ident: int, n_points: int, values: list[float]) -> Any:
        points = [T["geometry_msgs/msg/Point"](x=float(i), y=0.5, z=-1.0) for i in range(n_points)]
        return T["test_msgs/msg/Item"](name=name, id=ident, points=points, values=np.array(values))

    bundle = T["test_msgs/msg/Bundle"](
        header=header(False, (3, 4), "base"),
        first=item(*first),
        items=[item(*m) for m in more],
        tags=tags,
    )
    raw = bytes(ts.serialize_cdr(bundle, "test_msgs/msg/Bundle"))
    msg = ts.deserialize_cdr(raw, "test_msgs/msg/Bundle")  # what a bag gives: lists, arrays
    for value in (msg, msg.first, *msg.items):  # ragged nested sequences; a header or none
        want = reference_arrays(value)
        assert_same(message_to_arrays(value), want)
        data, meta = decode_generic(value)
        assert meta == {}
        assert_same(data, {k: v for k, v in want.items() if not k.startswith("header.")})
