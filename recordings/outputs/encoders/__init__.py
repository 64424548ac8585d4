"""Frames as messages: ROS 2 (CDR, through rosbags' type store) and Foxglove schemas,
shared by the file exports and the live publishers. Private; the face is :mod:`recordings.outputs`.
"""
