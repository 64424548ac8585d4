"""Offline sync of recordings: the same groups, frames and payloads as replaying the
frames through the streaming policy; Parquet checked with pyarrow's reader."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from fusion import ApproximateTime, ExactTime, Frame, FrameGroup, Nearest
from recordings import Recorder, open_recording
from recordings._offline_sync import sync_recording
from recordings.hfr._stamps import read_stamps
from tests.recordings.helpers import digest

MS = 1_000_000
CORPUS = Path(__file__).resolve().parents[1] / "data" / "recordings"


def streamed(policy: ExactTime | Nearest, path: Path) -> list[FrameGroup]:
    out: list[FrameGroup] = []
    with open_recording(path) as log:
        for f in log.frames():
            out += policy.push(f)
    return out + policy.drain()


def described(groups: list[FrameGroup]) -> list[tuple[Any, ...]]:
    """Everything a group says, payloads as digests."""

    def one(f: Frame) -> tuple[Any, ...]:
        return (f.sensor, f.seq, f.t, f.t_sensor, f.t_arrival, digest(f.data), f.meta)

    return [
        (
            g.t,
            [
                (s, [one(x) for x in v] if isinstance(v, list) else one(v))
                for s, v in g.frames.items()
            ],
            g.missing,
        )
        for g in groups
    ]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Camera images (records), IMU rows (columns), LiDAR dicts and bytes, in arrival
    order (so some IMU stamps come out of order), drops, the IMU silent for a
    second, in small chunks of both kinds."""
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("offline") / "session.hfr"
    events = []
    for name, hz in {"cam": 30, "lidar": 10, "imu": 200}.items():
        n = 4 * hz
        t = np.arange(n) * (1_000_000_000 // hz) + rng.integers(0, 2 * MS, n)
        arrival = t + rng.integers(MS, 6 * MS, n)
        keep = rng.random(n) > 0.05  # drops
        if name == "imu":  # a silent second: its chunks hold no columns (kind CHUNK)
            keep &= (t < 1_500 * MS) | (t >= 2_500 * MS)
        events += [(int(a), name, int(x)) for a, x, k in zip(arrival, t, keep, strict=True) if k]
    events.sort()
    seqs: dict[str, int] = {}
    with Recorder(path, chunk_bytes=48 << 10) as rec:
        for a, name, t in events:
            i = seqs[name] = seqs.get(name, -1) + 1
            data: Any
            if name == "cam":
                data = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
            elif name == "imu":
                data = rng.normal(size=6)
            elif i % 4 == 0:
                data = b"sweep %d" % i
            else:
                data = {"xyz": rng.normal(size=(300, 3)).astype(np.float32)}
            rec.write(Frame(name, i, t, data, t_sensor=t + 7, t_arrival=a, meta={"i": i}))
    with open_recording(path) as log:
        assert {c.kind for c in log.chunks} == {2, 4}  # both chunk layouts
    return path


def nearest(**kw: Any) -> Nearest:
    args: dict[str, Any] = {"tolerance": 20 * MS, "windows": {"imu": (50 * MS, 49 * MS)}}
    args.update(kw)
    return Nearest("lidar", ["lidar", "cam", "imu"], **args)


@pytest.mark.parametrize(
    "make",
    [
        nearest,
        lambda: nearest(optional=["cam"], tolerance=5 * MS),
        lambda: nearest(tolerance=70 * MS, windows={"imu": (100 * MS, 100 * MS)}),
        lambda: Nearest("cam", ["cam", "lidar"], 60 * MS, optional=["lidar"]),
        lambda: ExactTime(["cam", "lidar", "imu"], optional=["lidar", "imu"]),
    ],
    ids=["nearest", "optional-tight", "shared-frames", "cam-ref", "exact"],
)
def test_groups_with_payloads_equal_the_streaming_replay(session: Path, make: Any) -> None:
    expected = streamed(make(), session)
    with sync_recording(session, make()) as groups:
        got = list(groups.groups())
        assert len(groups) == len(expected) == groups.statistics.groups
    assert len(expected) > 5
    assert described(got) == described(expected)


def test_stamps_are_the_frames_stamps_in_recorded_order(session: Path) -> None:
    with open_recording(session) as log:
        stamps = read_stamps(log, ["imu", "cam"])
        frames = list(log.frames(["imu", "cam"]))
    for s in ("imu", "cam"):
        mine = [(f.t, f.seq) for f in frames if f.sensor == s]
        assert list(zip(stamps[s].t.tolist(), stamps[s].seq.tolist(), strict=True)) == mine
    # Arrival order put some IMU stamps out of order; they are dropped as push drops them.
    pol = nearest()
    streamed_ = streamed(pol, session)
    with sync_recording(session, nearest()) as groups:
        assert groups.statistics.out_of_order["imu"] == pol.stats.dropped[("imu", "out_of_order")]
        assert len(groups) == len(streamed_)


def test_a_time_window_groups_only_frames_inside_it(session: Path) -> None:
    start, end = 1_000 * MS, 2_500 * MS
    pol = nearest()
    expected: list[FrameGroup] = []
    with open_recording(session) as log:
        for f in log.frames(start=start, end=end):
            expected += pol.push(f)
    expected += pol.drain()
    with sync_recording(session, nearest(), start=start, end=end) as groups:
        assert described(list(groups.groups())) == described(expected)


def test_parquet_has_a_row_per_group_with_nulls_where_missing(
    session: Path, tmp_path: Path
) -> None:
    make = lambda: nearest(optional=["cam"], tolerance=5 * MS)  # noqa: E731
    expected = streamed(make(), session)
    with sync_recording(session, make()) as groups:
        out = groups.to_parquet(tmp_path / "groups.parquet")
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == len(expected)
    assert any(g.missing for g in expected)
    for row, g in zip(rows, expected, strict=True):
        lidar = g.frames["lidar"]
        imu = g.frames["imu"]
        assert isinstance(lidar, Frame)
        assert isinstance(imu, list)
        assert (row["t"], row["lidar_seq"], row["lidar_t"]) == (g.t, lidar.seq, lidar.t)
        cam = g.frames.get("cam")
        if cam is None:
            assert row["cam_seq"] is None
            assert row["cam_t"] is None
        else:
            assert isinstance(cam, Frame)
            assert (row["cam_seq"], row["cam_t"]) == (cam.seq, cam.t)
        assert row["imu_seq"] == [f.seq for f in imu]
        assert row["imu_t"] == [f.t for f in imu]


def test_the_grouped_recording_replays_to_the_same_groups(session: Path, tmp_path: Path) -> None:
    with sync_recording(session, nearest()) as groups:
        out = groups.write_recording(tmp_path / "grouped.hfr")
        expected = described(list(groups.groups()))
    assert described(streamed(nearest(), out)) == expected
    with open_recording(out) as log:
        assert log.metadata["sync"].startswith("nearest reference=lidar")
        assert log.summary().count == sum(len(g[1][2][1]) + 2 for g in expected)


@pytest.mark.parametrize(
    "path", sorted(CORPUS.rglob("*.hfr")), ids=lambda p: str(p.relative_to(CORPUS))
)
def test_corpus_recordings_group_as_replayed_damage_included(path: Path) -> None:
    with open_recording(path) as log:
        names = [n for n, s in log.summary().sensors.items() if s.count]
        gaps = np.diff([f.t for f in log.frames(names[:1])]) if names else np.array([])
    tol = int(np.median(gaps)) // 2 if len(gaps) else 0
    makers = [lambda: ExactTime(names, optional=names[1:])]
    if len(names) > 1:
        makers.append(lambda: Nearest(names[0], names, tol, optional=names[2:]))
    for make in makers:
        expected = streamed(make(), path)
        with sync_recording(path, make()) as groups:
            assert described(list(groups.groups())) == described(expected)
            assert [str(e) for e in groups.log.damage] == _damage(path)


def _damage(path: Path) -> list[str]:
    with open_recording(path) as log:
        list(log.frames())
        return [str(e) for e in log.damage]


def test_approximate_time_is_refused_with_the_reason(session: Path) -> None:
    with pytest.raises(ValueError, match="ApproximateTime has no offline form"):
        sync_recording(session, ApproximateTime(["cam", "lidar"]))  # type: ignore[arg-type]


def test_grouping_reads_no_payload_and_payloads_only_for_the_groups_asked(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamps come from the chunks' stamp blocks (1.4: no chunk decoded);
    after that, only chunks near the groups asked are decoded."""
    from recordings.hfr._reader import Recording

    decoded: list[int] = []
    real = Recording.decode_chunk

    def counting(self: Recording, chunk: Any) -> Any:
        decoded.append(chunk.index)
        return real(self, chunk)

    monkeypatch.setattr(Recording, "decode_chunk", counting)
    with sync_recording(session, nearest()) as groups:
        assert decoded == []  # every stamp from the blocks, no payload read
        assert groups.statistics.chunks_read == 0
        decoded.clear()
        first = list(groups.groups(0, 2))
        with open_recording(session) as log:
            wanted = {i for i, c in enumerate(log.chunks) if c.t_start <= first[-1].t + 60 * MS}
        assert set(decoded) <= wanted  # only chunks near the first two groups
        assert len(decoded) < len(groups.log.chunks) // 2


def test_parquet_without_pyarrow_says_how_to_get_it(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with (
        sync_recording(session, nearest()) as groups,
        pytest.raises(
            RuntimeError,
            match=r"writing Parquet needs pyarrow: pip install '\.\[parquet\]' in the",
        ),
    ):
        groups.to_parquet(tmp_path / "g.parquet")


def test_memory_follows_the_stamps_not_the_payloads(tmp_path: Path) -> None:
    """Grouping a recording of 24 MB of images holds about one decompressed chunk,
    whatever the payloads weigh: peak traced memory with 96 kB and with 6 kB images
    differs by much less than the payloads do."""
    import tracemalloc

    def peak(side: int) -> tuple[int, int]:
        path = tmp_path / f"big{side}.hfr"
        image = np.zeros((side, side, 3), np.uint8)
        with Recorder(path, chunk_bytes=1 << 20) as rec:
            for i in range(250):  # 25 s: cam 10 Hz, lidar 10 Hz, offset by 5 ms
                image[0, 0, 0] = i % 256
                rec.write(Frame("cam", i, i * 100 * MS, image))
                rec.write(Frame("lidar", i, i * 100 * MS + 5 * MS, image[:8]))
        tracemalloc.start()
        try:
            with sync_recording(path, Nearest("lidar", ["lidar", "cam"], 20 * MS)) as groups:
                assert len(groups) == 250
            return tracemalloc.get_traced_memory()[1], 250 * image.nbytes
        finally:
            tracemalloc.stop()

    big, big_payload = peak(180)  # 97 kB images: 24 MB of payload
    small, small_payload = peak(45)  # 6 kB images: 1.5 MB
    assert big_payload > 15 * small_payload
    assert big < big_payload / 4  # never the payloads at once
    assert big - small < 4 << 20  # a few chunks more (1 MiB each), not 22 MB more


def _dated_session(path: Path) -> None:
    """Three sensors stamped on the host monotonic clock (as a live pipeline aligns
    them), ending now: the chunks' wall anchors date every one."""
    rng = np.random.default_rng(11)
    end = time.monotonic_ns()
    events = []
    for name, hz in {"cam": 30, "lidar": 10, "imu": 200}.items():
        n = 2 * hz
        t = end - 3_000 * MS + np.arange(n) * (1_000_000_000 // hz) + rng.integers(0, MS, n)
        events += [(int(x), name, i) for i, x in enumerate(t)]
    with Recorder(path, chunk_bytes=4096) as rec:
        for t, name, i in sorted(events):
            rec.write(Frame(name, i, t, np.full(3, i, np.float32)))


def test_parquet_of_a_dated_recording_carries_utc_timestamps(tmp_path: Path) -> None:
    import pyarrow as pa

    from hyperframes.cli import main

    path = tmp_path / "dated.hfr"
    _dated_session(path)
    with open_recording(path) as log:
        summary = log.summary()
    assert summary.dated == {"cam", "lidar", "imu"}
    assert summary.wall_clock is not None
    assert len(summary.wall_clock.anchors) > 2
    with sync_recording(path, nearest()) as groups:
        api = groups.to_parquet(tmp_path / "api.parquet")
    cli = tmp_path / "cli.parquet"
    args = ["--policy", "nearest", "--reference", "lidar", "--sensors", "lidar", "cam", "imu"]
    args += ["--tolerance", "20ms", "--window", "imu=50ms:49ms", "-o", str(cli)]
    assert main(["sync", str(path), *args, "-q"]) == 0
    for out in (api, cli):
        table = pq.read_table(out)
        utc = pa.timestamp("ns", tz="UTC")
        assert table.schema.field("t_utc").type == utc
        assert table.schema.field("cam_t_utc").type == utc
        assert table.schema.field("imu_t_utc").type == pa.list_(utc)
        rows = table.to_pylist()
        assert len(rows) > 10
        raw = table.cast(
            pa.schema(
                [
                    pa.field(
                        f.name, pa.list_(pa.int64()) if pa.types.is_list(f.type) else pa.int64()
                    )
                    for f in table.schema
                ]
            )
        ).to_pylist()
        for row in raw:
            assert row["t_utc"] == summary.to_utc(row["t"])
            if row["cam_t"] is None:
                assert row["cam_t_utc"] is None
            else:
                assert row["cam_t_utc"] == summary.wall_clock.to_utc(row["cam_t"])
            assert row["imu_t_utc"] == [summary.wall_clock.to_utc(t) for t in row["imu_t"]]
        # The dates are this run's: within a minute of now.
        first = rows[0]["t_utc"]
        assert abs(first.timestamp() - time.time()) < 60


def test_parquet_of_an_undated_recording_has_no_utc_columns(session: Path, tmp_path: Path) -> None:
    with open_recording(session) as log:
        assert log.summary().utc_start is None
    with sync_recording(session, nearest()) as groups:
        out = groups.to_parquet(tmp_path / "g.parquet")
    names = pq.read_table(out).schema.names
    assert not [n for n in names if n.endswith("_utc")]
