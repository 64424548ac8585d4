"""Live publishers: the Foxglove WebSocket server and the ROS 2 DDS publisher, each with a
bounded queue and its own thread. Private; the face is :mod:`recordings.outputs`.
"""
