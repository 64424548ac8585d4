"""The real phone clip recorded as a ``video`` and an ``audio`` source of one MP4, shared by
the audio CLI journey and the merged-file-sources test: the clip and the TOML config (a
``Nearest`` sync of the picture with an audio window)."""

from __future__ import annotations

from pathlib import Path

CLIP = (
    Path(__file__).resolve().parents[2].parent
    / "shared/data/real/video/androidx_sample_rotate_and_reflect.mp4"
)
"""H.264 30 frames + AAC 44.1 kHz mono."""

CONFIG = """
[[sources]]
type = "video"
name = "cam"
url = "{clip}"

[[sources]]
type = "audio"
name = "mic"
url = "{clip}"

[sync]
policy = "nearest"
reference = "cam"
sensors = ["cam", "mic"]
tolerance_ms = 40
windows_ms = {{ mic = [16.68, 16.68] }}
optional = ["mic"]
"""

SYNC_ARGS = (
    "--reference", "cam", "--sensors", "cam", "mic", "--tolerance", "40ms",
    "--window", "mic=16.68ms:16.68ms", "--optional", "mic",
)  # fmt: skip
"""``hyperframes sync`` options that group as the config's ``[sync]`` does."""


def write_config(folder: Path) -> Path:
    """The config for the clip, as ``folder/av.toml``."""
    config = folder / "av.toml"
    config.write_text(CONFIG.format(clip=CLIP))
    return config
