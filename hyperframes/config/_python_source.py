"""The ``type = "python"`` source table: a user's :class:`fusion.Source` class.

Loading the config imports the class, binds ``options`` to its signature and
checks each option's value against the parameter's annotation, so a wrong
option is reported with the rest of the config's problems instead of when
the pipeline starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from fusion.errors import ConfigError
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class PythonSourceConfig(SourceOptions):
    """A user's own :class:`fusion.Source` subclass, built as ``Class(**options)``.

    ``class = "package.module:ClassName"``; ``options`` are its keyword
    arguments, checked against its signature when the config is loaded;
    ``name`` is passed too when the class takes a ``name`` argument."""

    type: Literal["python"]
    class_: str = Field(alias="class", pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    """`"package.module:ClassName"`, a `fusion.Source` subclass"""
    options: dict[str, Any] = {}
    """its keyword arguments, checked against its signature when the file is loaded; `name`
    is passed too when it takes one"""

    every_sensor: ClassVar[bool] = True
    needs_sync: ClassVar[bool] = True

    def open_ended(self) -> bool:
        return True  # the class says its sensors when it is built

    def build(self, context: BuildContext) -> Source:
        from fusion import Source

        cls = load_class(self.class_)
        try:
            source = cls(**python_source_kwargs(cls, self.name, self.options))
        except Exception as err:
            raise ConfigError(f"source {self.name!r}: {self.class_}(...) failed: {err}") from err
        if not isinstance(source, Source):
            raise ConfigError(f"source {self.name!r}: {self.class_} did not build a fusion.Source")
        return source

    @model_validator(mode="after")
    def _class_takes_the_options(self) -> PythonSourceConfig:
        cls = load_class(self.class_)
        import inspect

        from fusion import Source

        if not (isinstance(cls, type) and issubclass(cls, Source)):
            raise ValueError(f"{self.class_} is not a subclass of fusion.Source")
        kwargs = python_source_kwargs(cls, self.name, self.options)
        try:
            inspect.signature(cls).bind(**kwargs)
        except TypeError as err:
            raise ValueError(f"{self.class_}({', '.join(kwargs)}): {err}") from None
        problems = option_type_problems(cls, self.options)
        if problems:
            raise ValueError(f"source {self.name!r} ({self.class_}): {'; '.join(problems)}")
        return self


def option_type_problems(cls: Any, options: dict[str, Any]) -> list[str]:
    """Each option whose value does not fit the annotation of ``cls.__init__``'s parameter,
    as ``option 'count' expects int, found 'many' (str)``.

    Checked with pydantic in strict mode (TOML values are typed: ``"5"`` is not an
    ``int``; an ``int`` is a ``float``). A parameter without an annotation, or with
    one pydantic cannot check (a class of the user's, a forward reference that does
    not resolve) is left to the class.
    """
    import inspect
    import typing

    from pydantic import TypeAdapter
    from pydantic import ValidationError as PydanticError

    try:
        hints = typing.get_type_hints(cls.__init__)
        params = inspect.signature(cls).parameters
    except Exception:  # an annotation that does not resolve: the class checks its own
        return []
    problems: list[str] = []
    for key, value in options.items():
        hint = hints.get(key)
        param = params.get(key)
        if hint is None or param is None or param.kind is param.VAR_KEYWORD:
            continue
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(hint)
        except Exception:
            continue
        try:
            adapter.validate_python(value, strict=True)
        except PydanticError:
            wanted = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
            problems.append(
                f"option {key!r} expects {wanted}, found {value!r} ({type(value).__name__})"
            )
    return problems


def load_class(spec: str) -> Any:
    """``"package.module:ClassName"`` -> the class (a ``ValueError`` saying what failed)."""
    import importlib

    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r}: {err}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no {attr!r}") from None
    return obj


def python_source_kwargs(cls: Any, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options``, plus ``name`` when the class takes one and options do not set it."""
    import inspect

    kwargs = dict(options)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kwargs
    if "name" in params and "name" not in kwargs:
        kwargs["name"] = name
    return kwargs
