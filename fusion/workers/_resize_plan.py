"""Where a model's image resize runs: in the camera's decoder, or in the preprocess.

Theory of operation. A frame already at the model's size costs its
preprocess one copy, so the resize belongs in the decoder when the camera's
source can do it (``VideoSource`` folds it into its swscale pass). That is
only safe when nothing else sees the camera's pixels before the model.
:func:`plan_resize` makes that decision and nothing else: given what image
each worker's preprocess wants (:class:`ImageInput`), the names of the
sources, and what else reads the frames, it returns one
:class:`ResizeDecision` per camera, with no I/O and no source touched. It
refuses, in this order, when:

1. the caller turned it off (``resize_in_decoder=False``);
2. a recorder records the frames (it would record the small ones);
3. stages see the frames before the workers (they would get the small ones);
4. more than one image model reads the camera (sizes may differ).

Otherwise it asks the source named by ``ImageInput.sensor``, or the only
source when the input names none; an input whose source is not there (or
unnamed among several sources) gets no decision. :func:`apply_resize_plan`
is the thin shell: it asks each source (``Source.resize_in_decoder``, which
may still refuse, with its reason), logs the outcome, and returns it per
sensor. ``Pipeline`` and :func:`~fusion.workers._preprocess.fuse_resize` both
go through these two.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from fusion.workers._resize import Interpolation

if TYPE_CHECKING:
    from fusion._source import Source

log = logging.getLogger("fusion.workers")

UNNAMED = "the source"
"""The label of a refused decision for an input that names no sensor."""


@dataclass(frozen=True, slots=True)
class ImageInput:
    """What image a preprocess wants: ``size`` ``(height, width)``, the resize filter, and
    whose frames (``sensor``; ``None``: the items are the frames themselves)."""

    size: tuple[int, int]
    interpolation: Interpolation
    sensor: str | None = None


@runtime_checkable
class ImageConsumer(Protocol):
    """A preprocess that says which image it wants (``None``: it takes no image).

    :class:`~fusion.workers.ImagePreprocess` and the callables of
    :func:`~fusion.workers._preprocess.group_input` are; a user's preprocess
    can be too, by having this attribute.
    """

    @property
    def image_input(self) -> ImageInput | None: ...


def image_input_of(preprocess: object) -> ImageInput | None:
    """The image ``preprocess`` wants, or ``None`` if it is no :class:`ImageConsumer`."""
    return preprocess.image_input if isinstance(preprocess, ImageConsumer) else None


@dataclass(frozen=True, slots=True)
class ResizeDecision:
    """Where one camera's resize runs."""

    sensor: str
    """The source's name (:data:`UNNAMED` for a refused input that names no sensor)."""
    image: ImageInput
    """The image the model wants."""
    refusal: str | None = None
    """Why the preprocess keeps the resize; ``None``: ask the source's decoder."""


def plan_resize(
    wanted: Iterable[ImageInput],
    sources: Sequence[str],
    *,
    allowed: bool = True,
    recording: bool = False,
    staged: bool = False,
) -> list[ResizeDecision]:
    """Decide, per camera, whether its decoder should resize for the model reading it.

    ``wanted``: the image input of each worker's preprocess (one per model);
    ``sources``: the names of the sources; ``allowed``, ``recording`` and
    ``staged``: the resize may move at all, a recorder records the frames,
    stages see them first. The decisions come in the order the inputs first
    name their sensor; the module docstring gives the rules.
    """
    by_sensor: dict[str | None, list[ImageInput]] = {}
    for image in wanted:
        by_sensor.setdefault(image.sensor, []).append(image)
    out: list[ResizeDecision] = []
    for sensor, images in by_sensor.items():
        reason = (
            "resize_in_decoder=False"
            if not allowed
            else "the recorder records the full frames"
            if recording
            else "stages see the frames before the workers"
            if staged
            else "more than one image model reads this sensor"
            if len(images) > 1
            else None
        )
        if reason is not None:
            out.append(ResizeDecision(sensor or UNNAMED, images[0], reason))
        elif sensor is not None:
            out.extend(ResizeDecision(name, images[0]) for name in sources if name == sensor)
        elif len(sources) == 1:
            out.append(ResizeDecision(sources[0], images[0]))
    return out


def apply_resize_plan(
    decisions: Iterable[ResizeDecision], sources: Sequence[Source]
) -> dict[str, str]:
    """Ask the sources the plan names to resize while decoding; say, per sensor, what happens.

    Each value is where the resize runs (``"224x224 area in the source's
    decoder"``) or why it stays in the preprocess (the plan's reason, or the
    source's own refusal). Each outcome is also logged.
    """
    outcome: dict[str, str] = {}
    for decision in decisions:
        if decision.refusal is not None:
            outcome[decision.sensor] = f"in the preprocess ({decision.refusal})"
            continue
        h, w = decision.image.size
        interpolation = decision.image.interpolation
        for source in sources:
            if source.name != decision.sensor:
                continue
            refusal = source.resize_in_decoder((w, h), interpolation)
            if refusal is None:
                outcome[source.name] = f"{w}x{h} {interpolation} in the source's decoder"
                log.info("sensor %r: frames resized to %dx%d while decoding", source.name, w, h)
            else:
                outcome[source.name] = f"in the preprocess ({refusal})"
                log.info("sensor %r: frames resized in the preprocess: %s", source.name, refusal)
    return outcome
