"""plan_resize: the sans-I/O decision of where a model's resize runs, rule by rule.

The wiring it drives (a real VideoSource resizing in its swscale pass, the
same pixels) is in tests/adapters/test_video_fused_resize.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from fusion import Frame, SensorSpec, Source
from fusion.workers import ImagePreprocess
from fusion.workers._preprocess import fuse_resize, group_input
from fusion.workers._resize_plan import (
    UNNAMED,
    ImageConsumer,
    ImageInput,
    ResizeDecision,
    apply_resize_plan,
    image_input_of,
    plan_resize,
)

CAM = ImageInput((224, 224), "area", "cam")
CAM_SMALL = ImageInput((32, 32), "bilinear", "cam")
LEFT = ImageInput((64, 48), "nearest", "left")
UNNAMED_INPUT = ImageInput((224, 224), "area")


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        ({"allowed": False}, "resize_in_decoder=False"),
        ({"recording": True}, "the recorder records the full frames"),
        ({"staged": True}, "stages see the frames before the workers"),
        # the first rule that applies gives the reason
        ({"allowed": False, "recording": True, "staged": True}, "resize_in_decoder=False"),
        ({"recording": True, "staged": True}, "the recorder records the full frames"),
    ],
)
def test_plan_refuses_when_something_else_sees_the_pixels_or_it_is_off(
    flags: dict[str, bool], reason: str
) -> None:
    assert plan_resize([CAM], ["cam"], **flags) == [ResizeDecision("cam", CAM, reason)]


def test_plan_refuses_a_camera_read_by_two_image_models() -> None:
    assert plan_resize([CAM, CAM_SMALL], ["cam"]) == [
        ResizeDecision("cam", CAM, "more than one image model reads this sensor")
    ]


def test_plan_labels_a_refused_input_that_names_no_sensor() -> None:
    assert plan_resize([UNNAMED_INPUT], ["cam"], recording=True) == [
        ResizeDecision(UNNAMED, UNNAMED_INPUT, "the recorder records the full frames")
    ]


def test_plan_asks_the_named_camera_and_the_only_source_for_an_unnamed_input() -> None:
    assert plan_resize([CAM], ["lidar", "cam"]) == [ResizeDecision("cam", CAM)]
    assert plan_resize([UNNAMED_INPUT], ["front"]) == [ResizeDecision("front", UNNAMED_INPUT)]


def test_plan_decides_each_camera_on_its_own_in_the_order_the_models_name_them() -> None:
    assert plan_resize([LEFT, CAM, CAM_SMALL], ["cam", "left"]) == [
        ResizeDecision("left", LEFT),
        ResizeDecision("cam", CAM, "more than one image model reads this sensor"),
    ]


@pytest.mark.parametrize(
    ("wanted", "sources"),
    [
        ([], ["cam"]),  # no image model
        ([CAM], ["lidar"]),  # the named camera is not a source
        ([UNNAMED_INPUT], ["a", "b"]),  # unnamed among several sources
        ([UNNAMED_INPUT], []),
    ],
)
def test_plan_has_no_decision_where_no_source_is_meant(
    wanted: list[ImageInput], sources: list[str]
) -> None:
    assert plan_resize(wanted, sources) == []


class UserPreprocess:
    """A user's preprocess that says which image it wants."""

    image_input = ImageInput((10, 20), "nearest", "cam")

    def __call__(self, items: list[Any]) -> np.ndarray:
        return np.zeros((len(items), 3, 10, 20), np.float32)


def test_image_input_of_reads_the_attribute_of_every_image_consumer() -> None:
    assert image_input_of(ImagePreprocess((48, 64), interpolation="bilinear")) == ImageInput(
        (48, 64), "bilinear"
    )
    assert image_input_of(group_input("cam", "image", size=(32, 32))) == ImageInput(
        (32, 32), "area", "cam"
    )
    assert image_input_of(UserPreprocess()) == UserPreprocess.image_input
    assert isinstance(UserPreprocess(), ImageConsumer)
    assert image_input_of(group_input("lidar", "points")) is None
    assert image_input_of(lambda items: items) is None


class Still(Source):
    """A camera of one frame; resizes while 'decoding' only to even sizes."""

    def __init__(self, name: str) -> None:
        super().__init__(SensorSpec(name, kind="camera"))
        self.asked: list[tuple[tuple[int, int], str]] = []

    def resize_in_decoder(self, size: tuple[int, int], interpolation: str) -> str | None:
        self.asked.append((size, interpolation))
        return None if size[0] % 2 == 0 else f"odd width {size[0]}"

    async def frames(self) -> AsyncIterator[Frame]:
        yield self.make_frame(0, np.zeros((4, 4, 3), np.uint8))


def test_apply_asks_only_the_planned_sources_and_reports_their_answers() -> None:
    cam, left, other = Still("cam"), Still("left"), Still("other")
    plan = [
        ResizeDecision("cam", ImageInput((224, 224), "area", "cam")),  # (h, w): asks (w, h)
        ResizeDecision("left", ImageInput((48, 63), "bilinear", "left")),
        ResizeDecision(UNNAMED, UNNAMED_INPUT, "the recorder records the full frames"),
    ]
    assert apply_resize_plan(plan, [cam, left, other]) == {
        "cam": "224x224 area in the source's decoder",
        "left": "in the preprocess (odd width 63)",
        UNNAMED: "in the preprocess (the recorder records the full frames)",
    }
    assert cam.asked == [((224, 224), "area")]
    assert left.asked == [((63, 48), "bilinear")]
    assert other.asked == []


class Plain(Source):
    """A source that keeps Source's default: it cannot resize while decoding."""

    async def frames(self) -> AsyncIterator[Frame]:
        yield self.make_frame(0, None)


def test_fuse_resize_goes_through_the_plan_and_a_plain_source_refuses() -> None:
    plain = Plain(SensorSpec("cam"))
    assert fuse_resize([plain], group_input("cam", "image", size=(32, 32))) == {
        "cam": "in the preprocess (Plain does not resize while decoding)"
    }
    still = Still("front")
    assert fuse_resize([still], ImagePreprocess((16, 16))) == {
        "front": "16x16 area in the source's decoder"
    }
