"""One option, one place: a source type's model is the TOML schema, the factory and the docs.

Each ``[[sources]]`` type is one :class:`~hyperframes.config._source_type.SourceOptions`
model in its own module; the schema's union, ``build_source`` and the per-type table
of ``docs/configuration.md`` are derived from the models. These tests declare a
throwaway type and see it reach all three, check the page against the models, and
check that every key a model hands to its adapter is one of the adapter's arguments.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import AliasChoices, Field, create_model

from fusion._frames import Frame, SensorSpec
from fusion._source import Source
from fusion.errors import ConfigError
from hyperframes.config import PipelineConfig
from hyperframes.config._factory import build_source
from hyperframes.config._schema import validate_model
from hyperframes.config._source_docs import (
    BEGIN,
    COMMON_BEGIN,
    COMMON_END,
    END,
    rewrite_table,
    row,
)
from hyperframes.config._source_type import BuildContext, SourceOptions, source_union
from hyperframes.config.sources import SOURCE_TYPES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"


class Gadget(Source):
    """A throwaway adapter: it keeps the arguments it was given."""

    def __init__(self, *, name: str, port: int = 5, gain_db: float = 0.0) -> None:
        super().__init__(SensorSpec(name, kind="generic"))
        self.port, self.gain_db = port, gain_db

    async def frames(self) -> Any:  # pragma: no cover - never run
        yield Frame(self.name, 0, 0)


class GadgetConfig(SourceOptions):
    """A throwaway source type, declared as every real one is."""

    type: Literal["gadget"]
    port: int = Field(5, ge=1, le=65535)
    """the gadget's port"""
    gain_db: float = Field(0.0, ge=-60, le=60, validation_alias=AliasChoices("gain_db", "gain"))
    """an option added later: one line here, none in the builder"""

    summary: ClassVar[str] = "A gadget (tests only)."
    see: ClassVar[str] = "configuration.md"
    target: ClassVar[str | None] = f"{__name__}:Gadget"

    def build(self, context: BuildContext) -> Source:
        return Gadget(name=self.name, **self.kwargs())


def _schema_with(*models: type[SourceOptions]) -> type[PipelineConfig]:
    """A ``PipelineConfig`` whose sources are ``models`` (each replaces the real type it
    subclasses) and the real types."""
    replaced = [next((m for m in models if issubclass(m, real)), real) for real in SOURCE_TYPES]
    union = source_union([*replaced, *(m for m in models if m not in replaced)])
    extended: type[PipelineConfig] = create_model(
        "PipelineConfig",
        __base__=PipelineConfig,
        sources=(list[union], Field(min_length=1)),  # type: ignore[valid-type]
    )
    return extended


def test_an_option_declared_once_reaches_the_schema_the_factory_and_the_docs() -> None:
    schema = _schema_with(GadgetConfig)
    raw = {"sources": [{"type": "gadget", "name": "g", "port": 7, "gain": -3.5}]}
    config = validate_model(schema, raw, source="g.toml", what="the config")
    source = build_source(config.sources[0])
    assert isinstance(source, Gadget)
    assert (source.name, source.port, source.gain_db) == ("g", 7, -3.5)  # the alias too

    bad = {"sources": [{"type": "gadget", "name": "g", "gain_db": 61, "colour": "red"}]}
    with pytest.raises(ConfigError) as err:
        validate_model(schema, bad, source="g.toml", what="the config")
    assert err.value.problems == [  # type: ignore[attr-defined]
        "g.toml: sources[0].gadget.gain_db: expected less than or equal to 60; found 61",
        "g.toml: sources[0].gadget.colour: unknown key (check its spelling), found 'red'",
    ]

    line = row(GadgetConfig)
    assert line == (
        '| `"gadget"` | A gadget (tests only). `port` (5: the gadget\'s port; 1 to 65535), '
        "`gain_db` (0: an option added later: one line here, none in the builder; -60 to 60; "
        "also `gain`) ([configuration.md](configuration.md)) |"
    )
    page = f"intro\n{COMMON_BEGIN}\n{COMMON_END}\n{BEGIN}\n\n{END}\nrest\n"
    assert line in rewrite_table(page, [*SOURCE_TYPES, GadgetConfig]).splitlines()


def test_an_option_added_to_a_real_type_needs_one_field_and_nothing_else() -> None:
    """``SyntheticSensor(start_ns=...)`` has no TOML key; one field gives it one: the
    schema checks it, the unchanged builder passes it, the docs row names it."""
    from hyperframes.config.sources.synthetic import SyntheticConfig

    class WithStart(SyntheticConfig):
        start_ns: int = Field(0, ge=0)
        """true time of the first frame"""

    schema = _schema_with(WithStart)
    raw = {"sources": [{"type": "synthetic_imu", "name": "imu", "start_ns": 5_000}]}
    source = build_source(
        validate_model(schema, raw, source="s.toml", what="the config").sources[0]
    )
    assert getattr(source, "start_ns") == 5_000  # noqa: B009
    with pytest.raises(ConfigError, match=r"start_ns: expected greater than or equal to 0"):
        validate_model(
            schema, {"sources": [{**raw["sources"][0], "start_ns": -1}]}, source="s", what="it"
        )
    assert "`start_ns` (0: true time of the first frame; >= 0)" in row(WithStart)
    assert "start_ns" not in row(SyntheticConfig)  # the real type is untouched


def test_a_type_declared_twice_is_refused() -> None:
    class Again(SourceOptions):
        type: Literal["video"]

    with pytest.raises(TypeError, match="'video' is declared twice"):
        source_union([*SOURCE_TYPES, Again])


def test_the_configuration_page_is_written_from_the_models() -> None:
    """A stale page: regenerate with ``rewrite_page('docs/configuration.md')``."""
    page = PAGE.read_text(encoding="utf-8")
    assert rewrite_table(page, SOURCE_TYPES) == page, (
        "docs/configuration.md's source table is stale: run python -c \"from "
        "hyperframes.config._source_docs import rewrite_page; "
        "rewrite_page('docs/configuration.md')\""
    )
    for model in SOURCE_TYPES:
        assert row(model) in page.splitlines()


def test_every_source_type_builds_its_own_source() -> None:
    lazy = [m.__name__ for m in SOURCE_TYPES if m.build is SourceOptions.build]
    assert not lazy, f"source types without a build(): {lazy}"


def _target(spec: str) -> Any:
    module, _, name = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("model", [m for m in SOURCE_TYPES if m.target], ids=lambda m: m.__name__)
def test_every_key_a_model_passes_on_is_an_argument_of_its_adapter(
    model: type[SourceOptions],
) -> None:
    assert model.target is not None
    target: Any = _target(model.target)
    params = dict(inspect.signature(target).parameters)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()) and inspect.ismethod(target):
        # TimeSeriesSource.from_udp(..., **options) hands the rest to the class
        owner: Any = target.__self__  # the class: its own arguments
        params.update(inspect.signature(owner).parameters)
    passed = model.argument_names()
    stray = {key: arg for key, arg in passed.items() if arg not in params}
    assert not stray, f"{model.__name__} passes keys {model.target} does not take: {stray}"
    unknown = set(model.arguments) - set(model.own_keys())
    assert not unknown, f"{model.__name__}.arguments names no key: {unknown}"
