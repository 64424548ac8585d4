"""File exports: MCAP (ROS 2, Foxglove), ROS 1 bags, MP4/MKV, WAV, PCD, Parquet, Rerun.
Private; the face is :mod:`recordings.outputs`.
"""
