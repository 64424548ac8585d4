"""The ``foxglove`` profile's pure encoders, decoded by protobuf from the SDK's own schema.

:func:`point_cloud` keeps every numeric little-endian column of any point
array (one ``PackedElementField`` each, at its byte offset) and no other;
``google.protobuf`` decodes the message from the ``FileDescriptorSet`` the SDK
publishes (the reference), and numpy reads each column back out of the packed
bytes at the field's offset. :func:`series_record` and :func:`record_schema`
agree: every key of the record is a property of its schema, typed as written.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import Frame
from recordings.outputs.encoders._foxglove_messages import (
    location_fix,
    point_cloud,
    record_schema,
    series_record,
)

NUMERIC = {"u1": 1, "i1": 2, "u2": 3, "i2": 4, "u4": 5, "i4": 6, "f4": 7, "f8": 8}
"""Column type -> ``foxglove.PackedElementFieldNumericType`` (UINT8 = 1 ... FLOAT64 = 8)."""
OTHER = [">f4", ">i2", "u8", "i8", "2f4"]
"""Columns a PointCloud cannot describe: big-endian, 64-bit integers, sub-arrays."""


@functools.cache
def decoder(name: str) -> Any:
    from foxglove import messages as m
    from google.protobuf import (  # type: ignore[import-untyped]
        descriptor_pb2,
        descriptor_pool,
        message_factory,
    )

    schema = getattr(m, name.removeprefix("foxglove.")).get_schema()
    assert schema.name == name
    pool = descriptor_pool.DescriptorPool()
    for proto in descriptor_pb2.FileDescriptorSet.FromString(schema.data).file:
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


columns = st.lists(st.sampled_from(["<" + k for k in NUMERIC] + OTHER), min_size=1, max_size=8).map(
    lambda types: np.dtype([(f"c{i}", t) for i, t in enumerate(types)])
)


@settings(max_examples=60, deadline=None)
@given(
    dtype=columns,
    n=st.integers(0, 12),
    seed=st.integers(0, 2**32 - 1),
    t=st.integers(0, (2**32 - 1) * 10**9),
)
def test_a_point_cloud_describes_every_numeric_column_at_its_offset(
    dtype: np.dtype, n: int, seed: int, t: int
) -> None:
    raw = np.random.default_rng(seed).integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    points = raw.view(dtype) if n else np.zeros(0, dtype)
    msg = point_cloud(Frame("lidar", 0, t, points, meta={"frame_id": "velo"}))
    wanted = {
        name: (dtype.fields[name][1], NUMERIC[dtype[name].str[1:]])  # type: ignore[index]
        for name in dtype.names or ()
        if dtype[name].subdtype is None
        and dtype[name].byteorder != ">"
        and dtype[name].str[1:] in NUMERIC
    }
    if not wanted:
        assert msg is None
        return
    got = decoder("foxglove.PointCloud").FromString(msg.encode())
    assert {f.name: (f.offset, f.type) for f in got.fields} == wanted
    assert got.point_stride == dtype.itemsize
    assert got.frame_id == "velo"
    assert got.timestamp.seconds * 10**9 + got.timestamp.nanos == t
    assert got.data == points.tobytes()
    packed = np.frombuffer(got.data, np.uint8).reshape(n, dtype.itemsize)
    for name, (offset, _) in wanted.items():
        size = dtype[name].itemsize
        column = np.ascontiguousarray(packed[:, offset : offset + size]).ravel()
        np.testing.assert_array_equal(column, np.ascontiguousarray(points[name]).view(np.uint8))


@given(
    lat=st.floats(-90, 90),
    lon=st.floats(-180, 180),
    alt=st.none() | st.floats(-500, 9000),
    t=st.integers(0, (2**32 - 1) * 10**9),
)
def test_a_location_fix_keeps_the_coordinates_and_the_time(
    lat: float, lon: float, alt: float | None, t: int
) -> None:
    data = {"latitude": np.float64(lat), "longitude": np.float64(lon)}
    if alt is not None:
        data["altitude"] = np.float64(alt)
    got = decoder("foxglove.LocationFix").FromString(
        location_fix(Frame("gps", 0, t, data)).encode()
    )
    assert (got.latitude, got.longitude, got.altitude) == (lat, lon, alt or 0.0)
    assert got.frame_id == "gps"
    assert got.timestamp.seconds * 10**9 + got.timestamp.nanos == t


@given(
    values=st.dictionaries(
        st.text("abcxyz_", min_size=1, max_size=6),
        st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=4),
        min_size=1,
        max_size=5,
    ),
    t=st.integers(0, (2**32 - 1) * 10**9),
)
def test_a_series_record_fits_its_schema(values: dict[str, list[float]], t: int) -> None:
    data = {k: np.asarray(v) for k, v in values.items() if k != "timestamp"}
    if not data:
        return
    record = series_record(Frame("s", 0, t, data))
    schema = record_schema("hyperframes.series", record)
    assert record["timestamp"] == {"sec": t // 10**9, "nsec": t % 10**9}
    assert set(schema["properties"]) == set(record)
    for key, value in record.items():
        if key == "timestamp":
            continue
        kind = schema["properties"][key]["type"]
        assert kind == ("array" if isinstance(value, list) else "number")
