"""What a file is, from its first bytes: for ``info`` to choose a reader, or to name a format
it does not read and say what to do.

:func:`identify` returns a :class:`Format`: ``reader`` names the summary ``info`` makes
of it (``"can"``, ``"pcap"``, ``"gnss"``; ``None``: not read here) and ``name`` says what
it is in words ("a Vector BLF log"), with ``advice`` for a format not read. Only the
first 64 KiB are read; nothing is decompressed but a ``.gz`` CAN log's first block.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

HEAD = 1 << 16


@dataclass(frozen=True)
class Format:
    """What a file was recognised as."""

    name: str
    """In words, with its article: ``"a Vector BLF log"``."""
    reader: str | None = None
    """The summary ``info`` makes (``"can"``, ``"pcap"``, ``"gnss"``, ``"osf"``), ``None``:
    not read."""
    advice: str = ""
    """What to do with it, for a format not read here."""
    detail: str = ""
    """For a CAN log: python-can's format name (``"ASC"``)."""


_CANDUMP = re.compile(rb"^\(\d+(\.\d+)?\)\s+\S+\s+[0-9A-Fa-f]{1,8}#")
_UBX = b"\xb5\x62"

_CAN_ADVICE = 'read it with type = "can" (python-can)'

# magic bytes at offset 0 -> (name, advice) of formats not read as files here
_NOT_READ: list[tuple[bytes, str, str]] = [
    (
        b"\x89HDF\r\n\x1a\n",
        "an HDF5 file",
        "export its datasets to CSV or .npy (h5py) and "
        'read them with type = "timeseries_csv" or TimeSeriesSource',
    ),
    (
        b"PAR1",
        "a Parquet file",
        "read its columns with pyarrow and feed them to "
        'TimeSeriesSource.from_iterable (or convert to CSV for type = "timeseries_csv")',
    ),
    (b"PK\x03\x04", "a ZIP archive", "unpack it and run info on the files inside"),
    (b"PK\x05\x06", "an empty ZIP archive", "there is nothing in it to read"),
    (
        b"\x1f\x8b",
        "a gzip file",
        "only gzip-compressed CAN logs (drive.asc.gz) are read as "
        "they are; gunzip it and run info on what is inside",
    ),
    (
        b"\x28\xb5\x2f\xfd",
        "a zstd-compressed file",
        "decompress it (zstd -d) and run info on what is inside",
    ),
    (b"\xfd7zXZ\x00", "an xz-compressed file", "decompress it (xz -d) first"),
    (b"BZh", "a bzip2-compressed file", "decompress it (bunzip2) first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it first"),
    (
        b"\x93NUMPY",
        "a NumPy .npy array",
        "load it with numpy and feed it to "
        'TimeSeriesSource.from_iterable, or write it as PCD/PLY for type = "pointcloud_files"',
    ),
    (
        b"MDF     ",
        "an ASAM MDF4 measurement file",
        'install asammdf and read it with type = "can" (python-can reads .mf4 through it)',
    ),
    (
        b"\x89PNG\r\n\x1a\n",
        "a PNG image",
        'read image sequences as video (type = "video", a pattern such as frame_%04d.png)',
    ),
    (
        b"\xff\xd8\xff",
        "a JPEG image",
        'read image sequences as video (type = "video", a pattern such as frame_%04d.jpg)',
    ),
    (b"\x1aE\xdf\xa3", "a Matroska/WebM video", 'read it with type = "video"'),
    (
        b"SQLite format 3\x00",
        "an SQLite database",
        "a ROS 2 bag is a directory with metadata.yaml beside its .db3: run info on the directory",
    ),
    (b"\x7fELF", "an ELF executable", "this is a program, not sensor data"),
    (b"%PDF", "a PDF document", "this is a document, not sensor data"),
    (
        b"LASF",
        "a LAS point cloud",
        'convert it to PCD or PLY (PDAL, laspy) for type = "pointcloud_files"',
    ),
]


def identify(path: str | Path) -> Format | None:
    """The format of the file at ``path`` from its first bytes (and, for CAN logs python-can
    reads by suffix, its suffix), or ``None`` when nothing is recognised."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(HEAD)
    except OSError:
        return None
    suffixes = [s.lower() for s in p.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    suffix = (suffixes[-2] if gz and len(suffixes) > 1 else suffixes[-1]) if suffixes else ""
    if gz and head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(p, "rb") as f:
                inner = f.read(4096)
        except (OSError, EOFError):
            inner = b""
        found = _can(inner, suffix)
        if found is not None:
            return found
    found = _can(head, suffix)
    if found is not None:
        return found
    if head[:4] in (
        b"\xd4\xc3\xb2\xa1",
        b"\xa1\xb2\xc3\xd4",
        b"\x4d\x3c\xb2\xa1",
        b"\xa1\xb2\x3c\x4d",
    ):
        return Format("a pcap capture", "pcap")
    if head[:4] == b"\x0a\x0d\x0d\x0a":
        return Format("a pcapng capture", "pcap")
    if head[:2] == _UBX:
        return Format("a u-blox UBX log", "gnss")
    if head[8:11] == b"OSF":
        return Format("an Ouster OSF file", "osf")
    if head[:4] == b"ULog":
        return Format(
            "a PX4 ULog",
            advice='read it with type = "ulog" (pyulog)',
        )
    if head[:4] == b"LOGG":
        return Format("a Vector BLF log", advice="name it .blf and " + _CAN_ADVICE)
    for magic, name, advice in _NOT_READ:
        if head.startswith(magic):
            return Format(name, advice=advice)
    if head[4:8] == b"ftyp":
        return Format("an MP4/QuickTime video", advice='read it with type = "video"')
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return Format("a WAV audio file", advice='read it with type = "audio"')
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return Format("an AVI video", advice='read it with type = "video"')
    if len(head) > 262 and head[257:262] == b"ustar":
        return Format("a tar archive", advice="unpack it and run info on the files inside")
    if _UBX in head and head.lstrip()[:1] == b"$":
        return Format("a u-blox log (UBX and NMEA mixed)", "gnss")
    return None


def _can(head: bytes, suffix: str) -> Format | None:
    """A CAN log python-can reads (by suffix, confirmed by its content)."""
    text = head.lstrip()
    if suffix == ".asc" and (
        text[:5] in (b"date ", b"base ") or b"\nbase " in head[:4096] or b"Begin" in head[:4096]
    ):
        return Format("a Vector ASC log", "can", detail="ASC")
    if suffix == ".blf" and head[:4] == b"LOGG":
        return Format("a Vector BLF log", "can", detail="BLF")
    if suffix == ".trc" and text[:1] == b";":
        return Format("a PEAK TRC log", "can", detail="TRC")
    if suffix == ".log" and _CANDUMP.match(text):
        return Format("a candump -l log", "can", detail="candump")
    if suffix == ".csv" and text.lower().startswith(b"timestamp,arbitration_id"):
        return Format("a python-can CSV log", "can", detail="CSV")
    if suffix == ".mf4" and head[:8] == b"MDF     ":
        return Format("an ASAM MDF4 CAN log", "can", detail="MF4")
    return None
