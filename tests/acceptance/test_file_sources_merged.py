"""Two file sources recorded together: ``record`` of a real phone clip's video and audio
(``type = "video"`` and ``type = "audio"`` on one MP4) with a ``Nearest`` sync and an
audio window groups every picture while recording, none ``late``, with and without
``--fast``: the hub merges file sources by time (no wall-clock deadline). The groups
formed while recording are the ones ``hyperframes sync`` makes of the recording."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.acceptance.av_clip import SYNC_ARGS, write_config
from tests.acceptance.live_helpers import hyperframes


def metrics(path: Path) -> dict[str, float]:
    """The Prometheus lines ``record --metrics`` wrote: ``name{labels}`` -> value."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


@pytest.mark.parametrize("fast", [False, True], ids=["real-time", "fast"])
def test_video_and_audio_of_one_clip_group_every_picture_while_recording(
    tmp_path: Path, fast: bool
) -> None:
    config = write_config(tmp_path)
    rec, kept = tmp_path / "av.hfr", tmp_path / "metrics.prom"
    done = hyperframes(
        "record", str(config), "-o", str(rec), "--metrics", str(kept),
        *(["--fast"] if fast else []), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = metrics(kept)
    assert seen['hyperframes_sensor_frames_total{sensor="cam"}'] == 30
    dropped = {k: v for k, v in seen.items() if k.startswith("hyperframes_sensor_dropped_total")}
    assert not [k for k in dropped if 'reason="late"' in k], dropped
    assert seen["hyperframes_hub_groups_expired_total"] == 0
    complete = seen['hyperframes_hub_groups_total{outcome="complete"}']
    partial = seen['hyperframes_hub_groups_total{outcome="partial"}']
    assert complete + partial == 30  # every picture in a group
    assert seen['hyperframes_hub_groups_total{outcome="dropped"}'] == 0
    # the groups the stamps give, by sync over the recording
    groups = tmp_path / "groups.parquet"
    done = hyperframes("sync", str(rec), *SYNC_ARGS, "-o", str(groups))
    assert done.returncode == 0, done.stdout + done.stderr
    table = pq.read_table(groups).to_pylist()
    assert [row["cam_seq"] for row in table] == list(range(30))
    assert partial == sum(1 for row in table if not row["mic_seq"])
    taken = sum(len(row["mic_seq"] or []) for row in table)
    mic = seen['hyperframes_sensor_frames_total{sensor="mic"}']
    unmatched = seen.get('hyperframes_sensor_dropped_total{sensor="mic",reason="unmatched"}', 0)
    assert unmatched == mic - taken  # the same audio frames left out as by sync
