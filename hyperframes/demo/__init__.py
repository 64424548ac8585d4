"""The demo: a synthetic session run through the whole path, and its report image.

:mod:`~hyperframes.demo.session` builds and runs the session (H.264 camera
read back through ``VideoSource``, LiDAR, IMU, online clocks, two models, a
recording and a replay check); :mod:`~hyperframes.demo.report` draws
``demo-report.png``. The ``hyperframes demo`` command drives both.
"""
