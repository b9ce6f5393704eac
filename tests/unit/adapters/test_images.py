"""An image's main colours (cardvault.adapters.images.main_colours): the colours that each
cover at least MAIN_SHARE of the picture, most covering first, at most MAIN_COLOURS, and the
transparent pixels not counted."""

from __future__ import annotations

from PIL import Image

from cardvault.adapters.images import MAIN_COLOURS, MAIN_SHARE, main_colours

BLUE, YELLOW, GREEN, RED = (30, 60, 200), (240, 200, 10), (10, 160, 40), (200, 30, 30)


def _hex(rgb: tuple[int, ...]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb[:3])


def _stripes(mode: str, stripes: list[tuple[tuple[int, ...], int]], height: int = 50) -> Image.Image:
    """A picture of vertical stripes: each a colour and a width in pixels."""
    image = Image.new(mode, (sum(width for _, width in stripes), height))
    left = 0
    for colour, width in stripes:
        image.paste(colour, (left, 0, left + width, height))
        left += width
    return image


def test_the_two_main_colours_are_answered_most_covering_first_and_not_a_sliver() -> None:
    picture = _stripes("RGB", [(YELLOW, 25), (GREEN, 4), (BLUE, 71)])  # 25%, 4%, 71%
    assert MAIN_SHARE > 4 / 100  # the green sliver is under the share

    assert main_colours(picture) == (_hex(BLUE), _hex(YELLOW))


def test_transparent_pixels_do_not_count() -> None:
    invisible = (255, 255, 255, 0)  # white, but not seen
    picture = _stripes("RGBA", [(invisible, 60), ((*RED, 255), 36), ((*GREEN, 255), 4)])

    # Green covers 4% of the picture but 10% of what is seen: it is a main colour.
    assert main_colours(picture) == (_hex(RED), _hex(GREEN))


def test_a_picture_that_is_all_transparent_has_no_main_colours() -> None:
    assert main_colours(Image.new("RGBA", (20, 20), (0, 0, 255, 0))) == ()


def test_at_most_five_colours_are_answered() -> None:
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255)]
    widths = [22, 20, 18, 16, 13, 11]  # each well over 5%
    picture = _stripes("RGB", list(zip(colours, widths, strict=True)))

    found = main_colours(picture)

    assert MAIN_COLOURS == 5
    assert found == tuple(_hex(colour) for colour in colours[:MAIN_COLOURS])


def test_colours_hidden_under_transparent_pixels_do_not_change_the_visible_ones() -> None:
    hidden = [
        (255, 0, 0),
        (0, 255, 0),
        (0, 0, 255),
        (255, 255, 0),
        (0, 255, 255),
        (255, 0, 255),
        (128, 128, 128),
        (255, 255, 255),
    ]
    orange, steel = (200, 100, 50, 255), (60, 120, 180, 255)
    picture = _stripes("RGBA", [*(((*rgb, 0), 11) for rgb in hidden), (orange, 7), (steel, 5)])

    assert main_colours(picture) == (_hex(orange), _hex(steel))
