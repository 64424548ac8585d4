"""adapters/video/_compat_av.py against the installed PyAV: the release is one it was checked
against, and FFmpeg's interrupt callback reads the clock through the name it replaces."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from adapters.video import _compat_av
from tests.compat import assert_checked_release


def test_pyav_is_a_release_the_compat_module_was_checked_against() -> None:
    assert_checked_release(_compat_av)


def test_ffmpegs_interrupt_callback_reads_the_replaced_clock() -> None:
    """In a fresh interpreter: with a stand-in clock in place, ``av.open`` of a silent UDP
    stream (0.3 s timeout) reads it while FFmpeg waits, and a stand-in that runs an hour ahead
    at each read ends an open with a 60 s timeout at FFmpeg's next poll (``ExitError``)."""
    script = textwrap.dedent(
        """
        import socket, time
        import av
        from adapters.video import _compat_av

        assert _compat_av.container_clock() is time
        class Clock:
            calls = 0
            step = 0.0
            now = 0.0
            def __getattr__(self, name):
                return getattr(time, name)
            def monotonic(self):
                Clock.calls += 1
                Clock.now = max(Clock.now + Clock.step, time.monotonic())
                return Clock.now
        assert _compat_av.replace_container_clock(Clock())
        assert not _compat_av.replace_container_clock(Clock())  # only over the module
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        for step, timeout in ((0.0, 0.3), (3600.0, 60.0)):
            Clock.calls, Clock.step = 0, step
            try:
                av.open(f"udp://127.0.0.1:{port}", format="mpegts", timeout=timeout).close()
            except av.error.ExitError:
                print(step, Clock.calls)
            else:
                raise AssertionError("a silent stream opened")
            if Clock.calls == 0:
                raise SystemExit("FFmpeg's interrupt callback never read the replaced clock")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=50, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    counts = [int(line.split()[1]) for line in out.stdout.splitlines()]
    assert len(counts) == 2, out.stdout
    assert all(n > 0 for n in counts), f"FFmpeg's callback never read the clock: {counts}"
