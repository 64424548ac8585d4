"""Write small test videos with known timestamps (for tests, benchmarks and examples).

:func:`write_video` encodes a deterministic moving pattern with PyAV at exactly
the PTS values you give (constant or variable rate, any start), and can
overwrite chosen packets with random bytes after encoding, so a test knows
which timestamps are damaged. :func:`MpegTsSender` streams the same pattern
as MPEG-TS over UDP, paced in real time, like a network camera.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np


def pattern(index: int, width: int, height: int) -> np.ndarray[Any, Any]:
    """A ``(height, width, 3)`` uint8 image that differs from frame to frame."""
    y = np.arange(height, dtype=np.uint16)[:, None]
    x = np.arange(width, dtype=np.uint16)[None, :]
    img = np.empty((height, width, 3), np.uint8)
    img[..., 0] = (x * 2 + index * 3) & 0xFF
    img[..., 1] = (y * 2 + index * 5) & 0xFF
    img[..., 2] = ((x + y) + index * 7) & 0xFF
    return img


def write_video(
    path: str | Path,
    pts: Sequence[int],
    *,
    time_base: Fraction = Fraction(1, 1000),
    size: tuple[int, int] = (64, 48),
    codec: str = "libx264",
    rate: int = 30,
    gop: int = 10,
    options: dict[str, str] | None = None,
    corrupt: Iterable[int] = (),
    seed: int = 0,
    display_matrix: Sequence[int] | None = None,
    unparsable: Iterable[int] = (),
) -> list[int]:
    """Encode one frame per entry of ``pts`` (in ``time_base``) into ``path``.

    ``corrupt`` lists frame indexes (into ``pts``) whose packets get their
    payload overwritten with random bytes after the first 8. Returns the PTS
    of the corrupted packets. B-frames are off unless ``options`` turns them on.
    ``display_matrix`` (nine int32, FFmpeg's layout) is written as the
    stream's display matrix, as a phone does for a turned camera.
    ``unparsable`` lists packets by decode order (0 = the first packet
    written) whose first NAL unit gets its forbidden_zero_bit set, so an
    H.264 decoder refuses the packet as a whole (a bad NAL unit); their PTS
    are returned too. Meant for length-prefixed H.264 (MP4, Matroska).
    """
    width, height = size
    damaged = set(corrupt)
    wanted = {pts[i] for i in damaged}
    broken = set(unparsable)
    rng = random.Random(seed)
    hit: list[int] = []
    written = [0]
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        stream.time_base = time_base
        stream.codec_context.time_base = time_base
        opts = {"g": str(gop), "bf": "0"} if codec == "libx264" else {"g": str(gop)}
        stream.codec_context.options = {**opts, **(options or {})}
        if display_matrix is not None:
            stream.set_display_matrix(display_matrix)

        def mux(packets: list[av.Packet[Any]]) -> None:
            for packet in packets:
                view = memoryview(packet).cast("B")
                if packet.pts in wanted and packet.size > 8:
                    for j in range(8, len(view)):
                        view[j] = rng.randrange(256)
                    hit.append(packet.pts)
                if written[0] in broken and packet.size > 4 and packet.pts is not None:
                    view[4] |= 0x80  # after the 4-byte length: the NAL header
                    hit.append(packet.pts)
                written[0] += 1
                out.mux(packet)

        for i, t in enumerate(pts):
            frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
            frame.pts = t
            frame.time_base = time_base
            mux(stream.encode(frame))
        mux(stream.encode(None))
    return sorted(hit)


class MpegTsSender:
    """Streams H.264 in MPEG-TS to ``udp://host:port`` from a thread, paced at ``fps``.

    ``start()`` begins (PTS continue from ``first_index``); ``stop()`` ends the
    stream and closes the socket, like a camera that drops off the network.
    ``sent`` counts frames written.
    """

    def __init__(
        self,
        port: int,
        *,
        host: str = "127.0.0.1",
        fps: int = 50,
        size: tuple[int, int] = (64, 48),
        first_index: int = 0,
        gop: int = 5,
    ) -> None:
        self.url = f"udp://{host}:{port}?pkt_size=1316"
        self.fps = fps
        self.size = size
        self.first_index = first_index
        self.gop = gop
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mpegts-sender-{port}", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> MpegTsSender:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        width, height = self.size
        try:
            with av.open(self.url, "w", format="mpegts", options={"flush_packets": "1"}) as out:
                stream = out.add_stream("libx264", rate=self.fps)
                assert isinstance(stream, av.VideoStream)
                stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
                stream.codec_context.options = {
                    "g": str(self.gop),
                    "bf": "0",
                    "tune": "zerolatency",
                    "preset": "ultrafast",
                }
                period = 1.0 / self.fps
                next_t = time.monotonic()
                i = self.first_index
                while not self._stop.is_set():
                    frame = av.VideoFrame.from_ndarray(pattern(i, width, height), format="rgb24")
                    frame.pts = i
                    frame.time_base = Fraction(1, self.fps)
                    for packet in stream.encode(frame):
                        out.mux(packet)
                    self.sent += 1
                    i += 1
                    next_t += period
                    self._stop.wait(max(0.0, next_t - time.monotonic()))
        except BaseException as err:
            self.error = err
