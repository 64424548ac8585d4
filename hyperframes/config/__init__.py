"""Pipelines described in TOML: the schema (:mod:`.schema`) and the factory (:mod:`.factory`).

:func:`load_config` reads and validates a file, reporting every problem at
once (file, key path, expected, found); :func:`build_pipeline` turns the
result into a :class:`~fusion.Pipeline`. ``docs/configuration.md`` lists
every key; ``examples/configs/`` holds complete, commented files.
"""

from hyperframes.config._toml import read_toml
from hyperframes.config.factory import build_pipeline
from hyperframes.config.schema import (
    PipelineConfig,
    load_config,
    parse_size,
    validate_config,
)

__all__ = [
    "PipelineConfig",
    "build_pipeline",
    "load_config",
    "parse_size",
    "read_toml",
    "validate_config",
]
