"""Reading a TOML file a user wrote (a pipeline config, a fleet run) into plain values, safely.

``tomllib`` takes any integer (``count = 1`` followed by 400 digits) and
recurses once per level of nesting, so a config could end a command with a
bare ``OverflowError`` from deep inside a source, or a ``RecursionError``.
:func:`read_toml` reads the file with :func:`adapters._side_files.read_small_text`
(a regular file of at most :data:`~adapters._side_files.CONFIG_LIMIT` bytes:
``/dev/zero`` or a FIFO is refused, not read), then refuses, each in one
:class:`~fusion.errors.ConfigError` naming the file and the key:

* nesting deeper than :data:`MAX_DEPTH` tables and arrays (no config needs 5;
  what is nested hundreds deep stops ``tomllib`` with a ``RecursionError``);
* an integer outside int64 (every count, size and time in a config is one).
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

from adapters import CONFIG_LIMIT, read_small_text
from fusion.errors import ConfigError

MAX_DEPTH = 64
"""Levels of nested tables and arrays a config may hold."""
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1


def read_toml(path: str | os.PathLike[str], what: str = "config") -> dict[str, Any]:
    """The parsed TOML file ``path`` (``what`` names it in errors); :class:`ConfigError`
    with one line naming the file (and the key) for anything wrong."""
    text = read_small_text(
        path, what, CONFIG_LIMIT, limit_name=f"a {what} file", error=ConfigError, errors="strict"
    )
    return parse_toml(text, os.fspath(path))


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """``text`` parsed; ``where`` (the file) prefixes every error."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{where}: not valid TOML: {err}") from err
    except RecursionError:  # tomllib recurses once per level of nesting
        raise ConfigError(
            f"{where}: arrays or inline tables nested hundreds deep; no config needs that"
        ) from None
    _check_values(raw, where, [])
    return raw


def _check_values(value: Any, where: str, key: list[str]) -> None:
    if len(key) > MAX_DEPTH:
        raise ConfigError(f"{where}: tables nested over {MAX_DEPTH} deep at {_dotted(key)}")
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            digits = len(str(abs(value)))
            raise ConfigError(
                f"{where}: {_dotted(key)} = an integer of {digits} digits, outside the "
                "64-bit range every count, size and time in a config has"
            )
    elif isinstance(value, dict):
        for name, item in value.items():
            _check_values(item, where, [*key, str(name)])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, where, [*key[:-1], f"{key[-1] if key else ''}[{i}]"])


def _dotted(key: list[str]) -> str:
    return ".".join(key) or "(top level)"
