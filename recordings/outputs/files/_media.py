"""``--to mp4`` and ``--to pcd``: a camera sensor as a video file, LiDAR sweeps as PCD files.

MP4 from a sensor recorded as encoded video (:mod:`recordings.hfr.video`):
:func:`remux_mp4` copies the recorded packets into the MP4 without decoding
or re-encoding them (the muxer only changes H.264/H.265 framing from start
codes to length prefixes, and packets copied from a length-prefixed source
get their parameter sets in front of key frames; the NAL units are the
recorded ones). Each
packet's presentation time is its frame's ``t`` minus the first frame's, in
microseconds; decode times are the same times in decode order, shifted back
by the stream's reorder delay, so B-frame tracks stay valid. Every packet
carries its duration (:func:`_durations`), so the last one is read back too.

Either MP4 (or MKV: ``fmt="matroska"``) can carry an audio sensor's track
beside the video (:class:`recordings.outputs.files._audio.AudioTrack`), both timed
from the same zero, the earlier of the two first frames.

MP4 from frames of pixels: frames are encoded with PyAV (H.264 by libx264, MPEG-4 part 2 where
libx264 is missing) at variable frame rate: each frame's presentation time
is its ``t`` minus the first frame's, in microseconds (the stream's time
base), so a decoder gets the recorded timing back to the microsecond, gaps
and jitter included. Frames whose time does not increase are skipped and
counted, since a video stream cannot hold them.

PCD: one binary PCD v0.7 file per sweep, named ``<sensor>-<seq>-<t>.pcd``
with the sensor name made safe by :func:`recordings.outputs.files._names.safe_filename`
(a name from a file never picks the folder),
with every numeric field of the point array (``x y z intensity ring ...``);
:func:`adapters.lidar._pcd.read_pcd` and PCL/Open3D read them back.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from fusion import Frame
from recordings.outputs.files._audio import AudioTrack
from recordings.outputs.files._names import inside, safe_filename

TIME_BASE = Fraction(1, 1_000_000)
"""MP4 stream time base: presentation times are microseconds from the first frame."""

_PCD_TYPES = {"f": "F", "i": "I", "u": "U"}


def _video_codec() -> str:
    import av

    return "libx264" if "libx264" in av.codecs_available else "mpeg4"


def export_mp4(
    frames: Iterable[Frame],
    path: str | os.PathLike[str],
    *,
    crf: int = 18,
    fmt: str = "mp4",
    audio: AudioTrack | None = None,
    zero: int | None = None,
) -> tuple[int, Counter[str]]:
    """Encode image frames of one sensor to ``path``; ``(frames written, skipped by reason)``.

    ``fmt``: the container (``mp4``, ``matroska``). ``audio``: a track muxed beside the
    video (:mod:`recordings.outputs.files._audio`), its times and the video's counted from
    ``zero`` (ns; default: the first frame's ``t``)."""
    import av

    skipped: Counter[str] = Counter()
    written = 0
    container: Any = None
    stream: Any = None
    t0 = last_pts = None
    try:
        for frame in frames:
            image = frame.data
            if (
                not isinstance(image, np.ndarray)
                or image.dtype != np.uint8
                or image.ndim
                not in (
                    2,
                    3,
                )
            ):
                skipped["not an 8-bit image"] += 1
                continue
            if container is None:
                container, stream = _open_mp4(av, path, image, crf, fmt, audio)
                t0 = frame.t if zero is None else min(zero, frame.t)
                if audio is not None:
                    audio.open(av, container, fmt)
            assert t0 is not None
            pts = (frame.t - t0) // 1000
            if last_pts is not None and pts <= last_pts:
                skipped["time does not increase"] += 1
                continue
            if image.shape[:2] != (stream.height, stream.width):
                skipped["size differs from the first frame"] += 1
                continue
            pix = "gray" if image.ndim == 2 else {3: "rgb24", 4: "rgba"}.get(image.shape[2])
            if pix is None:
                skipped["not 1, 3 or 4 channels"] += 1
                continue
            picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format=pix)
            picture.pts, picture.time_base = pts, TIME_BASE
            if audio is not None:
                audio.mux_until(frame.t)
            container.mux(stream.encode(picture))
            last_pts = pts
            written += 1
        if container is not None:
            container.mux(stream.encode(None))
            if audio is not None:
                audio.close()
    finally:
        if container is not None:
            container.close()
    return written, skipped


def _mux_options(fmt: str, audio: AudioTrack | None) -> dict[str, str] | None:
    """With an audio track, an MP4's edit lists in microseconds (FFmpeg's default is ms), so
    an audio track that starts after the video is placed to the microsecond."""
    return {"movie_timescale": "1000000"} if fmt == "mp4" and audio is not None else None


_ANNEXB_CODECS = ("h264", "hevc")
_ENCODER_OPTIONS = {"ffv1": {"slicecrc": "1"}}
"""Options the video recorder's encoders add, so the muxer's codec configuration matches."""


def remux_mp4(
    frames: Callable[[], Iterable[Frame]],
    path: str | os.PathLike[str],
    *,
    fmt: str = "mp4",
    audio: AudioTrack | None = None,
    zero: int | None = None,
) -> tuple[int, Counter[str]]:
    """Copy a video sensor's recorded packets into an MP4; ``(packets written, skipped)``.

    ``fmt``, ``audio`` and ``zero`` as for :func:`export_mp4`.

    ``frames`` is called twice (times first, then the packets), so the
    packets are never all in memory. H.264/H.265 packets go to the muxer as
    Annex B (:class:`~recordings.outputs.encoders._annexb.VideoTrack`), which takes the
    codec configuration from their parameter sets; other codecs get it from
    their encoder, checked against the recorded one by decoding the first
    key frame with both (``ValueError`` when they differ: use ``--reencode``).
    Every packet from the first key packet on is written or counted in ``skipped``
    by reason; times come from :func:`remux_times`.
    """
    import av

    from recordings.outputs.encoders._annexb import VideoTrack

    skipped: Counter[str] = Counter()
    times, params, first_key = _scan_packets(frames())
    if params is None:
        return 0, skipped
    pts_list, dts_list = remux_times(times, zero)
    durations = _durations(pts_list)
    codec = str(params["codec"])
    container = av.open(os.fspath(path), "w", format=fmt, options=_mux_options(fmt, audio))
    track = VideoTrack() if codec in _ANNEXB_CODECS else None
    written = 0
    # A key packet decodes alone: each one of a codec without Annex B framing to
    # check (FFV1 records every frame as one) is decoded (cheaper than the encode
    # --reencode adds), so garbage is counted, not copied.
    check = _key_decoder(av, params) if track is None else None
    try:
        stream = _remux_stream(
            av, container, params, first_key, lambda: audio and audio.open(av, container, fmt)
        )
        last_dts = None
        for i, (frame, key) in enumerate(_from_first_key(frames(), skipped)):
            if i >= len(pts_list):
                break
            pts, dts = pts_list[i], dts_list[i]
            if last_dts is not None and dts <= last_dts:
                skipped["time does not increase"] += 1
                continue
            data = _packet_data(av, frame, key, codec, track, check)
            if isinstance(data, str):
                skipped[data] += 1
                continue
            packet = av.Packet(data)
            packet.pts, packet.dts, packet.time_base = pts, dts, TIME_BASE
            packet.duration = durations[pts]
            packet.stream = stream
            packet.is_keyframe = key
            if audio is not None:
                audio.mux_until(frame.t)
            container.mux(packet)
            last_dts = dts
            written += 1
        if audio is not None:
            audio.close()
    finally:
        container.close()
    return written, skipped


def _video_meta(frame: Frame) -> dict[str, Any] | None:
    """A recorded video packet's record (:data:`recordings.hfr.video.META_KEY`), or ``None``
    when ``frame`` is not one (no record, or its data is not bytes)."""
    from recordings.hfr.video import META_KEY

    video = frame.meta.get(META_KEY)
    if not isinstance(video, dict) or not isinstance(frame.data, (bytes, bytearray)):
        return None
    return video


def _scan_packets(frames: Iterable[Frame]) -> tuple[list[int], dict[str, Any] | None, bytes]:
    """The first pass: the times of the packets from the first key packet on, that
    packet's track parameters (``None``: no key packet) and its bytes."""
    times: list[int] = []
    params: dict[str, Any] | None = None
    first_key = b""
    for frame in frames:
        video = _video_meta(frame)
        if video is None:
            continue
        if params is None:
            if not isinstance(video.get("params"), dict):
                continue  # before the first key packet: cannot start there
            params, first_key = video["params"], bytes(frame.data)
        times.append(frame.t)
    return times, params, first_key


def remux_times(times: list[int], zero: int | None = None) -> tuple[list[int], list[int]]:
    """Presentation and decode times (us) of packets stamped ``times`` (ns, decode order).

    A packet's presentation time is its ``t`` minus the zero (the earliest of
    ``times`` and ``zero``), in whole microseconds; decode times are the same
    times sorted, shifted back by the stream's reorder delay, so no packet
    decodes after it is shown (``dts[i] <= pts[i]``) and decode times never
    go back. Pure: the muxer skips (and counts) a packet whose decode time does
    not increase past the last one written (equal ``t``)."""
    if not times:
        return [], []
    t0 = min(times) if zero is None else min(zero, *times)
    pts_list = [(t - t0) // 1000 for t in times]
    ordered = sorted(pts_list)
    delay = max(p - q for p, q in zip(ordered, pts_list, strict=True))
    return pts_list, [q - delay for q in ordered]


def _from_first_key(frames: Iterable[Frame], skipped: Counter[str]) -> Iterator[tuple[Frame, bool]]:
    """The second pass: each recorded packet from the first key packet on, and whether it
    is a key packet; packets before that are counted in ``skipped``."""
    started = False
    for frame in frames:
        video = _video_meta(frame)
        if video is None:
            continue
        if not started:
            if not isinstance(video.get("params"), dict):
                skipped["packet before the track's first key frame"] += 1
                continue
            started = True
        yield frame, bool(video.get("key"))


def _packet_data(
    av: Any, frame: Frame, key: bool, codec: str, track: Any, check: Any
) -> bytes | str:
    """The bytes to mux for a recorded packet (Annex B for ``track``'s codecs), or why
    it is left out: not Annex B, or a key packet ``check`` cannot decode (damaged)."""
    data = bytes(frame.data)
    if track is not None:
        track.update(frame.meta)
        data = track.annexb(data, key)
        if not _is_annexb(data):
            return f"not {codec} data (a damaged packet)"
    elif check is not None and key:
        try:
            check.decode(av.Packet(data))
        except (av.error.FFmpegError, ValueError):
            return f"does not decode as {codec} (a damaged packet)"
    return data


LONE_PACKET_US = 33_333
"""The duration (us) a lone packet gets: one frame at the video recorder's default 30 Hz."""


def _durations(pts: list[int]) -> dict[int, int]:
    """Each presentation time's duration (us): the next later time minus it, in
    presentation order; the last takes the interval before it (a lone one
    :data:`LONE_PACKET_US`). Every copied packet gets one, so an MP4's last sample
    has a duration and its edit list ends after the last picture: without it,
    FFmpeg's demuxer drops the last packet (two packets: the second lost)."""
    ordered = sorted(set(pts))
    out = {a: b - a for a, b in itertools.pairwise(ordered)}
    if ordered:
        out[ordered[-1]] = out[ordered[-2]] if len(ordered) > 1 else LONE_PACKET_US
    return out


def _remux_stream(
    av: Any,
    container: Any,
    params: dict[str, Any],
    first_key: bytes,
    add_streams: Callable[[], object] = lambda: None,
) -> Any:
    """The MP4's video stream for ``params``' codec, its configuration checked;
    ``add_streams`` adds the container's other streams before its header is written."""
    codec = str(params["codec"])
    width, height = int(params["width"]), int(params["height"])
    if codec in _ANNEXB_CODECS:
        stream = container.add_mux_stream(codec, width=width, height=height)
        stream.time_base = TIME_BASE
        add_streams()
        return stream
    from recordings.hfr.video import parse_codec

    stream = container.add_stream(codec)
    stream.width, stream.height = width, height
    stream.pix_fmt = str(params["pix_fmt"])
    stream.time_base = TIME_BASE
    options = dict(_ENCODER_OPTIONS.get(codec, {}))
    encoder = str(params.get("encoder") or "")
    if encoder and encoder != "copy":
        options.update(parse_codec(encoder).options)
    stream.options = options
    add_streams()
    container.start_encoding()  # the encoder makes the configuration the muxer stores
    recorded = bytes(params.get("extradata") or b"")
    made = bytes(stream.codec_context.extradata or b"")
    if made != recorded and _decode_first(av, params, first_key, recorded) is None:
        raise ValueError(
            f"{codec} packets cannot be copied into an MP4: the track's first key frame "
            "does not decode with its own recorded configuration (the packets are damaged)"
        )
    if made != recorded and not _same_picture(av, params, first_key, recorded, made):
        raise ValueError(
            f"{codec} packets cannot be copied into an MP4 here: the muxer's codec "
            "configuration does not decode them like the recorded one (use --reencode)"
        )
    return stream


def _key_decoder(av: Any, params: dict[str, Any]) -> Any:
    """A one-thread decoder of the recorded configuration (None if there is none)."""
    codec = str(params["codec"])
    try:
        ctx = av.CodecContext.create(codec, "r")
    except (av.error.FFmpegError, ValueError):
        return None
    ctx.width, ctx.height = int(params["width"]), int(params["height"])
    ctx.thread_count = 1  # a picture per packet, at once
    if params.get("extradata"):
        ctx.extradata = bytes(params["extradata"])
    return ctx


def _is_annexb(data: bytes) -> bool:
    """Whether ``data`` is Annex B NAL units: a start code first, every unit's
    forbidden bit clear (random bytes fail at once; no decoding needed)."""
    if not (data.startswith(b"\x00\x00\x01") or data.startswith(b"\x00\x00\x00\x01")):
        return False
    units = data.replace(b"\x00\x00\x00\x01", b"\x00\x00\x01").split(b"\x00\x00\x01")
    return all(u and not u[0] & 0x80 for u in units[1:])


def _decode_first(
    av: Any, params: dict[str, Any], packet: bytes, extradata: bytes
) -> list[bytes] | None:
    """The planes of the picture ``packet`` decodes to with ``extradata``; None if none."""
    ctx = av.CodecContext.create(str(params["codec"]), "r")
    ctx.width, ctx.height = int(params["width"]), int(params["height"])
    if extradata:
        ctx.extradata = extradata
    try:
        decoded = [*ctx.decode(av.Packet(packet)), *ctx.decode(None)]
    except (av.error.FFmpegError, ValueError):
        return None
    return [bytes(plane) for plane in decoded[0].planes] if decoded else None


def _same_picture(
    av: Any, params: dict[str, Any], packet: bytes, recorded: bytes, made: bytes
) -> bool:
    """Whether ``packet`` decodes to the same picture with either codec configuration."""
    a = _decode_first(av, params, packet, recorded)
    return a is not None and a == _decode_first(av, params, packet, made)


def _open_mp4(
    av: Any,
    path: str | os.PathLike[str],
    image: np.ndarray,
    crf: int,
    fmt: str = "mp4",
    audio: AudioTrack | None = None,
) -> Any:
    height, width = image.shape[:2]
    container = av.open(os.fspath(path), "w", format=fmt, options=_mux_options(fmt, audio))
    codec = _video_codec()
    stream = container.add_stream(codec, rate=30)
    stream.width, stream.height = width, height
    stream.pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
    stream.time_base = TIME_BASE
    stream.codec_context.time_base = TIME_BASE
    if codec == "libx264":
        # No B-frames: decode order is presentation order, and any player seeks cleanly.
        stream.options = {"crf": str(crf), "bf": "0"}
    return container, stream


def write_pcd(path: str | os.PathLike[str], points: np.ndarray) -> None:
    """Write a structured point array as a binary PCD v0.7 file (numeric fields only)."""
    names, sizes, types, counts, columns = [], [], [], [], []
    for name in points.dtype.names or ():
        sub = points.dtype.fields[name][0]  # type: ignore[index]
        base = sub.base if sub.subdtype is not None else sub
        letter = _PCD_TYPES.get(base.kind)
        if letter is None:
            continue
        names.append(name)
        sizes.append(str(base.itemsize))
        types.append(letter)
        counts.append(str(int(np.prod(sub.shape)) if sub.subdtype is not None else 1))
        columns.append((name, base.newbyteorder("<"), sub.shape))
    packed = np.empty(len(points), np.dtype([(n, d, s) for n, d, s in columns]))
    for name in names:
        packed[name] = points[name]
    header = (
        "# .PCD v0.7 - written by hyperframes\n"
        "VERSION 0.7\n"
        f"FIELDS {' '.join(names)}\n"
        f"SIZE {' '.join(sizes)}\n"
        f"TYPE {' '.join(types)}\n"
        f"COUNT {' '.join(counts)}\n"
        f"WIDTH {len(points)}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\n"
        f"POINTS {len(points)}\nDATA binary\n"
    )
    with open(path, "wb") as out:
        out.write(header.encode("ascii"))
        out.write(packed.tobytes())


def export_pcd(frames: Iterable[Frame], folder: str | os.PathLike[str]) -> tuple[int, Counter[str]]:
    """Write each point-array frame to ``folder/<sensor>-<seq>-<t>.pcd``."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    skipped: Counter[str] = Counter()
    for frame in frames:
        data = frame.data
        names = getattr(getattr(data, "dtype", None), "names", None)
        if names is None or not {"x", "y", "z"} <= set(names):
            skipped["not a point array"] += 1
            continue
        name = f"{safe_filename(frame.sensor)}-{frame.seq:06d}-{frame.t}.pcd"
        write_pcd(inside(out, name), data)
        written += 1
    return written, skipped
