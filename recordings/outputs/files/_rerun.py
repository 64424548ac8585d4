"""A Rerun sink: images, point clouds and time series of each sync group, on the group's timeline.

Optional: needs ``rerun-sdk`` (the ``rerun`` extra: ``pip install '.[rerun]'`` in the
hyperframes clone), imported only when a :class:`RerunSink` is made. Each group is logged
at two times: the ``group`` sequence timeline (its number) and the ``t`` timestamp timeline
(the group's reference time), so the viewer steps through groups or plays
them in time. Members go to ``<sensor>`` entities: an image as ``Image``, a
point array as ``Points3D`` (coloured by intensity when it has one), an IMU
or any numeric payload as ``Scalars`` under ``<sensor>/<field>`` (a time
series' own stamp field ``t`` is device time, not a value: it is not plotted); the group
itself is ``groups/spread_ms`` (a plot of how tight the sync was).

Where it goes: ``viewer="auto"`` streams to a running viewer (one listening
on ``127.0.0.1:9876``, Rerun's default) and otherwise writes the ``.rrd``
file at ``path``; ``"connect"`` always streams, ``"save"`` always writes.
"""

from __future__ import annotations

import os
import socket
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np

from fusion import Frame, FrameGroup
from fusion.errors import ConfigError, UsageError
from recordings.outputs.encoders._kinds import classify, series_values

DEFAULT_PORT = 9876


def viewer_running(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> bool:
    """Whether something accepts connections where a Rerun viewer listens by default."""
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class RerunSink:
    """Logs frames and groups to Rerun; :attr:`target` says whether it streams or saved a file."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = "hyperframes.rrd",
        *,
        viewer: Literal["auto", "connect", "save"] = "auto",
        application_id: str = "hyperframes",
    ) -> None:
        try:
            import rerun as rr
        except ImportError as err:
            raise UsageError(
                "the Rerun sink needs the 'rerun-sdk' package: install the 'rerun' extra "
                "from the hyperframes clone (pip install '.[rerun]')"
            ) from err
        self._rr = rr
        self.rec = rr.RecordingStream(application_id)
        stream = viewer == "connect" or (viewer == "auto" and viewer_running())
        if stream:
            self.rec.connect_grpc()
            self.target = "viewer"
        else:
            if path is None:
                raise ConfigError("no Rerun viewer is running and no .rrd path was given")
            self.path: Path | None = Path(path)
            self.rec.save(self.path)
            self.target = str(self.path)
        self.groups = 0
        self.logged: Counter[str] = Counter()
        """Entities logged, by kind (``image``, ``points``, ``scalars``)."""
        self.skipped: Counter[tuple[str, str]] = Counter()

    def log_group(self, group: FrameGroup, kinds: dict[str, str] | None = None) -> None:
        """Log every member of ``group`` at the group's times; ``kinds`` maps sensor -> kind."""
        rr = self._rr
        self.rec.set_time("group", sequence=self.groups)
        self.rec.set_time("t", timestamp=np.datetime64(group.t, "ns"))
        self.rec.log("groups/spread_ms", rr.Scalars(group.spread / 1e6))
        for frame in group.members():
            self._log_member(frame, (kinds or {}).get(frame.sensor, "generic"))
        self.groups += 1

    def log_frame(self, frame: Frame, sensor_kind: str = "generic") -> None:
        """Log one frame on the ``t`` timeline only (for frames outside any group)."""
        self.rec.set_time("t", timestamp=np.datetime64(frame.t, "ns"))
        self._log_member(frame, sensor_kind)

    def _log_member(self, frame: Frame, sensor_kind: str) -> None:
        rr = self._rr
        kind = classify(frame, sensor_kind)
        data = frame.data
        if kind == "image":
            channels = 1 if data.ndim == 2 else data.shape[2]
            model = {1: "L", 3: "RGB", 4: "RGBA"}.get(channels)
            if model is None:
                self.skipped[(frame.sensor, f"{channels}-channel image")] += 1
                return
            if str(frame.meta.get("encoding", "")).startswith("bgr"):
                model = "BGR" if channels == 3 else "BGRA"
            self.rec.log(frame.sensor, rr.Image(data, color_model=model))
            self.logged["image"] += 1
        elif kind == "points":
            positions = np.stack([data["x"], data["y"], data["z"]], axis=-1).astype(np.float32)
            colors = None
            if "intensity" in (data.dtype.names or ()):
                value = np.asarray(data["intensity"], np.float32)
                span = float(value.max() - value.min()) if value.size else 0.0
                level = ((value - value.min()) / span * 255 if span else value * 0).astype(np.uint8)
                colors = np.stack([level, 255 - level, np.full_like(level, 128)], axis=-1)
            self.rec.log(frame.sensor, rr.Points3D(positions, colors=colors))
            self.logged["points"] += 1
        elif kind in ("imu", "gnss", "odometry", "pose", "series", "record"):
            for name, values in series_values(data, device_time=False):
                self.rec.log(f"{frame.sensor}/{name}", rr.Scalars(values))
                self.logged["scalars"] += 1
        elif kind in ("encoded_image", "video"):
            self.skipped[(frame.sensor, f"{kind} frames are not logged to Rerun")] += 1
        else:
            self.skipped[(frame.sensor, kind)] += 1

    def close(self) -> None:
        """Flush and finish the stream or file."""
        self.rec.flush()
        self.rec.disconnect()

    def __enter__(self) -> RerunSink:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
