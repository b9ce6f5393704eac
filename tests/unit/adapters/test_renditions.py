"""The WebP renditions every picture is kept as: 1200, 256 and 48 px, the picture's shape kept,
never enlarged, always RGB."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from cardvault.adapters.renditions import COMPACT, LARGE, PLACEHOLDER, three_sizes, webp


def _opened(data: bytes) -> Any:
    picture = Image.open(io.BytesIO(data))
    assert picture.format == "WEBP"
    return picture


def test_a_large_picture_is_made_1200_256_and_48_px_keeping_its_shape() -> None:
    sizes = [_opened(d).size for d in three_sizes(Image.new("RGB", (3000, 1500), "teal"))]
    assert sizes == [(LARGE, 600), (COMPACT, 128), (PLACEHOLDER, 24)]


def test_a_tall_picture_fits_by_its_height() -> None:
    sizes = [_opened(d).size for d in three_sizes(Image.new("RGB", (500, 2000), "teal"))]
    assert sizes == [(300, 1200), (64, 256), (12, 48)]


def test_a_small_picture_is_not_enlarged() -> None:
    sizes = [_opened(d).size for d in three_sizes(Image.new("RGB", (100, 40), "teal"))]
    assert sizes == [(100, 40), (100, 40), (48, 19)]


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P", "L", "CMYK", "I;16"])
def test_every_mode_becomes_rgb_with_its_colour(mode: str) -> None:
    picture = Image.new("RGB", (400, 400), (200, 30, 30)).convert(mode)
    for data in three_sizes(picture):
        opened = _opened(data)
        assert opened.mode == "RGB"
        if mode in ("RGBA", "P", "CMYK"):
            red, green, _ = opened.getpixel((opened.width // 2, opened.height // 2))
            assert red > 150 and green < 80


def test_the_picture_given_is_left_as_it_was() -> None:
    picture = Image.new("RGB", (2000, 1000), "teal")
    three_sizes(picture)
    assert picture.size == (2000, 1000)


def test_webp_shrinks_the_image_it_is_given_and_answers_its_bytes() -> None:
    image = Image.new("RGB", (1000, 500), "teal")
    shrunk, data = webp(image, 100, 80)
    assert shrunk is image and image.size == (100, 50) and _opened(data).size == (100, 50)
