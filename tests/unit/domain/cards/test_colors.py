"""Colours and their names: a palette card's colours as its content writes them (hex forms
expanded, CSS names kept, order kept, each colour once, at most MAX_PALETTE), and the nearest
CSS colour name of any colour."""

from __future__ import annotations

import pytest
from PIL import ImageColor

from cardvault.domain.cards.colors import MAX_PALETTE, named, nearest_name, palette

# -- palette -----------------------------------------------------------------------------------


def test_hex_colours_of_every_form_are_six_lowercase_digits_without_alpha() -> None:
    found = palette("#F0A #12345678 #AbCdEf #1234")

    assert [colour["hex"] for colour in found] == ["#ff00aa", "#123456", "#abcdef", "#112233"]
    assert all(colour["name"] == nearest_name(colour["hex"]) for colour in found)


def test_css_names_are_kept_as_written_in_lowercase_with_their_hex() -> None:
    assert palette("Tomato, steelblue;RebeccaPurple\n  GREY") == [
        {"hex": "#ff6347", "name": "tomato"},
        {"hex": "#4682b4", "name": "steelblue"},
        {"hex": "#663399", "name": "rebeccapurple"},
        {"hex": "#808080", "name": "grey"},  # not gray: the name written is the one kept
    ]


def test_the_order_is_kept_and_a_colour_written_again_is_dropped() -> None:
    assert palette("#0000ff red #F00 blue Red cyan aqua #00FFFF #ff000080") == [
        {"hex": "#0000ff", "name": "blue"},
        {"hex": "#ff0000", "name": "red"},
        {"hex": "#00ffff", "name": "cyan"},  # aqua, the same colour, came later
    ]


def test_a_palette_keeps_its_first_max_palette_colours() -> None:
    written = [f"#{i:06x}" for i in range(0, 100 * 0x020202, 0x020202)]
    assert len(set(written)) == 100

    found = palette(" ".join(written))

    assert len(found) == MAX_PALETTE
    assert [colour["hex"] for colour in found] == written[:MAX_PALETTE]


def test_tokens_that_are_no_colour_are_ignored() -> None:
    found = palette("red banana #12 #ggg 42 #1234567 #abcdefab0 blue")

    assert found == [{"hex": "#ff0000", "name": "red"}, {"hex": "#0000ff", "name": "blue"}]


@pytest.mark.parametrize("content", ["", "   ", "no colours here"])
def test_content_without_colours_has_an_empty_palette(content: str) -> None:
    assert palette(content) == []


def test_a_palette_is_right_after_pillow_has_looked_up_a_colour_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImageColor, "colormap", dict(ImageColor.colormap))  # Pillow's own, restored
    ImageColor.getrgb("red")  # as Image.new("RGB", size, "red") does anywhere in the process

    assert palette("red") == [{"hex": "#ff0000", "name": "red"}]


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hex_value", "name"),
    [
        ("#ff0000", "red"),
        ("#ff6347", "tomato"),
        ("#000000", "black"),
        ("#ffffff", "white"),
        ("#663399", "rebeccapurple"),
    ],
)
def test_a_css_colour_gets_its_own_name(hex_value: str, name: str) -> None:
    assert nearest_name(hex_value) == name


def test_every_css_colour_gets_its_own_name_or_the_first_of_its_synonyms() -> None:
    names_of: dict[str, list[str]] = {}
    for name in ImageColor.colormap:
        names_of.setdefault("#{:02x}{:02x}{:02x}".format(*ImageColor.getrgb(name)[:3]), []).append(name)
    assert len(names_of) > 100

    for hex_value, names in names_of.items():
        assert nearest_name(hex_value) == min(names), hex_value


@pytest.mark.parametrize(
    ("hex_value", "name"),
    [
        ("#fe0101", "red"),
        ("#0000fe", "blue"),
        ("#fe6448", "tomato"),
        ("#f0f0f1", "whitesmoke"),
        ("#010101", "black"),
    ],
)
def test_a_colour_near_a_css_colour_gets_its_name(hex_value: str, name: str) -> None:
    assert nearest_name(hex_value) == name


@pytest.mark.parametrize(
    ("hex_value", "name"),
    [
        ("#00ffff", "aqua"),  # and cyan
        ("#ff00ff", "fuchsia"),  # and magenta
        ("#808080", "gray"),  # and grey
        ("#2f4f4f", "darkslategray"),  # and darkslategrey
        ("#d3d3d3", "lightgray"),  # and lightgrey
    ],
)
def test_a_colour_with_two_names_gets_the_first_in_alphabetical_order(hex_value: str, name: str) -> None:
    assert nearest_name(hex_value) == name


def test_named_gives_each_colour_its_nearest_name_in_order() -> None:
    assert named(["#fe0101", "#00ffff", "#808080", "#ff6347"]) == [
        {"hex": "#fe0101", "name": "red"},
        {"hex": "#00ffff", "name": "aqua"},
        {"hex": "#808080", "name": "gray"},
        {"hex": "#ff6347", "name": "tomato"},
    ]
    assert named([]) == []
