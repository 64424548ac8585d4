"""The demo: a synthetic session run through the whole path, and its report image.

:mod:`~hyperframes.demo._session` builds and runs the session (H.264 camera
read back through ``VideoSource``, LiDAR, IMU, online clocks, two models, a
recording and a replay check); :mod:`~hyperframes.demo._report` draws
``demo-report.png``. The ``hyperframes demo`` command drives both.
"""

from hyperframes.demo._report import ReportData, times_real_time, write_report
from hyperframes.demo._session import RATES, TOLERANCE_NS, DemoResult, run_session

__all__ = [
    "RATES",
    "TOLERANCE_NS",
    "DemoResult",
    "ReportData",
    "run_session",
    "times_real_time",
    "write_report",
]
