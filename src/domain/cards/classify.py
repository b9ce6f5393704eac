"""What type a card is when the client does not say: link, quote, palette or text."""

from __future__ import annotations

import functools
import re

_URL = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://[^\x00-\x20\x7f-\x9f/?#]+(?:[/?#][^\x00-\x20\x7f-\x9f]*)?")

# Opening mark -> closing marks accepted for it.
_QUOTE_PAIRS = {
    '"': '"',
    "'": "'",
    "“": "”“",
    "„": "“”",
    "‘": "’‘",
    "‚": "‘’",
    "«": "»",
    "»": "«",
    "‹": "›",
    "›": "‹",
    "「": "」",
    "『": "』",
    "❝": "❞",
    "❛": "❜",
    "＂": "＂",
    "〝": "〞〟",
    "《": "》",
    "〈": "〉",
}

HEX_COLOUR = re.compile(r"#(?:[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})")
CSS_COLOUR_NAMES = frozenset(
    [
        "aliceblue",
        "antiquewhite",
        "aqua",
        "aquamarine",
        "azure",
        "beige",
        "bisque",
        "black",
        "blanchedalmond",
        "blue",
        "blueviolet",
        "brown",
        "burlywood",
        "cadetblue",
        "chartreuse",
        "chocolate",
        "coral",
        "cornflowerblue",
        "cornsilk",
        "crimson",
        "cyan",
        "darkblue",
        "darkcyan",
        "darkgoldenrod",
        "darkgray",
        "darkgreen",
        "darkgrey",
        "darkkhaki",
        "darkmagenta",
        "darkolivegreen",
        "darkorange",
        "darkorchid",
        "darkred",
        "darksalmon",
        "darkseagreen",
        "darkslateblue",
        "darkslategray",
        "darkslategrey",
        "darkturquoise",
        "darkviolet",
        "deeppink",
        "deepskyblue",
        "dimgray",
        "dimgrey",
        "dodgerblue",
        "firebrick",
        "floralwhite",
        "forestgreen",
        "fuchsia",
        "gainsboro",
        "ghostwhite",
        "gold",
        "goldenrod",
        "gray",
        "green",
        "greenyellow",
        "grey",
        "honeydew",
        "hotpink",
        "indianred",
        "indigo",
        "ivory",
        "khaki",
        "lavender",
        "lavenderblush",
        "lawngreen",
        "lemonchiffon",
        "lightblue",
        "lightcoral",
        "lightcyan",
        "lightgoldenrodyellow",
        "lightgray",
        "lightgreen",
        "lightgrey",
        "lightpink",
        "lightsalmon",
        "lightseagreen",
        "lightskyblue",
        "lightslategray",
        "lightslategrey",
        "lightsteelblue",
        "lightyellow",
        "lime",
        "limegreen",
        "linen",
        "magenta",
        "maroon",
        "mediumaquamarine",
        "mediumblue",
        "mediumorchid",
        "mediumpurple",
        "mediumseagreen",
        "mediumslateblue",
        "mediumspringgreen",
        "mediumturquoise",
        "mediumvioletred",
        "midnightblue",
        "mintcream",
        "mistyrose",
        "moccasin",
        "navajowhite",
        "navy",
        "oldlace",
        "olive",
        "olivedrab",
        "orange",
        "orangered",
        "orchid",
        "palegoldenrod",
        "palegreen",
        "paleturquoise",
        "palevioletred",
        "papayawhip",
        "peachpuff",
        "peru",
        "pink",
        "plum",
        "powderblue",
        "purple",
        "rebeccapurple",
        "red",
        "rosybrown",
        "royalblue",
        "saddlebrown",
        "salmon",
        "sandybrown",
        "seagreen",
        "seashell",
        "sienna",
        "silver",
        "skyblue",
        "slateblue",
        "slategray",
        "slategrey",
        "snow",
        "springgreen",
        "steelblue",
        "tan",
        "teal",
        "thistle",
        "tomato",
        "turquoise",
        "violet",
        "wheat",
        "white",
        "whitesmoke",
        "yellow",
        "yellowgreen",
    ]
)
COLOUR_SEPARATORS = re.compile(r"[\s,;]+")


def url_in(content: str) -> str | None:
    """Return the URL when the content, trimmed, is exactly one http(s) URL."""
    candidate = content.strip()
    return candidate if _URL.fullmatch(candidate) else None


@functools.cache
def _attributed_closer(closers: str) -> re.Pattern[str]:
    """The last closing mark followed by a dash-led attribution (``.*`` runs to the end, then
    gives back one character at a time in C until the rest matches: the rightmost such mark)."""
    return re.compile(r".*([" + re.escape(closers) + r"])(?=\s*[—–―~-]+\s*\S)", re.DOTALL)


def is_quote(content: str) -> bool:
    """Say whether the content is a quotation, optionally followed by an attribution: it opens
    with a quotation mark, and the last matching closing mark ends it or is followed by a
    dash-led attribution."""
    text = content.strip()
    if len(text) < 3 or text[0] not in _QUOTE_PAIRS:
        return False
    closers = _QUOTE_PAIRS[text[0]]
    if text[-1] in closers:
        return True
    attributed = _attributed_closer(closers).match(text, 1)
    return attributed is not None and attributed.start(1) > 1


def is_colour(token: str) -> bool:
    """Say whether a token is a hex colour or a CSS named colour."""
    return HEX_COLOUR.fullmatch(token) is not None or token.lower() in CSS_COLOUR_NAMES


def is_palette(content: str) -> bool:
    """Say whether the content is made only of colours."""
    tokens = [t for t in COLOUR_SEPARATORS.split(content) if t]
    return bool(tokens) and all(is_colour(t) for t in tokens)


def infer_card_type(content: str, url: str | None) -> str:
    """Return the type of a card created without one."""
    if url is not None or url_in(content) is not None:
        return "link"
    if is_quote(content):
        return "quote"
    if is_palette(content):
        return "palette"
    return "text"
