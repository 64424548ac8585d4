"""LiDAR sources: Velodyne sweeps, Ouster scans (UDP / pcap), point-cloud files, processing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from adapters.lidar._calibration import Calibration, read_calibration
    from adapters.lidar._hesai import HesaiSource
    from adapters.lidar._hesai_models import looks_like_hesai
    from adapters.lidar._kitti import read_kitti_bin, write_kitti_bin
    from adapters.lidar._layouts import LAYOUTS, BinLayout, read_bin, resolve_layout
    from adapters.lidar._ouster import OusterSource, osf_sensor_names, read_osf
    from adapters.lidar._ouster_packets import OUSTER_DTYPE
    from adapters.lidar._pcap import LEDGER_REASONS, PcapReader, UdpDatagram, address_text, read_udp
    from adapters.lidar._pcd import read_pcd, read_pcd_with_meta, write_pcd
    from adapters.lidar._ply import read_ply
    from adapters.lidar._pointcloud_files import PointCloudFiles
    from adapters.lidar._points import REQUIRED_FIELDS, VELODYNE_DTYPE, XYZI_DTYPE, from_xyz, xyz
    from adapters.lidar._processing import BoxCrop, RangeCrop, RemoveOutliers, VoxelDownsample
    from adapters.lidar._velodyne import VelodyneSource
    from adapters.lidar._velodyne_assembler import SweepAssembler
    from adapters.lidar._velodyne_decode import RawSweep
    from adapters.lidar._velodyne_models import (
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
    from adapters.lidar._velodyne_packets import WRAP_PERIOD_NS


__all__ = [
    "ALPHA_PRIME",
    "HDL_32E",
    "HDL_64E_S2",
    "HDL_64E_S3",
    "LAYOUTS",
    "LEDGER_REASONS",
    "MODELS",
    "OUSTER_DTYPE",
    "PUCK_HI_RES",
    "REQUIRED_FIELDS",
    "VELODYNE_DTYPE",
    "VLP_16",
    "VLP_32C",
    "VLS_128",
    "WRAP_PERIOD_NS",
    "XYZI_DTYPE",
    "BinLayout",
    "BoxCrop",
    "Calibration",
    "HesaiSource",
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
    "address_text",
    "from_xyz",
    "looks_like_hesai",
    "osf_sensor_names",
    "read_bin",
    "read_calibration",
    "read_kitti_bin",
    "read_osf",
    "read_pcd",
    "read_pcd_with_meta",
    "read_ply",
    "read_udp",
    "resolve_layout",
    "write_kitti_bin",
    "write_pcd",
    "xyz",
]

_HOMES = {
    "read_udp": "adapters.lidar._pcap",
    "HesaiSource": "adapters.lidar._hesai",
    "LEDGER_REASONS": "adapters.lidar._pcap",
    "REQUIRED_FIELDS": "adapters.lidar._points",
    "address_text": "adapters.lidar._pcap",
    "looks_like_hesai": "adapters.lidar._hesai_models",
    "osf_sensor_names": "adapters.lidar._ouster",
    "read_osf": "adapters.lidar._ouster",
    "resolve_layout": "adapters.lidar._layouts",
    "ALPHA_PRIME": "adapters.lidar._velodyne_models",
    "BinLayout": "adapters.lidar._layouts",
    "BoxCrop": "adapters.lidar._processing",
    "Calibration": "adapters.lidar._calibration",
    "HDL_32E": "adapters.lidar._velodyne_models",
    "HDL_64E_S2": "adapters.lidar._velodyne_models",
    "HDL_64E_S3": "adapters.lidar._velodyne_models",
    "LAYOUTS": "adapters.lidar._layouts",
    "MODELS": "adapters.lidar._velodyne_models",
    "OUSTER_DTYPE": "adapters.lidar._ouster_packets",
    "OusterSource": "adapters.lidar._ouster",
    "PUCK_HI_RES": "adapters.lidar._velodyne_models",
    "PcapReader": "adapters.lidar._pcap",
    "PointCloudFiles": "adapters.lidar._pointcloud_files",
    "RangeCrop": "adapters.lidar._processing",
    "RawSweep": "adapters.lidar._velodyne_decode",
    "RemoveOutliers": "adapters.lidar._processing",
    "SweepAssembler": "adapters.lidar._velodyne_assembler",
    "UdpDatagram": "adapters.lidar._pcap",
    "VELODYNE_DTYPE": "adapters.lidar._points",
    "VLP_16": "adapters.lidar._velodyne_models",
    "VLP_32C": "adapters.lidar._velodyne_models",
    "VLS_128": "adapters.lidar._velodyne_models",
    "VelodyneModel": "adapters.lidar._velodyne_models",
    "VelodyneSource": "adapters.lidar._velodyne",
    "VoxelDownsample": "adapters.lidar._processing",
    "WRAP_PERIOD_NS": "adapters.lidar._velodyne_packets",
    "XYZI_DTYPE": "adapters.lidar._points",
    "from_xyz": "adapters.lidar._points",
    "read_bin": "adapters.lidar._layouts",
    "read_calibration": "adapters.lidar._calibration",
    "read_kitti_bin": "adapters.lidar._kitti",
    "read_pcd": "adapters.lidar._pcd",
    "read_pcd_with_meta": "adapters.lidar._pcd",
    "read_ply": "adapters.lidar._ply",
    "write_kitti_bin": "adapters.lidar._kitti",
    "write_pcd": "adapters.lidar._pcd",
    "xyz": "adapters.lidar._points",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
