"""Colours a card shows, and their names: a palette card's colours as its content writes them,
an image's main colours as its ``renditions`` stage found them.

A colour is ``#rrggbb`` (lowercase; a short or alpha form is expanded, the alpha dropped) with a
name: a CSS named colour keeps its own name; any other colour is named by the nearest of the 148
CSS named colours, nearest by the CIE76 distance in CIELAB (how far apart people see them, not
how far apart their numbers are). Where two names share one colour (``aqua`` and ``cyan``,
``gray`` and ``grey``), the first in alphabetical order is used."""

from __future__ import annotations

import functools

from PIL import ImageColor

from cardvault.domain.cards.classify import COLOUR_SEPARATORS, HEX_COLOUR

MAX_PALETTE = 64  # the colours of a palette card shown: its first distinct ones


def palette(content: str) -> list[dict[str, str]]:
    """A palette card's colours, in the order written, each once, at most MAX_PALETTE."""
    found: dict[str, dict[str, str]] = {}
    for token in COLOUR_SEPARATORS.split(content):
        if len(found) == MAX_PALETTE:
            break
        name = token.lower()
        if name in _css_colours():
            hex_value = _css_colours()[name]
        elif HEX_COLOUR.fullmatch(token):
            hex_value, name = _six_digits(token), ""
        else:
            continue
        found.setdefault(hex_value, {"hex": hex_value, "name": name or nearest_name(hex_value)})
    return list(found.values())


def named(hex_values: list[str]) -> list[dict[str, str]]:
    """Colours (``#rrggbb``) with their nearest CSS names."""
    return [{"hex": value, "name": nearest_name(value)} for value in hex_values]


def _six_digits(token: str) -> str:
    digits = token[1:].lower()
    if len(digits) in (3, 4):
        digits = "".join(d * 2 for d in digits[:3])
    return "#" + digits[:6]


@functools.lru_cache(maxsize=4096)
def nearest_name(hex_value: str) -> str:
    """The CSS colour name nearest to ``#rrggbb``."""
    lab = _lab(hex_value)
    return min(_named_lab(), key=lambda entry: (_distance(lab, entry[1]), entry[0]))[0]


@functools.cache
def _css_colours() -> dict[str, str]:
    """The CSS named colours, name to ``#rrggbb`` (read through ``getrgb``: Pillow replaces a
    table entry with a tuple once the name was looked up)."""
    return {name: "#{:02x}{:02x}{:02x}".format(*ImageColor.getrgb(name)[:3]) for name in ImageColor.colormap}


@functools.cache
def _named_lab() -> tuple[tuple[str, tuple[float, float, float]], ...]:
    return tuple((name, _lab(value)) for name, value in sorted(_css_colours().items()))


def _distance(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True))


def _lab(hex_value: str) -> tuple[float, float, float]:
    """sRGB to CIELAB (D65 white)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(hex_value[i : i + 2], 16)) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)
