"""One ``[[sources]]`` type, declared once: :class:`SourceOptions`.

A source type is one module of :mod:`hyperframes.config.sources` holding one
:class:`SourceOptions` subclass: its fields are the type's TOML keys (default,
bounds, ``validation_alias`` spellings, and an attribute docstring that is the
docs' text for the key), its validators the checks that need several keys,
its :meth:`~SourceOptions.build` the factory's work for it. From these alone:

* the schema's discriminated union on ``type`` (:func:`source_union`);
* the factory's :func:`~hyperframes.config._factory.build_source` (a lookup);
* the per-type table of ``docs/configuration.md``
  (:mod:`hyperframes.config._source_docs`, checked by a test).

:meth:`SourceOptions.kwargs` hands the type's own keys to the adapter under
their names (``arguments`` renames one, or keeps it for the builder), so a new
key whose name is the adapter's argument needs no line in the builder.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, Union, get_args

from pydantic import ConfigDict, Field

from hyperframes.config._base import _SourceBase

if TYPE_CHECKING:
    from fusion import Source


@dataclass(frozen=True)
class BuildContext:
    """What the factory knows beyond one source's table."""

    copied: frozenset[str] = frozenset()
    """Sensors the recorder keeps as the source's own packets (``[recorder] video = "copy"``)."""
    gather_ms: float | None = None
    """A UDP time series' gather where its table leaves it unset (``record`` sets it)."""


COMMON_KEYS = frozenset({"type", *_SourceBase.model_fields})
"""Keys every source takes (``docs/configuration.md`` lists them once, above the types)."""


class SourceOptions(_SourceBase):
    """The options of one source type: subclass it, in a module of its own.

    Class attributes (not TOML keys) say the rest:

    * ``summary``: the docs table's lead (markdown), before the keys;
    * ``see``: the docs page that tells more (``"lidar.md#hesai-hesaisource"``);
    * ``target``: ``"module:Name"`` (or ``"module:Name.method"``) that
      :meth:`kwargs` feeds; a test checks every key reaches one of its parameters;
    * ``arguments``: a key -> the adapter's argument name, or ``None`` where
      :meth:`build` passes the key itself (renamed, converted);
    * ``every_sensor``: the common keys (``clock``, ``capacity``...) apply to each
      of its sensors, not only to the one named ``name``;
    * ``needs_sync``: alone in a config it still needs ``[sync]`` (several sensors);
    * ``recorded_stamps``: its frames keep the times they were recorded with.
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    type: str
    """one of the types below"""
    summary: ClassVar[str] = ""
    see: ClassVar[str] = ""
    target: ClassVar[str | None] = None
    arguments: ClassVar[Mapping[str, str | None]] = {}
    every_sensor: ClassVar[bool] = False
    needs_sync: ClassVar[bool] = False
    recorded_stamps: ClassVar[bool] = False

    @classmethod
    def own_keys(cls) -> list[str]:
        """This type's keys, beyond the ones every source takes (field names)."""
        return [k for k in cls.model_fields if k not in COMMON_KEYS]

    @classmethod
    def argument_names(cls) -> dict[str, str]:
        """Key -> the ``target``'s argument :meth:`kwargs` passes it as."""
        names = {k: cls.arguments.get(k, k) for k in cls.own_keys()}
        return {k: v for k, v in names.items() if v is not None}

    def kwargs(self) -> dict[str, Any]:
        """This type's own keys as the ``target``'s keyword arguments (``name`` and the
        keys ``arguments`` maps to ``None`` left to :meth:`build`)."""
        return {arg: getattr(self, key) for key, arg in self.argument_names().items()}

    def build(self, context: BuildContext) -> Source:
        """The source this table describes (its adapter imported only now)."""
        raise NotImplementedError(f"source type {self.type!r} has no builder")

    def sensor_names(self) -> list[str]:
        """The sensors it produces that a config may name (``[sync]``, workers...)."""
        return [self.name]

    def open_ended(self) -> bool:
        """True when its sensors are known only once it runs (a recording, a class)."""
        return False

    def for_sync(self, asked: Collection[str]) -> Self:
        """This table as built for a ``[sync]`` naming the sensors ``asked``."""
        return self


def source_types_of(models: Sequence[type[SourceOptions]]) -> dict[str, type[SourceOptions]]:
    """``type`` value -> its model; a value two models claim is an error."""
    found: dict[str, type[SourceOptions]] = {}
    for model in models:
        for name in type_names(model):
            if name in found:
                raise TypeError(f"source type {name!r} is declared twice")
            found[name] = model
    return found


def type_names(model: type[SourceOptions]) -> tuple[str, ...]:
    """The ``type`` values a model's ``Literal`` takes."""
    annotation = model.model_fields["type"].annotation
    names = get_args(annotation)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{model.__name__}.type must be a Literal of strings")
    return names


def source_union(models: Sequence[type[SourceOptions]]) -> Any:
    """The discriminated union on ``type`` that validates a ``[[sources]]`` table."""
    source_types_of(models)  # each type declared once
    return Annotated[Union[tuple(models)], Field(discriminator="type")]  # noqa: UP007
