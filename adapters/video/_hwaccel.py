"""Hardware decode: which device to try, whether it works, and why not.

``hwaccel`` on :class:`~adapters.VideoSource` is ``None`` (software),
``"auto"`` (the first device that works, from :data:`AUTO_ORDER`), or a device
type FFmpeg knows (``"cuda"``, ``"vaapi"``, ``"qsv"``, ``"videotoolbox"``...).

A device is used only after three checks, each of which turns a failure into a
logged reason and a software fallback, never an exception or a hang:

1. *built in*: the loaded FFmpeg was compiled with that device type and the
   stream's decoder has a hardware configuration for it
   (:func:`candidates`);
2. *device opens*: ``av_hwdevice_ctx_create`` succeeds, within
   ``timeout`` seconds (:func:`probe_device`; it runs in a helper thread, so a
   driver that never answers costs ``timeout``, not the session);
3. *it decodes*: the decoder thread decodes the first frame on the device and
   downloads it (see :mod:`adapters.video._decoder`); frames decoded during
   that check are kept, not thrown away.

:class:`HWAccelReport` records what was asked, what is used and every reason
on the way, for ``VideoSource.hwaccel_report`` and the source's statistics.
"""

from __future__ import annotations

import errno
import logging
import threading
from dataclasses import dataclass, field

import av
from av.codec.hwaccel import HWAccel, HWDeviceType, hwdevices_available

log = logging.getLogger("adapters.video")

AUTO_ORDER: tuple[str, ...] = (
    "cuda",
    "vaapi",
    "qsv",
    "videotoolbox",
    "d3d11va",
    "d3d12va",
    "dxva2",
    "vulkan",
    "vdpau",
)
"""Devices ``hwaccel="auto"`` tries, in order (if built into FFmpeg and the codec supports them)."""

DEVICE_TYPES: frozenset[str] = frozenset(
    t.name for t in HWDeviceType if t.name != "none"
) | frozenset(hwdevices_available())


@dataclass(slots=True)
class HWAccelReport:
    """What hardware decode was asked for, what is used, and why any device was refused."""

    requested: str | None
    """``None``, ``"auto"`` or a device type name."""
    used: str | None = None
    """The device decoding now, or ``None`` for software."""
    reasons: list[str] = field(default_factory=list)
    """One line per refused device, e.g. ``"cuda: could not open the device (...)"``."""

    @property
    def fell_back(self) -> bool:
        """Hardware was requested but software decodes."""
        return self.requested is not None and self.used is None

    def refuse(self, device: str, reason: str) -> None:
        """Record why ``device`` is not used (and log it)."""
        line = f"{device}: {reason}"
        self.reasons.append(line)
        log.warning("hardware decode %s", line)

    def as_dict(self) -> dict[str, object]:
        """JSON-safe form for metrics."""
        return {"requested": self.requested, "used": self.used, "reasons": list(self.reasons)}

    def __str__(self) -> str:
        if self.requested is None:
            return "software decode (no hardware requested)"
        if self.used is not None:
            return f"hardware decode on {self.used}"
        why = "; ".join(self.reasons) or "no reason recorded"
        return f"software decode: hardware {self.requested!r} unavailable ({why})"


def validate(hwaccel: str | None) -> str | None:
    """Check an ``hwaccel`` argument early; unknown names are a caller error."""
    if hwaccel is None or hwaccel == "auto":
        return hwaccel
    if hwaccel not in DEVICE_TYPES:
        raise ValueError(
            f"unknown hwaccel {hwaccel!r}: expected None, 'auto' or one of "
            f"{', '.join(sorted(DEVICE_TYPES))}"
        )
    return hwaccel


def candidates(requested: str | None, codec: av.codec.Codec, report: HWAccelReport) -> list[str]:
    """Devices worth trying for ``codec``, in order; refusals go to ``report``."""
    if requested is None:
        return []
    built = set(hwdevices_available())
    configs = {
        cfg.device_type.name
        for cfg in (codec.hardware_configs or ())
        if cfg.is_supported  # decoders need the device-context method PyAV implements
    }
    wanted = [d for d in AUTO_ORDER if d in built] if requested == "auto" else [requested]
    out: list[str] = []
    for device in wanted:
        if device not in built:
            report.refuse(device, "this FFmpeg build has no support for this device type")
        elif device not in configs:
            report.refuse(device, f"decoder {codec.name!r} has no hardware path on this device")
        else:
            out.append(device)
    if requested == "auto" and not wanted:
        report.refuse("auto", "this FFmpeg build supports no hardware decode device")
    return out


def probe_device(
    device: str, codec: av.codec.Codec, device_id: str | None = None, timeout: float = 5.0
) -> str | None:
    """Try to open ``device`` for ``codec``; ``None`` if it works, else the reason.

    Runs in a daemon helper thread so a driver that hangs costs ``timeout``
    seconds at most.
    """
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            HWAccel(device, device=device_id, allow_software_fallback=False).create(codec)
        except Exception as err:
            outcome.append(_describe(device, err))
        else:
            outcome.append(None)

    helper = threading.Thread(target=attempt, name=f"hwaccel-probe-{device}", daemon=True)
    helper.start()
    helper.join(timeout)
    if helper.is_alive():
        return f"opening the device did not finish within {timeout:g} s"
    return outcome[0] if outcome else "the probe ended without a result"


def make(device: str, device_id: str | None = None) -> HWAccel:
    """The PyAV accelerator for ``device``, without PyAV's silent software fallback."""
    return HWAccel(device, device=device_id, allow_software_fallback=False)


def _describe(device: str, err: BaseException) -> str:
    code = getattr(err, "errno", None)
    text = getattr(err, "strerror", None) or str(err) or type(err).__name__
    if device == "cuda" and code in (errno.EPERM, errno.ENOENT, errno.ENODEV):
        return f"could not open the device ({text}): no usable NVIDIA GPU or driver"
    if isinstance(err, NotImplementedError):
        return f"no hardware configuration for this codec ({text})"
    return f"could not open the device ({type(err).__name__}: {text})"
