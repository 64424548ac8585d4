"""``AudioSource`` on live inputs: RTP with an SDP file (L16 and Opus), RTSP pulled from a
real server (Debian's rtsp-server-perl, RTP over UDP) and received as a listening server
(RTP interleaved over TCP), capture devices (FFmpeg's ``lavfi``, ALSA through its ``file``
plugin), RTP packets lost on the way (a relay drops them) and a sender killed and
restarted (reconnect). Each is checked against PyAV's decode of the file ffmpeg sent:
samples equal after the codec, sample counts and PTS."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import av
import numpy as np
import pytest

from adapters.audio import AudioSource
from adapters.audio._decode import DEVICE_SLACK_S
from fusion._frames import Frame
from fusion.errors import ConfigError, SourceError
from tests.acceptance.audio_streams import (
    RATE,
    DroppingRelay,
    alsa_file_device,
    contiguous_at,
    make_sine,
    opus_pre_skip,
    pyav_decode,
    rtp_args,
    rtsp_server,
    timestamp,
    wait_mount,
    write_sdp,
)
from tests.acceptance.live_helpers import free_port, need_ffmpeg, wait_udp_bound


def collect(
    source: AudioSource,
    until: Callable[[list[Frame]], bool],
    *,
    limit_s: float = 30.0,
    start: Callable[[], None] | None = None,
) -> list[Frame]:
    """Frames of ``source`` until ``until(frames)`` holds (bounded by ``limit_s``);
    ``start`` runs in a thread once the source is iterating."""
    frames: list[Frame] = []

    async def run() -> None:
        with anyio.move_on_after(limit_s):
            async with source:
                if start is not None:
                    threading.Thread(target=start, daemon=True).start()
                async for frame in source.frames():
                    frames.append(frame)
                    if until(frames):
                        return

    anyio.run(run)
    return frames


def samples(frames: list[Frame]) -> int:
    return sum(int(f.data.shape[1]) for f in frames)


def joined(frames: list[Frame]) -> np.ndarray:
    return np.concatenate([f.data for f in frames], axis=1)


ORIGIN = """Where an RTP timeline starts is FFmpeg's (rtpdec): at the first packet's
timestamp, or placed through the NTP time of an RTCP sender report that came first (the
sender's wall clock: a few ms either way). Within a connection every sample index is
exact."""


def check_contiguous(frames: list[Frame]) -> None:
    """Each frame starts where the last ended; t_sensor is its first sample's time."""
    for a, b in itertools.pairwise(frames):
        assert b.meta["sample_index"] == a.meta["sample_index"] + a.data.shape[1]
    assert [f.t_sensor for f in frames] == [
        f.meta["sample_index"] * 10**9 // f.meta["rate"] for f in frames
    ]


def run_sender(args: list[str]) -> None:
    subprocess.run(args, check=True, timeout=30, stdin=subprocess.DEVNULL)


def test_rtp_l16_from_an_sdp_file_equals_the_wav_and_a_dropped_packet_is_a_counted_gap(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 1.0)
    want = pyav_decode(wav)
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    relay = DroppingRelay(to=port, drop={20})
    source = AudioSource(sdp, read_timeout=2.0)
    assert source.live
    assert source.options.reconnect

    def send() -> None:
        wait_udp_bound(port, timeout=20)
        run_sender(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{relay.listen}", realtime=False))

    try:
        frames = collect(
            source, lambda fs: samples(fs) + source.gap_samples >= want.shape[1], start=send
        )
    finally:
        relay.close()
    assert len(relay.dropped) == 1
    lost = (len(relay.dropped[0]) - 12) // 2  # L16: 2 bytes a sample after the RTP header
    assert relay.first_timestamp is not None
    hole = (timestamp(relay.dropped[0]) - relay.first_timestamp) % 2**32  # 48 kHz RTP clock
    assert 0 < hole < want.shape[1] - lost
    got = joined(frames)
    np.testing.assert_array_equal(got, np.delete(want, np.s_[hole : hole + lost], axis=1))
    before = [f for f in frames if f.meta["sample_index"] < hole]
    after = frames[len(before) :]
    assert before[-1].meta["partial"]  # the frame being filled went out short at the hole
    assert after[0].meta["sample_index"] == hole + lost  # PTS from the RTP timestamps
    check_contiguous(before)
    check_contiguous(after)
    assert source.errors["gap"] == 1
    assert source.gap_samples == lost
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted == relay.relayed  # one unit per RTP packet
    assert ledger.lost_total == 0
    assert source.opened is not None
    assert source.opened.codec == "pcm_s16be"
    assert all(f.t_arrival is not None for f in frames)


def test_rtp_opus_from_an_sdp_file_equals_pyavs_decode_of_the_ogg_after_its_pre_skip(
    tmp_path: Path,
) -> None:
    ogg = make_sine(tmp_path / "sine.ogg", 1.0, codec="libopus")
    want = pyav_decode(ogg)  # mono; PyAV drops the pre-skip the Ogg header states
    skip = opus_pre_skip(ogg)
    with av.open(str(ogg)) as c:
        packets = sum(1 for p in c.demux(audio=0) if p.size)
    port = free_port()
    sdp = write_sdp(ogg, "copy", port, tmp_path / "opus.sdp")
    assert "opus/48000/2" in sdp.read_text()  # RFC 7587: always 2 channels declared
    source = AudioSource(sdp, read_timeout=2.0)

    def send() -> None:
        wait_udp_bound(port, timeout=20)
        run_sender(rtp_args(ogg, "copy", f"rtp://127.0.0.1:{port}", realtime=False))

    frames = collect(source, lambda fs: samples(fs) >= packets * 960, start=send)
    got = joined(frames)
    assert got.shape == (2, packets * 960)  # every packet's 20 ms, RTP carries no pre-skip
    np.testing.assert_array_equal(got[0], got[1])  # a mono stream decoded as stereo
    np.testing.assert_array_equal(got[:1, skip : skip + want.shape[1]], want)
    check_contiguous(frames)
    assert abs(frames[0].meta["sample_index"]) < 960  # see ORIGIN
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted == packets
    assert source.opened is not None
    assert source.opened.codec == "opus"


def test_rtsp_pulled_from_a_real_server_over_udp_is_a_packet_aligned_run_of_the_file(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 10.0)  # margin for a late join; 1 s is read
    want = pyav_decode(wav)
    with rtsp_server() as (client, source_port):
        push = subprocess.Popen(
            [
                *(need_ffmpeg(), "-v", "error", "-nostdin", "-re", "-i", str(wav)),
                *("-c:a", "pcm_s16be", "-f", "rtsp", "-rtsp_transport", "udp"),
                f"rtsp://127.0.0.1:{source_port}/mic",
            ],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_mount(client, "mic")
            source = AudioSource(
                f"rtsp://127.0.0.1:{client}/mic", transport="udp", read_timeout=2.0
            )
            assert source.options.options["rtsp_transport"] == "udp"
            frames = collect(source, lambda fs: samples(fs) >= RATE)  # a second of it
        finally:
            push.kill()
            push.wait(10)
    got = joined(frames)
    offset = contiguous_at(got, want)  # joined mid-stream
    assert 0 <= offset <= want.shape[1] - RATE
    check_contiguous(frames)
    # the timeline: RTP timestamps, placed by the relayed RTCP sender reports (FFmpeg's
    # rtpdec), so it need not start at 0; within it every sample is where PTS says
    assert source.gap_samples == 0
    assert not source.errors
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted > 0


def test_rtsp_received_as_a_listening_server_over_tcp_equals_the_wav(tmp_path: Path) -> None:
    wav = make_sine(tmp_path / "sine.wav", 1.0)
    want = pyav_decode(wav)
    port = free_port()
    url = f"rtsp://127.0.0.1:{port}/live"
    source = AudioSource(
        url, transport="tcp", options={"rtsp_flags": "listen"}, open_timeout=20, read_timeout=2
    )

    def send() -> None:
        wait_tcp_listen(port)
        run_sender(
            [
                *(need_ffmpeg(), "-v", "error", "-nostdin", "-i", str(wav)),
                *("-c:a", "pcm_s16be", "-f", "rtsp", "-rtsp_transport", "tcp", url),
            ]
        )  # fmt: skip

    frames = collect(source, lambda fs: samples(fs) >= want.shape[1], start=send)
    np.testing.assert_array_equal(joined(frames), want)
    check_contiguous(frames)
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted > want.shape[1] // 1460  # RTP packets


def wait_tcp_listen(port: int, timeout: float = 20.0) -> None:
    """Wait until a socket listens on TCP ``port`` (``/proc/net/tcp``, state 0A), without
    connecting to it (a listening RTSP demuxer takes the first connection as its sender)."""
    want = f":{port:04X}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as f:
            if any(
                (cols := line.split())[1].endswith(want) and cols[3] == "0A" for line in list(f)[1:]
            ):
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on TCP port {port} within {timeout} s")


def test_a_sender_killed_and_restarted_is_a_counted_silence_and_reconnect(
    tmp_path: Path,
) -> None:
    wav = make_sine(tmp_path / "sine.wav", 0.5)
    want = pyav_decode(wav)
    n = want.shape[1]
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    source = AudioSource(sdp, read_timeout=0.4, backoff=(0.05, 0.2))

    def send() -> None:
        wait_udp_bound(port, timeout=20)
        run_sender(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}", realtime=False))
        deadline = time.monotonic() + 20
        while not source.errors["silence"] and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the reopened input binds again
        wait_udp_bound(port, timeout=20)
        run_sender(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}", realtime=False))

    frames = collect(source, lambda fs: samples(fs) >= 2 * n, start=send)
    first = [f for f in frames if "connection" not in f.meta]
    second = frames[len(first) :]
    for part in (first, second):
        np.testing.assert_array_equal(joined(part), want)
        check_contiguous(part)
        assert abs(part[0].meta["sample_index"]) < 960  # its own PTS epoch (see ORIGIN)
    assert len(first) == n // 960  # 0.5 s: 25 whole frames, the last not partial
    assert second[0].meta["segment_start"]
    assert second[0].meta["connection"] == 1
    assert second[0].meta["gap_ns"] > 0.3e9  # at least the read timeout without data
    assert all(f.meta["connection"] == 1 for f in second)
    assert source.errors["silence"] == 1
    assert source.errors["reconnect"] == 1
    assert source.reconnects == 1
    assert "gap" not in source.errors  # a new epoch is a reconnect, not a PTS gap
    (said,) = source.error_messages["reconnect"]
    start, end = second[0].meta["sample_index"], first[-1].meta["sample_index"] + 960
    assert f"a new timeline, starting at sample {start} (the last ended at {end})" in said
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted
    assert ledger.lost_total == 0


def test_a_live_source_without_reconnect_ends_at_its_read_timeout(tmp_path: Path) -> None:
    wav = make_sine(tmp_path / "sine.wav", 0.2)
    port = free_port()
    sdp = write_sdp(wav, "pcm_s16be", port, tmp_path / "l16.sdp")
    source = AudioSource(sdp, read_timeout=0.3, reconnect=False)

    def send() -> None:
        wait_udp_bound(port, timeout=20)
        run_sender(rtp_args(wav, "pcm_s16be", f"rtp://127.0.0.1:{port}", realtime=False))

    with pytest.raises(SourceError, match=r"no data for 0.3 s \(read_timeout\)"):
        collect(source, lambda fs: False, start=send, limit_s=20)
    assert not source.errors["silence"]


def test_lavfi_as_a_capture_device_equals_pyavs_own_decode_of_the_same_graph() -> None:
    graph = "sine=frequency=1000:sample_rate=48000:duration=0.5"
    with av.open(graph, format="lavfi") as c:
        want = np.concatenate([f.to_ndarray() for f in c.decode(audio=0)], axis=1)
    assert want.dtype == np.int16
    source = AudioSource(device=f"lavfi:{graph}")
    assert source.live
    assert not source.options.reconnect
    assert source.options.input_format == "lavfi"
    assert source.options.url == graph
    frames = collect(source, lambda fs: False)  # to its end
    np.testing.assert_array_equal(joined(frames), want.astype(np.float32) / 32768)
    check_contiguous(frames)
    assert frames[0].meta["sample_index"] == 0
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted > 0


def test_alsa_capture_through_alsas_file_plugin_returns_the_files_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = tmp_path / "sine.raw"
    subprocess.run(
        [need_ffmpeg(), "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
         "-t", "1", "-ac", "1", "-f", "s16le", str(raw)],
        check=True,
    )  # fmt: skip
    want = np.fromfile(raw, dtype="<i2").astype(np.float32) / 32768.0
    for key, value in alsa_file_device(tmp_path, raw).items():
        monkeypatch.setenv(key, value)
    source = AudioSource(
        device="alsa:sine", options={"sample_rate": "48000", "channels": "1"}, read_timeout=3
    )
    frames = collect(source, lambda fs: samples(fs) >= 9600)  # 0.2 s, read at real rate
    got = joined(frames)
    assert got.shape[0] == 1
    np.testing.assert_array_equal(got[0], want[: got.shape[1]])
    assert source.opened is not None
    assert source.opened.codec == "pcm_s16le"
    # ALSA stamps each read with the host's clock; this device (a file read over ALSA's
    # null device) delivers slower than real time, so its clock runs ahead of the samples:
    # every jump past the slack is a counted gap, never an invented sample
    jumps = [
        b.meta["sample_index"] - (a.meta["sample_index"] + a.data.shape[1])
        for a, b in itertools.pairwise(frames)
    ]
    assert all(j == 0 or j > DEVICE_SLACK_S * RATE for j in jumps)
    # a partial last frame was sent short by the next jump, already counted
    ahead = int(frames[-1].meta["partial"])
    assert source.errors["gap"] == sum(1 for j in jumps if j) + ahead
    assert source.gap_samples - sum(jumps) > (DEVICE_SLACK_S * RATE if ahead else -1)
    assert source.gap_samples == sum(jumps) or ahead
    assert "overlap" not in source.errors
    ledger = source.ledgers()["audio"]
    assert ledger.received == ledger.emitted > 0


def test_device_strings_and_transport_are_checked_before_anything_opens() -> None:
    with pytest.raises(ConfigError, match="either url or device"):
        AudioSource()
    with pytest.raises(ConfigError, match="either url or device"):
        AudioSource("x.wav", device="alsa:hw:0")
    with pytest.raises(ConfigError, match="'<input>:<device>'"):
        AudioSource(device="hw:0")
    with pytest.raises(ConfigError, match="contradicts"):
        AudioSource(device="alsa:hw:0", input_format="pulse")
    with pytest.raises(ConfigError, match="rtsp:// URLs"):
        AudioSource("udp://127.0.0.1:5000", transport="tcp")
    with pytest.raises(ConfigError, match="backoff"):
        AudioSource("udp://127.0.0.1:5000", backoff=(0.0, 1.0))
    source = AudioSource(device="alsa:hw:0")
    assert (source.options.input_format, source.options.url) == ("alsa", "hw:0")


def test_a_capture_input_this_ffmpeg_lacks_is_named_with_those_it_has() -> None:
    missing = next(f for f in ("pulse", "avfoundation", "dshow") if f not in av.formats_available)
    source = AudioSource(device=f"{missing}:default", open_timeout=2)
    with pytest.raises(SourceError, match=f"no '{missing}' input; its capture inputs: .*lavfi"):
        collect(source, lambda fs: False, limit_s=10)
