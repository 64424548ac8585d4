"""Ray Data over ``.hfr`` recordings: a dataset of synchronised groups.

:class:`HfrDatasource` follows Ray's file-based datasource pattern: paths and
globs are expanded when the read is planned, each read task declares the file
it reads (``input_files``) and a size estimate, and the files are read where
the task runs. Planning reads only each file's summary (the footer index), to
cut long recordings into time ranges (:mod:`hyperframes.fleet._plan`). A task
replays its part through the run file's hub, policy and stages
(:func:`~hyperframes.fleet._tasks.part_rows`) and streams blocks of rows.

Files are opened with ``pread`` on a local path, so on a cluster they must be
on a filesystem every node mounts at the same path (NFS, a FUSE-mounted
bucket); object-store URLs are not read directly.

:class:`InferenceActor` is the callable class ``map_batches`` turns into an
actor pool: each actor builds the run file's :class:`~fusion.BatchWorker` s
once and runs every batch through them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from fusion import Stage
from hyperframes.fleet._config import FleetConfig
from hyperframes.fleet._plan import Part, plan_parts
from hyperframes.fleet._tasks import COLUMNS, InferenceModel, Row, iterate_blocking, part_rows

SCHEMA = pa.schema(
    [
        ("recording", pa.string()),
        ("part", pa.int32()),
        ("parts", pa.int32()),
        ("index", pa.int64()),
        ("t", pa.int64()),
        ("info", pa.binary()),
        ("group", pa.large_binary()),
        ("results", pa.large_binary()),
        ("summary", pa.binary()),
    ]
)
assert tuple(SCHEMA.names) == COLUMNS


def to_table(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


class HfrDatasource(Datasource):
    """Recordings -> rows of synchronised groups, one read task per part."""

    def __init__(
        self,
        paths: Sequence[str],
        config: FleetConfig,
        *,
        stages: Sequence[Stage] = (),
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.config = config
        self.stages = list(stages)
        fleet = config.fleet
        self.parts = plan_parts(
            list(paths),
            split=None if fleet.split_duration_s is None else int(fleet.split_duration_s * 1e9),
            overlap=int(fleet.overlap_s * 1e9),
            policy=config.sync.policy,
        )

    def get_name(self) -> str:
        return "ReadHfr"

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(p.size_bytes for p in self.parts)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        # One task per part whatever the requested parallelism: a part is the
        # unit whose groups are exactly those of a local run.
        return [
            ReadTask(
                _reader(self.config, part, self.stages),
                BlockMetadata(
                    num_rows=None,
                    size_bytes=part.size_bytes,
                    input_files=(part.path,),
                    exec_stats=None,
                ),
                schema=SCHEMA,
                per_task_row_limit=per_task_row_limit,
            )
            for part in self.parts
        ]


def _reader(
    config: FleetConfig, part: Part, stages: list[Stage]
) -> Callable[[], Iterator[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        blocks = iterate_blocking(
            lambda: part_rows(
                config, part, stages=stages, rows_per_block=config.fleet.rows_per_block
            )
        )
        for rows in blocks:
            yield to_table(rows)

    return read


class InferenceActor:
    """``map_batches`` callable class: the run file's workers over pyarrow batches."""

    def __init__(self, config: FleetConfig, threads: int | None = None) -> None:
        self.model = InferenceModel(config, threads=threads)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return to_table(self.model.process(batch.to_pylist()))


def drop_frames(batch: pa.Table) -> pa.Table:
    """Without workers: keep the group info, send no frames to the driver."""
    return batch.set_column(
        SCHEMA.get_field_index("group"), "group", pa.nulls(batch.num_rows, pa.large_binary())
    )
