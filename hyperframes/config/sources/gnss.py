"""``type = "gnss"`` (alias ``"nmea"``): a GNSS receiver speaking NMEA 0183 and/or u-blox UBX
(:class:`adapters.NmeaSource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from hyperframes.config._base import UdpSender
from hyperframes.config._source_type import BuildContext, SourceOptions

if TYPE_CHECKING:
    from fusion import Source


class NmeaConfig(SourceOptions):
    """A GNSS receiver speaking NMEA 0183 and/or u-blox UBX (:class:`adapters.NmeaSource`,
    ``type = "gnss"``; ``"nmea"`` is its alias): exactly one of ``path`` (a log file),
    ``port`` (a serial device, at ``baud``) or ``url`` (``"udp://HOST:PORT"`` to listen,
    ``"tcp://HOST:PORT"`` to connect)."""

    type: Literal["gnss", "nmea"]
    protocol: Literal["auto", "nmea", "ubx"] | None = None
    """none: `"auto"` for `"gnss"` (UBX and NMEA mixed, UBX sensors `<name>.pvt`, `.hpposllh`,
    `.sat`, `.esf`), `"nmea"` for `"nmea"` (lines of sentences)"""
    path: str | None = None
    """a log file"""
    port: str | None = None
    """a serial device such as `"/dev/ttyUSB0"`"""
    baud: int = Field(4800, ge=1)
    url: str | None = Field(None, pattern=r"^(udp|tcp)://[^/:]+:\d+$")
    """`"udp://HOST:PORT"` listens, `"tcp://HOST:PORT"` connects"""
    date: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    """`"YYYY-MM-DD"`: dates fixes no RMC or ZDA sentence dates"""
    speed: float | None = Field(None, gt=0)
    """none: as fast as consumed"""
    sender: UdpSender = None
    """none: the first sender heard (`udp://`); `"10.0.0.5"` or `"10.0.0.5:10110"`"""
    recv_buffer: int | None = Field(None, gt=0)
    """none: the system's; `udp://`: the socket's receive buffer in bytes"""
    max_reconnects: int | None = Field(None, ge=0)
    """none: until stopped; `tcp://`: reconnect attempts in a row before giving up"""
    backoff_max_s: float = Field(5.0, gt=0)
    """`tcp://`: the longest wait between reconnect attempts (they start at 0.1 s and double)"""

    summary: ClassVar[str] = "Exactly one of `path`, `port` or `url` ([gnss.md](gnss.md))."
    see: ClassVar[str] = "timeseries.md#gnss-receivers-nmea-0183"
    target: ClassVar[str | None] = "adapters.nmea:NmeaSource"
    arguments: ClassVar[dict[str, str | None]] = {"protocol": None, "backoff_max_s": None}
    every_sensor: ClassVar[bool] = True

    @property
    def chosen_protocol(self) -> Literal["auto", "nmea", "ubx"]:
        """The protocol read: ``protocol``, or the type's default."""
        if self.protocol is not None:
            return self.protocol
        return "auto" if self.type == "gnss" else "nmea"

    def sensor_names(self) -> list[str]:
        """The NMEA fix sensor and, with UBX, ``<name>.pvt``, ``.hpposllh``, ``.sat``, ``.esf``."""
        if self.chosen_protocol == "nmea":
            return [self.name]
        from adapters.nmea import ubx_sensors

        return [self.name, *(s for s, _, _ in ubx_sensors(self.name))]

    @model_validator(mode="after")
    def _one_input(self) -> NmeaConfig:
        given = [k for k in ("path", "port", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'path' (a file), 'port' (a serial device) or 'url' "
                f"(udp://HOST:PORT or tcp://HOST:PORT), found {given or 'none'}"
            )
        return self

    def build(self, context: BuildContext) -> Source:
        from adapters.nmea import NmeaSource

        return NmeaSource(
            name=self.name,
            backoff=(min(0.1, self.backoff_max_s), self.backoff_max_s),
            protocol=self.chosen_protocol,
            **self.kwargs(),
        )
