"""Pipelines described in TOML: the schema (:mod:`.schema`) and the factory (:mod:`.factory`).

:func:`load_config` reads and validates a file, reporting every problem at
once (file, key path, expected, found); :func:`build_pipeline` turns the
result into a :class:`~fusion.Pipeline`. ``docs/configuration.md`` lists
every key; ``examples/configs/`` holds complete, commented files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion._exports import lazy_exports

if TYPE_CHECKING:
    from hyperframes.config._base import StrictModel
    from hyperframes.config._factory import build_pipeline, build_policy, build_stage, build_worker
    from hyperframes.config._schema import (
        PipelineConfig,
        PipelineSection,
        StageConfig,
        SyncConfig,
        WorkerConfig,
        load_config,
        parse_size,
        validate_config,
        validate_model,
    )
    from hyperframes.config._toml import read_toml


__all__ = [
    "PipelineConfig",
    "PipelineSection",
    "StageConfig",
    "StrictModel",
    "SyncConfig",
    "WorkerConfig",
    "build_pipeline",
    "build_policy",
    "build_stage",
    "build_worker",
    "load_config",
    "parse_size",
    "read_toml",
    "validate_config",
    "validate_model",
]

_HOMES = {
    "PipelineSection": "hyperframes.config._schema",
    "StageConfig": "hyperframes.config._schema",
    "StrictModel": "hyperframes.config._base",
    "SyncConfig": "hyperframes.config._schema",
    "WorkerConfig": "hyperframes.config._schema",
    "build_policy": "hyperframes.config._factory",
    "build_stage": "hyperframes.config._factory",
    "build_worker": "hyperframes.config._factory",
    "validate_model": "hyperframes.config._schema",
    "PipelineConfig": "hyperframes.config._schema",
    "build_pipeline": "hyperframes.config._factory",
    "load_config": "hyperframes.config._schema",
    "parse_size": "hyperframes.config._schema",
    "read_toml": "hyperframes.config._toml",
    "validate_config": "hyperframes.config._schema",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
