"""Write sources for sensors hyperframes has never seen, sync them, record them.

Two serial devices, two adapters, each a ``Source`` subclass with a
``SensorSpec``, blocking reads in a worker thread and bad lines counted
instead of raised:

* ``Thermometer``, the smallest adapter (README.md and docs/sync.md show this
  one): ``<ms since power-on>,<celsius>`` lines, one float per frame;
* ``Anemometer``, an imaginary ultrasonic anemometer printing
  ``$WIND,<ms since power-on>,<speed m/s>,<direction deg>*<checksum>`` every
  100 ms: checksums checked, frames whose ``data`` is a structured array.

Both run through a ``SyncHub`` with the ``Nearest`` policy (one group per
temperature reading), every group is recorded to a ``.hfr`` frame log and the
log is read back. No hardware, no network, about a second:

    python examples/custom_adapter.py
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

import anyio
import numpy as np

from fusion import Frame, Nearest, SensorSpec, Source, SyncHub
from recordings import Recorder, open_recording

WIND = np.dtype([("speed", "f4"), ("direction", "f4")])


class Thermometer(Source):
    """A serial thermometer printing 'millis,celsius' lines; a bad line is counted, not raised."""

    def __init__(self, lines: Iterable[bytes], name: str = "temp") -> None:
        super().__init__(SensorSpec(name, kind="generic", rate_hz=1.0))
        self.lines = iter(lines)  # any blocking line reader: a pyserial Serial, a socket file

    async def frames(self) -> AsyncIterator[Frame]:
        while (line := await self.run_blocking(next, self.lines, None)) is not None:
            try:
                millis, celsius = line.split(b",")
                t_sensor, value = int(millis) * 1_000_000, float(celsius)
            except ValueError:
                self.count_error("undecodable", f"{self.name}: cannot parse {line!r}")
                continue
            yield self.make_frame(t_sensor, np.float64(value), t_arrival=self.now())


class Anemometer(Source):
    """Frames from a ``$WIND`` serial anemometer; one frame per line."""

    def __init__(self, port: Iterator[bytes], name: str = "wind") -> None:
        super().__init__(SensorSpec(name, kind="generic", rate_hz=10.0, meta={"unit": "m/s"}))
        self.port = port  # anything with blocking reads: pyserial's Serial, a socket file...

    async def frames(self) -> AsyncIterator[Frame]:
        while True:
            line = await self.run_blocking(next, self.port, None)  # never block the loop
            if line is None:  # the device closed
                return
            parsed = self.parse(line)
            if parsed is not None:
                t_sensor, sample = parsed
                yield self.make_frame(t_sensor, sample, t_arrival=self.now())

    def parse(self, line: bytes) -> tuple[int, np.ndarray] | None:
        """Checked parse of one line; a bad line is counted and skipped, never raised."""
        body, _, checksum = line.strip().partition(b"*")
        fields = body.split(b",")
        if len(fields) != 4 or fields[0] != b"$WIND":
            self.count_error("bad_line", f"not a $WIND sentence: {line!r}")
            return None
        if checksum != b"%02X" % (sum(body) % 256):
            self.count_error("bad_checksum", f"checksum {checksum!r} does not match: {line!r}")
            return None
        sample = np.array([(float(fields[2]), float(fields[3]))], WIND)
        return int(fields[1]) * 1_000_000, sample  # ms since power-on -> ns


def fake_serial_port(seconds: float) -> Iterator[bytes]:
    """Stands in for the device: 10 lines/s, one of them corrupted on the wire."""
    for i in range(int(seconds * 10)):
        body = b"$WIND,%d,%.2f,%.1f" % (i * 100, 3 + np.sin(i / 5), (i * 7) % 360)
        line = body + b"*%02X\r\n" % (sum(body) % 256)
        yield line.replace(b"$WIND", b"$W1ND") if i == 13 else line


async def main() -> None:
    wind = Anemometer(fake_serial_port(3.0))
    thermo = Thermometer([b"0,18.0", b"1000,18.1", b"18.2", b"2000,18.2", b"3000,18.3"])
    # One group per temperature reading, with every wind sample within ±0.5 s of it.
    policy = Nearest(
        "temp", ["temp", "wind"], tolerance=0, windows={"wind": (500_000_000, 499_999_999)}
    )
    hub = SyncHub(policy)
    path = Path(tempfile.mkdtemp()) / "wind.hfr"  # a temp dir, so the example leaves no files
    groups = 0
    with Recorder(path, sensors=[wind.spec, thermo.spec]) as recorder:
        async with wind, thermo, hub.open([wind, thermo]) as stream:
            async for group in stream:
                groups += 1
                for frame in group.members():
                    recorder.write(frame)
    with open_recording(path) as log:
        counts = {name: s.count for name, s in log.summary().sensors.items()}
        first = next(iter(log.frames(sensors=["wind"])))
    print(f"{groups} groups; lines skipped: wind {dict(wind.errors)}, temp {dict(thermo.errors)}")
    print(f"recorded frames: {counts}; first wind frame read back: t={first.t} ns, {first.data}")
    assert groups == 4
    assert wind.errors == {"bad_line": 1}
    assert thermo.errors == {"undecodable": 1}


if __name__ == "__main__":
    anyio.run(main)
