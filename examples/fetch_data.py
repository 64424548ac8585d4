"""Fetch the real third-party files the docs and tests read, into ``../shared/data``.

The docs' examples and the tests read real sensor files (ROS bags, Velodyne,
Ouster and Hesai captures, CAN logs, radar packets, videos, CSV logs) from
``../shared/data`` beside the clone. A public clone does not have that folder:
this script downloads each file from the public repository and commit it was
copied from (``examples/data_manifest.json``: repository, commit, path, size,
SHA-256), checks its size and hash, and writes it under its name there. Files
already present with the right hash are left alone; a file present with
another hash is reported and kept (``--force`` replaces it). Standard library
only; the provenance and licences are in the folder's README and PROVENANCE
files.

    python examples/fetch_data.py            # fetch what is missing, check the rest
    python examples/fetch_data.py --check    # only check, fetch nothing (exit 1 on a problem)
    python examples/fetch_data.py --dest DIR --only lidar/
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "data_manifest.json"
DEFAULT_DEST = HERE.parent.parent / "shared" / "data"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, size: int) -> bytes:
    """The body of ``url``, refused if it is longer than the manifest's ``size``."""
    with urllib.request.urlopen(url, timeout=60) as response:
        body: bytes = response.read(size + 1)
    if len(body) != size:
        raise ValueError(f"{url}: {len(body):,} bytes, expected {size:,}")
    return body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="the data folder")
    parser.add_argument("--check", action="store_true", help="only check; fetch nothing")
    parser.add_argument("--force", action="store_true", help="replace files whose hash differs")
    parser.add_argument("--only", default="", help="fetch only names starting with this")
    args = parser.parse_args()
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))
    counts = {"present": 0, "fetched": 0, "missing": 0, "differ": 0, "failed": 0}
    for name, entry in entries.items():
        if not name.startswith(args.only):
            continue
        target = args.dest / name
        if target.is_file():
            if digest(target) == entry["sha256"]:
                counts["present"] += 1
                continue
            if not args.force:
                print(f"{target}: its SHA-256 differs from the manifest's (--force replaces it)")
                counts["differ"] += 1
                continue
        if args.check:
            print(f"{target}: missing")
            counts["missing"] += 1
            continue
        url = RAW.format(**entry)
        try:
            body = download(url, entry["bytes"])
            if hashlib.sha256(body).hexdigest() != entry["sha256"]:
                raise ValueError(f"{url}: SHA-256 differs from the manifest's")
        except (OSError, ValueError) as err:
            print(f"{name}: not fetched: {err}", file=sys.stderr)
            counts["failed"] += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            tmp.write(body)
        os.replace(tmp.name, target)
        counts["fetched"] += 1
        print(f"fetched {name} ({entry['bytes']:,} bytes)")
    print(", ".join(f"{n} {k}" for k, n in counts.items()) + f" (in {args.dest})")
    return 1 if counts["failed"] or counts["missing"] or counts["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
