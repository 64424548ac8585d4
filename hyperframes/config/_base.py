"""What every section of the TOML config shares: strict models, durations, clocks, sizes.

:class:`StrictModel` refuses unknown keys and durations that do not fit int64
nanoseconds; every table of the schema derives from it. A source's common
keys (``name``, ``clock``, ``capacity``...) are :class:`_SourceBase`; the
image size as ``width``/``height`` and the UDP ``sender`` check are shared by
several source types and the workers, so they live here too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from fusion.errors import ConfigError

MS = 1_000_000


_DURATION_LIMITS = {"_ms": 9.2e12, "_s": 9.2e9}  # what still fits int64 nanoseconds


def _check_durations(name: str, value: Any) -> None:
    for suffix, limit in _DURATION_LIMITS.items():
        if not name.endswith(suffix):
            continue
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            for x in v if isinstance(v, tuple | list) else [v]:
                if isinstance(x, int | float) and not abs(x) <= limit:  # nan fails too
                    raise ValueError(
                        f"{name} = {x!r} is not a finite duration of at most {limit:g} "
                        f"{suffix[1:]} (it must fit in int64 nanoseconds)"
                    )


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _durations_fit(self) -> StrictModel:
        """Every ``*_ms`` / ``*_s`` value is finite and fits in int64 ns (1e308 does not)."""
        for name in type(self).model_fields:
            _check_durations(name, getattr(self, name))
        return self


class OnlineClockConfig(StrictModel):
    model: Literal["online"] = "online"
    window_s: float = Field(20.0, gt=0)
    extra_offset_ms: float = 0.0
    wrap_period_s: float | None = Field(None, gt=0)


class FixedOffsetConfig(StrictModel):
    model: Literal["fixed"] = "fixed"
    offset_ms: float


ClockConfig = Literal["none", "identity", "online"] | OnlineClockConfig | FixedOffsetConfig


class _SourceBase(StrictModel):
    """The keys every source takes; each docstring is ``docs/configuration.md``'s text
    for the key (:mod:`hyperframes.config._source_docs`)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """the sensor's name (non-empty, unique)"""
    clock: ClockConfig = "none"
    """`"none"` (the source's own model, usually none: `t` as stamped), `"identity"`,
    `"online"` (an `OnlineClock`, with the source's declared wrap period),
    `{ model = "online", window_s = 20, extra_offset_ms = 0, wrap_period_s = 3600 }`,
    `{ model = "fixed", offset_ms = 12.5 }` ([clocks.md](clocks.md))"""
    optional: bool = False
    """groups may go out without this sensor"""
    capacity: int | None = Field(None, ge=1)
    """none: the source's; its channel into the hub"""
    overflow: Literal["block", "drop_oldest", "drop_newest"] | None = None
    """none: the source's; what a full channel does"""
    export_type: str | None = None
    """the message `hyperframes export` writes this source's time series as
    (`"sensor_msgs/msg/Imu"`, `"sensor_msgs/msg/NavSatFix"`, `"nav_msgs/msg/Odometry"`,
    `"geometry_msgs/msg/PoseStamped"`, `"std_msgs/msg/Float64MultiArray"`; see
    `recordings.outputs.encoders._shapes`), recorded with the sensor
    ([interop.md](interop.md#typed-time-series))"""

    @field_validator("export_type")
    @classmethod
    def _known_export_type(cls, value: str | None) -> str | None:
        if value is not None:
            from recordings.outputs import shape_of_type

            shape_of_type(value)  # a ValueError names the types there are
        return value


_SIZE_MESSAGE = (
    "'size' is ambiguous (is it [width, height] or [height, width]?); "
    "write width = W and height = H instead"
)


def _refuse_size(raw: Any) -> Any:
    if isinstance(raw, dict) and "size" in raw:
        raise ValueError(_SIZE_MESSAGE)
    return raw


class _Sized(StrictModel):
    """An image size as two keys: the one convention of the TOML config."""

    width: int | None = Field(None, ge=1)
    height: int | None = Field(None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _no_size(cls, raw: Any) -> Any:
        return _refuse_size(raw)

    @model_validator(mode="after")
    def _both_or_neither(self) -> _Sized:
        if (self.width is None) != (self.height is None):
            raise ValueError("give both 'width' and 'height' (pixels), or neither")
        return self


def _check_sender(value: str | None) -> str | None:
    """A UDP ``sender`` option is an IPv4 address, optionally with ``:port``."""
    if value is not None:
        from adapters.net import parse_sender

        try:
            parse_sender(value)
        except ConfigError as err:
            raise ValueError(str(err)) from None
    return value


UdpSender = Annotated[str | None, AfterValidator(_check_sender)]
