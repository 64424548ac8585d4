"""Format 1.6: the frame details, what ``info`` reports of each frame beyond its stamps.

The footer (stamp index + frame details) must give exactly the columns one pass over
every frame gives, for any session: payloads of every kind, the meta keys the report
reads, many chunks, split parts; a damaged or missing record costs speed, never a
wrong report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusion import Frame
from hyperframes.cli._sensorstats import (
    SensorColumns,
    columns_from_footer,
    columns_from_frames,
    sensor_details,
)
from recordings import Recorder, open_recording
from recordings.hfr._details import MAX_NOTES, payload_brief, payload_size
from recordings.hfr._reindex import reindex
from recordings.hfr.video._playback import _count_from_details, _count_packets

POINT = np.dtype([("x", "<f4"), ("y", "<f4"), ("i", "u1")])
PARAMS = [
    {"codec": "h264", "width": 64, "height": 48, "pix_fmt": "yuv420p", "format": "rgb24"},
    {"codec": "h264", "width": 32, "height": 24, "pix_fmt": "yuv420p", "format": "gray"},
    {"codec": 5},  # does not parse: the params before it stay
]


def payloads() -> st.SearchStrategy[Any]:
    small = st.integers(1, 6).map(lambda n: np.arange(n, dtype=np.float64))
    image = st.sampled_from([(48, 64), (40, 40)]).map(lambda s: np.zeros(s, np.uint8))
    struct = st.integers(0, 400).map(lambda n: np.zeros(n, POINT))
    return st.one_of(
        small,
        image,
        struct,
        st.binary(max_size=64),
        st.just(None),
        st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=3),
        st.just(np.float32(2.5)),
        st.tuples(st.integers(0, 3)),
        st.just(np.zeros((2, 2, 2), np.int16)[:, 0]),  # not contiguous
    )


def metas() -> st.SearchStrategy[dict[str, Any]]:
    video = st.fixed_dictionaries(
        {"n": st.integers(0, 9), "key": st.booleans()},
        optional={"params": st.sampled_from(PARAMS)},
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "segment_start": st.booleans(),
            "t_read": st.integers(0, 10),
            "gap_ns": st.one_of(st.integers(0, 10**12), st.just(np.int64(7)), st.just("x")),
            "connection": st.sampled_from(["a:1", "b:2", ("c", 3), None]),
            "hf.video": video,
            "other": st.integers(-(10**6), 10**6),
        },
    )


@st.composite
def sessions(draw: st.DrawFn) -> list[Frame]:
    frames = []
    seqs: dict[str, int] = {}
    t = 0
    for _ in range(draw(st.integers(1, 60))):
        name = draw(st.sampled_from(["cam", "imu", "lidar"]))
        seq = seqs.get(name, 0) + draw(st.sampled_from([1, 1, 1, 2]))
        seqs[name] = seq
        t += draw(st.integers(0, 3_000_000_000))
        offset = draw(st.sampled_from([0, 0, -5_000, 7, -2_000_000_000]))
        arrival = draw(st.one_of(st.none(), st.integers(0, 5_000_000)))
        frames.append(
            Frame(
                name,
                seq,
                t,
                draw(payloads()),
                t_sensor=t + offset,
                t_arrival=None if arrival is None else t + arrival,
                meta=draw(metas()),
            )
        )
    return frames


def same(a: dict[str, SensorColumns], b: dict[str, SensorColumns]) -> None:
    assert list(a) == list(b)
    for name in a:
        x, y = a[name], b[name]
        for field in ("seq", "t", "t_sensor", "arrival", "has_arrival", "flags"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field), err_msg=field)
        # Shape numbers may differ; the shapes they name may not.
        assert [_shape(x, s) for s in x.size] == [_shape(y, s) for s in y.size], name
        assert (x.first, x.gaps, x.conn) == (y.first, y.gaps, y.conn), name


def _shape(c: SensorColumns, size: int) -> Any:
    return c.shapes[-2 - size] if size <= -2 else int(size)


def write(path: Path, frames: list[Frame], **options: Any) -> None:
    with Recorder(path, wall_clock=False, **options) as rec:
        for frame in frames:
            rec.write(frame)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=sessions(), chunk_bytes=st.sampled_from([256, 4096, 1 << 22]))
def test_the_footer_gives_what_every_frame_gives(
    tmp_path: Path, frames: list[Frame], chunk_bytes: int
) -> None:
    path = tmp_path / "s.hfr"
    write(path, frames, chunk_bytes=chunk_bytes)
    with open_recording(path) as log:
        footer = columns_from_footer(log)
        assert not isinstance(footer, str), footer
        same(footer, columns_from_frames(log))
        report, why = sensor_details(log)
        assert why is None
        with open_recording(path, use_index=False) as scanned:
            again, why = sensor_details(scanned)
        assert why == "the footer is not used"
        assert report == again
        for name in log.summary().sensors:
            assert _count_from_details(log.frame_details(), name) == _count_packets(log, name)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=sessions())
def test_each_part_of_a_split_recording_has_its_own_details(
    tmp_path: Path, frames: list[Frame]
) -> None:
    base = tmp_path / "split.hfr"
    write(base, frames, chunk_bytes=512, split_bytes=2048)
    parts = sorted(tmp_path.glob("split.*.hfr"))
    assert parts
    for part in parts:
        for old in tmp_path.glob("*.hfr.partial"):
            old.unlink()
        with open_recording(part) as log:
            footer = columns_from_footer(log)
            assert not isinstance(footer, str), footer
            same(footer, columns_from_frames(log))
    for part in parts:
        part.unlink()


@given(data=payloads())
def test_the_builder_sees_a_payload_as_a_reader_gets_it_back(
    tmp_path_factory: Any, data: Any
) -> None:
    path = tmp_path_factory.mktemp("one") / "one.hfr"
    write(path, [Frame("x", 0, 0, data)])
    with open_recording(path) as log:
        back = next(iter(log.frames())).data
    assert payload_size(back)[::2] == payload_size(data)[::2]
    assert payload_brief(back) == payload_brief(data)


def test_an_older_file_is_read_frame_by_frame_and_reindex_adds_the_details(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.hfr"
    frames = [
        Frame("imu", i, i * 5_000_000, np.arange(6.0), t_arrival=i * 5_000_000 + 10**6)
        for i in range(400)
    ]
    write(old, frames, stamp_blocks=False, chunk_bytes=2048)  # no blocks: no index, no details
    with open_recording(old) as log:
        assert log.frame_details() is None
        assert "no frame details" in str(log.frame_details_problem)
        before, why = sensor_details(log)
        assert why is not None
        new = tmp_path / "new.hfr"
        reindex(log, new)
    with open_recording(new) as log:
        assert log.frame_details() is not None
        after, why = sensor_details(log)
    assert why is None
    assert after == before


def test_a_damaged_details_record_costs_speed_not_the_report(tmp_path: Path) -> None:
    path = tmp_path / "d.hfr"
    frames = [Frame("imu", i, i * 1000, np.arange(3.0), meta={"gap_ns": i}) for i in range(50)]
    write(path, frames)
    with open_recording(path) as log:
        good, _ = sensor_details(log)
        assert log._details_at is not None
        pointer = log._details_at[1]
    raw = bytearray(path.read_bytes())
    raw[pointer[0] + pointer[1] - 3] ^= 0xFF  # inside the payload: its CRC fails
    path.write_bytes(bytes(raw))
    with open_recording(path) as log:
        assert log.frame_details() is None
        assert log.frame_details_problem == "the frame details fail their CRC"
        report, why = sensor_details(log)
    assert why == "the frame details fail their CRC"
    assert report == good


def test_notes_past_their_bound_send_info_back_to_the_frames(tmp_path: Path) -> None:
    path = tmp_path / "many.hfr"
    n = MAX_NOTES + 5
    frames = [Frame("imu", i, i * 1000, np.arange(3.0), meta={"gap_ns": 1}) for i in range(n)]
    write(path, frames)
    with open_recording(path) as log:
        assert log.frame_details().notes("imu").over  # type: ignore[union-attr]
        report, why = sensor_details(log)
    assert "incomplete" in str(why)
    assert len(report["imu"]["gaps_ns"]) == n


def test_a_cli_info_of_an_old_file_says_what_upgrades_it(tmp_path: Path) -> None:
    old = tmp_path / "old.hfr"
    write(old, [Frame("imu", i, i * 1000, np.arange(3.0)) for i in range(20)], stamp_blocks=False)
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run(
        [sys.executable, "-m", "hyperframes", "info", str(old)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert "read from every frame" in out
    assert f"hyperframes check {old} --reindex -o NEW.hfr" in out
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "hyperframes", "info", "--json", str(old)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert doc["details_from"] == "frames"
    assert "no frame details" in doc["frames_read_because"]


def test_the_writer_keeps_the_details_out_of_older_readers_way(tmp_path: Path) -> None:
    """A streaming reader (a pipe) and a scan skip the DETAILS record as an unknown kind."""
    path = tmp_path / "s.hfr"
    frames = [Frame("imu", i, i * 1000, np.arange(3.0)) for i in range(30)]
    write(path, frames)
    with open_recording(path, use_index=False) as scanned:
        assert [f.seq for f in scanned.frames()] == list(range(30))
        assert not scanned.damage
    from recordings.hfr._stream import read_stream

    with path.open("rb") as f:
        stream = read_stream(f)
        assert [fr.seq for fr in stream.frames()] == list(range(30))
        assert not stream.damage


CLIP = Path(__file__).resolve().parents[2] / "../shared/data/real/video/androidx_h265_bframes.mp4"


def test_a_copied_phone_clip_is_described_from_the_footer_as_pyav_counts_it(
    tmp_path: Path,
) -> None:
    """HEVC with B-frames recorded with ``copy``: info's packets, key frames and bytes
    from the frame details equal PyAV's demux of the clip and the pass over every packet."""
    import anyio
    import av

    from adapters import VideoSource
    from recordings import VideoRecorder

    hfr = tmp_path / "clip.hfr"

    async def run() -> None:
        source = VideoSource(CLIP, name="cam", keep_packets=True)
        async with (
            VideoRecorder(hfr, video={"cam": "copy"}, sensors=[source.spec]) as rec,
            source,
        ):
            async for frame in source.frames():
                await rec.send(frame)

    anyio.run(run)
    with av.open(str(CLIP)) as container:
        packets = [p for p in container.demux(video=0) if p.size]
        want = (len(packets), sum(p.is_keyframe for p in packets), sum(p.size for p in packets))

    def info(*flags: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "hyperframes", "info", "--json", *flags, str(hfr)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return json.loads(out)  # type: ignore[no-any-return]

    fast, slow = info(), info("--scan")
    assert (fast["details_from"], slow["details_from"]) == ("footer", "frames")
    assert fast["sensors"] == slow["sensors"]
    video = fast["sensors"]["cam"]["video"]
    assert (video["packets"], video["keyframes"], video["encoded_bytes"]) == want
    assert (video["codec"], video["width"], video["height"]) == ("hevc", 854, 480)
