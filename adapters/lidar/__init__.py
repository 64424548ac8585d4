"""LiDAR sources: Velodyne sweeps, Ouster scans (UDP / pcap), point-cloud files, processing."""

from adapters.lidar.calibration import Calibration, read_calibration
from adapters.lidar.kitti import read_kitti_bin, write_kitti_bin
from adapters.lidar.layouts import LAYOUTS, BinLayout, read_bin
from adapters.lidar.ouster import OusterSource
from adapters.lidar.ouster_packets import OUSTER_DTYPE
from adapters.lidar.pcap import PcapReader, UdpDatagram
from adapters.lidar.pcd import read_pcd, read_pcd_with_meta, write_pcd
from adapters.lidar.ply import read_ply
from adapters.lidar.pointcloud_files import PointCloudFiles
from adapters.lidar.points import VELODYNE_DTYPE, XYZI_DTYPE, from_xyz, xyz
from adapters.lidar.processing import BoxCrop, RangeCrop, RemoveOutliers, VoxelDownsample
from adapters.lidar.velodyne import VelodyneSource
from adapters.lidar.velodyne_assembler import SweepAssembler
from adapters.lidar.velodyne_decode import RawSweep
from adapters.lidar.velodyne_models import (
    ALPHA_PRIME,
    HDL_32E,
    HDL_64E_S2,
    HDL_64E_S3,
    MODELS,
    PUCK_HI_RES,
    VLP_16,
    VLP_32C,
    VLS_128,
    VelodyneModel,
)
from adapters.lidar.velodyne_packets import WRAP_PERIOD_NS
from fusion._exports import rewrite_module

__all__ = [
    "ALPHA_PRIME",
    "HDL_32E",
    "HDL_64E_S2",
    "HDL_64E_S3",
    "LAYOUTS",
    "MODELS",
    "OUSTER_DTYPE",
    "PUCK_HI_RES",
    "VELODYNE_DTYPE",
    "VLP_16",
    "VLP_32C",
    "VLS_128",
    "WRAP_PERIOD_NS",
    "XYZI_DTYPE",
    "BinLayout",
    "BoxCrop",
    "Calibration",
    "OusterSource",
    "PcapReader",
    "PointCloudFiles",
    "RangeCrop",
    "RawSweep",
    "RemoveOutliers",
    "SweepAssembler",
    "UdpDatagram",
    "VelodyneModel",
    "VelodyneSource",
    "VoxelDownsample",
    "from_xyz",
    "read_bin",
    "read_calibration",
    "read_kitti_bin",
    "read_pcd",
    "read_pcd_with_meta",
    "read_ply",
    "write_kitti_bin",
    "write_pcd",
    "xyz",
]

rewrite_module(globals(), __name__)
