"""PCD and .bin formats: round trips over random layouts, lying headers, bad files in a sequence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import PointCloudFiles
from adapters.errors import DecodeError
from adapters.lidar import from_xyz, xyz
from adapters.lidar._layouts import LAYOUTS, read_bin
from adapters.lidar._lzf import LzfError, compress_literal, decompress
from adapters.lidar._pcd import DataKind, read_pcd, read_pcd_with_meta, write_pcd
from fusion._frames import Frame

PCD_TYPES = ["<f4", "<f8", "i1", "<i2", "<i4", "<i8", "u1", "<u2", "<u4", "<u8"]


@st.composite
def point_records(draw: st.DrawFn) -> np.ndarray:
    """A structured array: x, y, z (float32 or float64) among random extra fields."""
    axis = draw(st.sampled_from(["<f4", "<f8"]))
    extra = draw(
        st.lists(st.tuples(st.sampled_from(PCD_TYPES), st.integers(1, 3)), min_size=0, max_size=4)
    )
    descr: list[tuple[Any, ...]] = [(a, axis) for a in "xyz"]
    descr += [
        (f"f{i}", code, (n,)) if n > 1 else (f"f{i}", code) for i, (code, n) in enumerate(extra)
    ]
    order = draw(st.permutations(range(len(descr))))
    dtype = np.dtype([descr[i] for i in order])
    count = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = np.zeros(count, dtype)
    for name in dtype.names or ():
        sub = dtype[name]
        shape = (count, *sub.shape)
        if name in "xyz":  # within the default max_coordinate of .bin reads
            out[name] = rng.uniform(-999, 999, shape)
        elif sub.base.kind == "f":
            out[name] = rng.normal(0, 50, shape) * rng.choice([1e-30, 1e-3, 1, 1e30], shape)
        else:
            info = np.iinfo(sub.base)
            out[name] = rng.integers(info.min, info.max, shape, dtype=sub.base, endpoint=True)
    return out


def assert_same_fields(got: np.ndarray, want: np.ndarray) -> None:
    for name in want.dtype.names or ():
        if name in "xyz":  # positions come back as float32
            np.testing.assert_array_equal(got[name], want[name].astype(np.float32))
        else:
            assert got.dtype[name] == want.dtype[name]
            np.testing.assert_array_equal(got[name], want[name])


@pytest.mark.parametrize("data", ["ascii", "binary", "binary_compressed"])
@settings(max_examples=40)
@given(records=point_records())
def test_pcd_written_in_any_encoding_reads_back_equal(
    tmp_path_factory: pytest.TempPathFactory, data: DataKind, records: np.ndarray
) -> None:
    path = tmp_path_factory.mktemp("pcd") / "cloud.pcd"
    write_pcd(path, records, data=data)
    points = read_pcd(path)
    assert len(points) == len(records)
    assert points.dtype.names[:4] == ("x", "y", "z", "intensity")
    assert_same_fields(points, records)


@settings(max_examples=60)
@given(records=point_records())
def test_bin_written_with_numpy_reads_back_equal_with_its_dtype_as_layout(
    tmp_path_factory: pytest.TempPathFactory, records: np.ndarray
) -> None:
    path = tmp_path_factory.mktemp("bin") / "sweep.bin"
    records.tofile(path)
    points = read_bin(path, records.dtype)
    assert_same_fields(points, records)
    assert np.array_equal(np.fromfile(path, records.dtype).view(np.uint8), records.view(np.uint8))


@given(data=st.binary(max_size=3000))
def test_lzf_literal_runs_decode_to_their_input(data: bytes) -> None:
    assert decompress(compress_literal(data), len(data)) == data


def test_lzf_back_references_including_overlapping_runs() -> None:
    # "abc" literal, then a 6-byte copy from 3 back (overlapping), then 9 bytes from 9 back
    stream = bytes([2]) + b"abc" + bytes([(4 << 5) | 0, 2]) + bytes([(7 << 5) | 0, 0, 8])
    assert decompress(stream, 18) == b"abc" * 6
    with pytest.raises(LzfError, match="points 3 bytes back, before the start"):
        decompress(bytes([(1 << 5), 2]), 3)
    with pytest.raises(LzfError, match="decompressed to 3 bytes, the header promised 4"):
        decompress(bytes([2]) + b"abc", 4)


def test_pcd_count_fields_padding_and_viewpoint(tmp_path: Path) -> None:
    header = (
        "VERSION 0.7\nFIELDS x y z normal _ label\nSIZE 4 4 4 4 1 2\nTYPE F F F F U U\n"
        "COUNT 1 1 1 3 2 1\nWIDTH 2\nHEIGHT 1\nVIEWPOINT 1 2 3 0.5 0.5 0.5 0.5\nPOINTS 2\n"
    )
    rows = "1 2 3 0.1 0.2 0.3 0 0 7\n4 5 6 0.4 0.5 0.6 0 0 65535\n"
    (tmp_path / "a.pcd").write_text(header + "DATA ascii\n" + rows)
    points, meta = read_pcd_with_meta(tmp_path / "a.pcd")
    assert points.dtype.names == ("x", "y", "z", "intensity", "normal", "label")
    np.testing.assert_array_equal(points["normal"], np.float32([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]))
    assert points["label"].tolist() == [7, 65535]
    assert meta["viewpoint"] == [1.0, 2.0, 3.0, 0.5, 0.5, 0.5, 0.5]
    record = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("normal", "<f4", (3,)),
                       ("_", "u1", (2,)), ("label", "<u2")])  # fmt: skip
    binary = np.zeros(2, record)
    for name in ("x", "y", "z", "normal", "label"):
        binary[name] = points[name]
    (tmp_path / "b.pcd").write_bytes((header + "DATA binary\n").encode() + binary.tobytes())
    np.testing.assert_array_equal(read_pcd(tmp_path / "b.pcd"), points)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("POINTS 3", "POINTS 4"), r"byte \d+: POINTS 4 does not match WIDTH x HEIGHT = 3 x 1 = 3"),
        (("WIDTH 3", "WIDTH"), r"byte \d+: header line WIDTH has no value \(expected an integer\)"),
        (("SIZE 4 4 4 4", "SIZE 4 4 4"), r"SIZE has 3 values for 4 FIELDS \(x y z intensity\)"),
        (("TYPE F F F", "TYPE F F Q"), r"field 'z' has TYPE Q SIZE 4, not a PCD type"),
        (("FIELDS x y z", "FIELDS a b c"), r"expected point fields x, y, z; the file has fields "
                                            r"\['a', 'b', 'c', 'intensity'\] \(missing x, y, z\)"),
        (("VIEWPOINT 0 0 0 1 0 0 0", "VIEWPOINT 0 0"), r"VIEWPOINT 0 0: expected 7 numbers"),
        (("DATA binary", "DATA packed"), r"DATA 'packed' is not ascii, binary or binary_compr"),
    ],
    ids=["points", "no-value", "sizes", "type", "no-xyz", "viewpoint", "data"],
)  # fmt: skip
def test_pcd_header_that_lies_is_an_error_naming_file_and_problem(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    path = tmp_path / "lie.pcd"
    write_pcd(path, from_xyz(np.ones((3, 3))))
    text = path.read_bytes().replace(change[0].encode(), change[1].encode(), 1)
    path.write_bytes(text)
    with pytest.raises(DecodeError, match=r"lie\.pcd: .*" + message):
        read_pcd(path)


@pytest.mark.parametrize("data", ["binary", "binary_compressed", "ascii"])
def test_pcd_data_shorter_than_points_is_an_error_and_longer_reads_points(
    tmp_path: Path, data: DataKind
) -> None:
    path = tmp_path / "c.pcd"
    cloud = from_xyz(np.arange(15, dtype=np.float32).reshape(5, 3))
    write_pcd(path, cloud, data=data)
    raw = path.read_bytes()
    (tmp_path / "short.pcd").write_bytes(
        raw.replace(b"WIDTH 5", b"WIDTH 6").replace(b"POINTS 5", b"POINTS 6")
    )
    (tmp_path / "long.pcd").write_bytes(
        raw.replace(b"WIDTH 5", b"WIDTH 4").replace(b"POINTS 5", b"POINTS 4")
    )
    unpacks = "binary_compressed data unpacks to 80 bytes; POINTS"
    short = {
        "binary": r"binary data of 6 points x 16 bytes needs 96 bytes, file has 80",
        "binary_compressed": unpacks + " 6 x 16 bytes is 96",
        "ascii": r"ascii data has 5 points, POINTS says 6",
    }[data]
    with pytest.raises(DecodeError, match=r"short\.pcd: byte \d+: " + short):
        read_pcd(tmp_path / "short.pcd")
    if data == "binary_compressed":  # the size word contradicts POINTS: not a trailer
        with pytest.raises(DecodeError, match=unpacks + " 4 x 16 bytes is 64"):
            read_pcd(tmp_path / "long.pcd")
        return
    points, meta = read_pcd_with_meta(tmp_path / "long.pcd")  # POINTS points, as PCL reads
    np.testing.assert_array_equal(xyz(points), xyz(cloud)[:4])
    trailing = {
        "binary": "16 byte(s) after the 4 points of 16 bytes (room for 5 points; POINTS says 4)",
        "ascii": "1 line(s) of points beyond POINTS 4",
    }
    assert meta["trailing"] == trailing[data]


def test_waymo_style_bin_is_refused_as_kitti_and_read_as_waymo(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    records = np.zeros(1000, LAYOUTS["waymo"].dtype)
    for axis in "xyz":
        records[axis] = rng.normal(0, 20, 1000)
    records["intensity"] = rng.uniform(0, 1, 1000)
    records["elongation"] = rng.uniform(0, 1, 1000)
    records["timestamp"] = 1.5e15  # microseconds, as float32
    records.tofile(tmp_path / "segment_0.bin")
    with pytest.raises(
        DecodeError,
        match=r"segment_0\.bin: read as layout kitti .*(intensity spans|coordinate of).*"
        r"presets that fit its 24000 bytes: xyzi \(16 B, implausible\), nuscenes \(20 B, "
        r"implausible\), waymo \(24 B, plausible\), xyz \(12 B, implausible\)",
    ):
        read_bin(tmp_path / "segment_0.bin")
    np.testing.assert_array_equal(read_bin(tmp_path / "segment_0.bin", "waymo"), records)


def test_kitti_file_read_as_nuscenes_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    kitti = np.zeros(500, LAYOUTS["kitti"].dtype)  # 8000 bytes: divides by 20 as well
    for axis in "xyz":
        kitti[axis] = rng.normal(0, 20, 500)
    kitti["intensity"] = rng.uniform(0, 1, 500)
    kitti.tofile(tmp_path / "k.bin")
    with pytest.raises(
        DecodeError, match=r"layout nuscenes .* ring spans -\d.*kitti \(16 B, plaus"
    ):
        read_bin(tmp_path / "k.bin", "nuscenes")
    kitti["x"][0] = 20_000
    kitti.tofile(tmp_path / "far.bin")
    with pytest.raises(DecodeError, match=r"a coordinate of 2e\+04 m is beyond max_coordinate"):
        read_bin(tmp_path / "far.bin")
    assert read_bin(tmp_path / "far.bin", max_coordinate=50_000)["x"][0] == 20_000


def test_mostly_nan_bin_is_refused(tmp_path: Path) -> None:
    records = np.full(10, np.nan, LAYOUTS["kitti"].dtype)
    records.tofile(tmp_path / "nan.bin")
    with pytest.raises(DecodeError, match=r"100% of the points have NaN or inf coordinates"):
        read_bin(tmp_path / "nan.bin")


async def collect(source: PointCloudFiles) -> list[Frame]:
    async with source:
        return [f async for f in source.frames()]


async def test_bad_pcd_and_ply_files_cost_only_themselves_in_a_sequence(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    good = from_xyz(np.arange(12, dtype=np.float32).reshape(4, 3))
    write_pcd(folder / "0.pcd", good)
    write_pcd(folder / "1.pcd", good)  # its FIELDS lack x, y, z
    (folder / "1.pcd").write_bytes(
        (folder / "1.pcd").read_bytes().replace(b"FIELDS x y z", b"FIELDS a b c")
    )
    write_pcd(folder / "2.pcd", good)  # a header line lost its value
    (folder / "2.pcd").write_bytes((folder / "2.pcd").read_bytes().replace(b"HEIGHT 1", b"HEIGHT"))
    (folder / "3.ply").write_text(
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float a\nend_header\n1\n"
    )
    (folder / "4.ply").write_text(
        "ply\nformat ascii 1.0\nelement vertex\nproperty float x\nend_header\n1\n"
    )
    (folder / "5.ply").write_text(
        "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
        "property float z\nend_header\n1 2 3\n4 5 6\n"
    )
    source = PointCloudFiles(folder, rate_hz=10)
    frames = await collect(source)
    assert [Path(f.meta["path"]).name for f in frames] == ["0.pcd", "5.ply"]
    np.testing.assert_array_equal(frames[0].data, good)
    assert frames[0].meta["viewpoint"] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert source.errors == {"bad_file": 4}
    assert "4.ply: byte 21: header line 'element vertex' is missing its value (expected " + (
        "'element <name> <count>')"
    ) in str(source.last_error)
    from adapters.lidar import read_ply

    for name, reader, message in [
        ("1.pcd", read_pcd, r"1\.pcd: expected point fields x, y, z; the file has fields "
                            r"\['a', 'b', 'c', 'intensity'\]"),
        ("2.pcd", read_pcd, r"2\.pcd: byte \d+: header line HEIGHT has no value "
                            r"\(expected an integer\)"),
        ("3.ply", read_ply, r"3\.ply: expected point fields x, y, z; the file has fields \['a'\]"),
    ]:  # fmt: skip
        with pytest.raises(DecodeError, match=message):
            reader(folder / name)


@settings(max_examples=25, deadline=None)
@given(
    cuts=st.lists(st.integers(-40, 40), min_size=1, max_size=8),
    data=st.sampled_from(["binary", "ascii"]),
)
async def test_pcd_files_longer_or_shorter_than_points_all_end_as_frames_or_losses(
    cuts: list[int], data: DataKind
) -> None:
    """Bytes appended (> 0) read POINTS points with a warning; bytes cut (< 0) refuse the
    file; either way each file is one unit of the ledger."""
    import tempfile

    cloud = from_xyz(np.arange(24, dtype=np.float32).reshape(8, 3))
    with tempfile.TemporaryDirectory() as tmp:
        for i, cut in enumerate(cuts):
            path = Path(tmp) / f"{i:03d}.pcd"
            write_pcd(path, cloud, data=data)
            raw = path.read_bytes()
            last_line = raw.rstrip(b"\n").rsplit(b"\n", 1)[-1] + b"\n"
            tail = last_line * cut if data == "ascii" else bytes(range(max(cut, 0)))
            path.write_bytes(raw + tail if cut >= 0 else raw[:cut])
        source = PointCloudFiles(tmp, rate_hz=10, name="p")
        async with source:
            frames = [f async for f in source.frames()]
    ledger = source.ledgers()["p"]
    assert ledger.received == len(cuts) == ledger.emitted + ledger.lost_total
    assert all(len(f.data) == 8 for f in frames)
    assert len(frames) >= sum(1 for c in cuts if c >= 0)
