"""What a link's page says: its title, description, site, author, dates, image, facts, price
and category, read from the fetched bytes with no network (extruct for JSON-LD, microdata and
Open Graph; selectolax for the head's links and meta tags; trafilatura for what the markup does
not state). Each field takes the first source that has it, in the order of PRECEDENCE, which
the spec repeats.

A page that is not HTML (a PDF, an image, anything else) still gets a title (its file name), a
category and, for an image, the image itself as the preview."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

# Each field's sources, first wins (documented in the spec's LinkMetadata description).
PRECEDENCE = {
    "title": ("og:title", "twitter:title", "JSON-LD name or headline", "<title>", "trafilatura"),
    "description": ("og:description", "twitter:description", "meta description", "trafilatura"),
    "siteName": ("og:site_name", "JSON-LD publisher name", "host name"),
    "author": ("JSON-LD author", "meta author", "article:author", "trafilatura"),
    "publisher": ("JSON-LD publisher name", "og:site_name"),
    "publishedAt": ("JSON-LD datePublished", "article:published_time", "trafilatura"),
    "canonicalUrl": ('<link rel="canonical">', "og:url", "the address after redirects"),
    "category": ("JSON-LD @type", "og:type", "the site", "the content type"),
}

# What a category is done as (the done verb), and so the category vocabulary.
VERBS = {
    "article": "read",
    "news": "read",
    "book": "read",
    "research": "read",
    "document": "read",
    "video": "watched",
    "movie": "watched",
    "tv": "watched",
    "music": "listened",
    "podcast": "listened",
    "product": "bought",
    "recipe": "cooked",
    "game": "played",
    "course": "done",
    "event": "done",
    "software": "done",
    "other": "done",
}

_SCHEMA_TYPES = {
    "product": ("Product", "IndividualProduct", "ProductModel", "ProductGroup", "Offer", "AggregateOffer"),
    "recipe": ("Recipe",),
    "movie": ("Movie",),
    "tv": ("TVSeries", "TVSeason", "TVEpisode"),
    "video": ("VideoObject", "Clip"),
    "music": ("MusicRecording", "MusicAlbum", "MusicPlaylist", "MusicGroup"),
    "podcast": ("PodcastEpisode", "PodcastSeries", "PodcastSeason"),
    "game": ("VideoGame",),
    "software": ("SoftwareApplication", "MobileApplication", "WebApplication"),
    "book": ("Book", "Audiobook"),
    "research": ("ScholarlyArticle", "Thesis"),
    "news": ("NewsArticle", "ReportageNewsArticle", "AnalysisNewsArticle", "OpinionNewsArticle"),
    "article": ("Article", "BlogPosting", "TechArticle", "Report", "SocialMediaPosting"),
    "course": ("Course",),
    "event": ("Event",),
}
_CATEGORY_OF_TYPE = {name: category for category, names in _SCHEMA_TYPES.items() for name in names}
_OG_TYPES = {
    "product": "product",
    "product.item": "product",
    "product.group": "product",
    "video.movie": "movie",
    "video.tv_show": "tv",
    "video.episode": "tv",
    "video.other": "video",
    "video": "video",
    "music.song": "music",
    "music.album": "music",
    "music.playlist": "music",
    "music.radio_station": "music",
    "book": "book",
    "books.book": "book",
    "article": "article",
    "game": "game",
    "game.achievement": "game",
}
# Sites whose pages are of one category (the name or any name under it).
_SITES = {
    "amazon.com": "product",
    "ebay.com": "product",
    "etsy.com": "product",
    "youtube.com": "video",
    "youtu.be": "video",
    "vimeo.com": "video",
    "twitch.tv": "video",
    "netflix.com": "movie",
    "imdb.com": "movie",
    "open.spotify.com": "music",
    "soundcloud.com": "music",
    "bandcamp.com": "music",
    "music.apple.com": "music",
    "podcasts.apple.com": "podcast",
    "store.steampowered.com": "game",
    "itch.io": "game",
    "arxiv.org": "research",
    "doi.org": "research",
    "github.com": "software",
    "goodreads.com": "book",
}

MAX_TEXT = 2000  # characters kept of a title, description, name
HEAD_CHARS = 512 * 1024  # the part of a page its head is looked for in
TEXT_CHARS = 256 * 1024  # the part of a page trafilatura reads
TEXT_KEEP = 20_000  # of its main text, the part kept (the AI stage's input)
PAGE_CHARS = 2 * 1024 * 1024  # the part of a page its schema.org items are read from
HEAD_BLOCKS = 1000  # block elements a head is read past
_HEAD_END = re.compile(r"</head\s*>|<body[\s>]", re.I)
_BLOCK = re.compile(r"<(?:div|p|section|article|ul|ol|li|table|form)[\s>]", re.I)
MAX_MEDIA = 8
MAX_FACTS = 12
_SPACES = re.compile(r"\s+")
_DURATION = re.compile(
    r"^P(?:(?P<d>\d{1,4})D)?(?:T(?:(?P<h>\d{1,4})H)?(?:(?P<m>\d{1,5})M)?(?:(?P<s>\d{1,6}(?:\.\d+)?)S)?)?$"
)
_MARKETS = re.compile(r"(^|\.)(amazon|ebay|etsy)\.[a-z]{2,3}(\.[a-z]{2})?$")
_WINDOWS_1252_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "us-ascii", "ascii", "cp819"}
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)


@dataclasses.dataclass(frozen=True)
class Page:
    """What a page says; every field None (or empty) when it does not say."""

    url: str  # where it was read from, after redirects
    content_type: str | None
    title: str | None = None
    description: str | None = None
    preview_title: str | None = None
    preview_description: str | None = None
    site_name: str | None = None
    author: str | None = None
    publisher: str | None = None
    published_at: str | None = None
    canonical_url: str | None = None
    favicon_url: str | None = None
    image_url: str | None = None
    category: str = "other"
    facts: tuple[tuple[str, str], ...] = ()
    price: tuple[Decimal, str] | None = None
    media: tuple[dict[str, Any], ...] = ()
    text: str | None = None  # the page's main text (at most TEXT_KEEP characters)

    def stored(self) -> dict[str, Any]:
        """The card's ``link_meta`` document (the title and description go to their columns)."""
        return {
            "url": self.url,
            "contentType": self.content_type,
            "previewTitle": self.preview_title,
            "previewDescription": self.preview_description,
            "siteName": self.site_name,
            "author": self.author,
            "publisher": self.publisher,
            "publishedAt": self.published_at,
            "canonicalUrl": self.canonical_url,
            "faviconUrl": self.favicon_url,
            "imageUrl": self.image_url,
            "category": self.category,
            "facts": [{"label": label, "value": value} for label, value in self.facts],
            "price": None
            if self.price is None
            else {"amount": str(self.price[0]), "currency": self.price[1]},
            "media": list(self.media),
        }


class PageUnreadable(Exception):
    """The page broke the reader in a way it does not foresee (it is read as nothing)."""


def read_page(body: bytes, *, url: str, content_type: str | None) -> Page:
    """Read a fetched page (``url`` is where it came from, after redirects); PageUnreadable
    when something in it breaks the reader."""
    mime = (content_type or "").split(";")[0].strip().lower() or None
    try:
        if mime in ("text/html", "application/xhtml+xml") or (mime is None and _looks_like_html(body)):
            return _read_html(_decode(body, content_type), url=url, content_type=mime or "text/html")
        return _read_file(url=url, content_type=mime)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise PageUnreadable(f"{type(exc).__name__}: {exc}") from None


def _read_file(*, url: str, content_type: str | None) -> Page:
    """A page that is a file: named by its path, an image its own preview."""
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or urlsplit(url).hostname or url
    is_image = content_type is not None and content_type.startswith("image/")
    category = "document" if content_type in ("application/pdf", "application/epub+zip") else None
    return Page(
        url=url,
        content_type=content_type,
        title=_text(name),
        site_name=_host(url),
        canonical_url=url,
        image_url=url if is_image else None,
        category=category or _site_category(url) or "other",
        media=(_medium("image", url, content_type),) if is_image else (),
    )


def _read_html(html: str, *, url: str, content_type: str) -> Page:
    from extruct.utils import parse_html
    from selectolax.lexbor import LexborHTMLParser

    head = _Head(LexborHTMLParser(_head_of(html)), url)
    og = head.properties
    try:
        tree = parse_html(html[:PAGE_CHARS], encoding="utf-8")
    except Exception:  # (lxml finds no document in it: only the head's tags count)
        tree = None
    items = _main_first(list(_schema_items(tree, url))) if tree is not None else []
    # trafilatura changes the tree it reads, last: the page's own when it is short enough.
    extracted = _trafilatura(tree if tree is not None and len(html) <= TEXT_CHARS else html[:TEXT_CHARS], url)

    def og1(name: str) -> str | None:
        return _text(next(iter(og.get(name, ())), None))

    def schema(*fields: str) -> str | None:
        for item in items:
            for name in fields:
                found = _name_of(item.get(name))
                if found:
                    return found
        return None

    publisher = _first(_name_of(item.get("publisher")) for item in items)
    canonical = _absolute(head.canonical, url) or _absolute(og1("og:url"), url) or url
    image = _absolute(og1("og:image:secure_url") or og1("og:image"), url) or _absolute(
        head.meta.get("twitter:image"), url
    )
    image = image or _absolute(_image_of(items), url) or _absolute(extracted.get("image"), url)
    return Page(
        url=url,
        content_type=content_type,
        title=_first((og1("og:title"), _text(head.meta.get("twitter:title")), schema("headline", "name")))
        or _text(head.title)
        or _text(extracted.get("title")),
        description=og1("og:description")
        or _text(head.meta.get("twitter:description"))
        or _text(head.meta.get("description"))
        or _text(extracted.get("description")),
        preview_title=og1("og:title") or _text(head.meta.get("twitter:title")),
        preview_description=og1("og:description") or _text(head.meta.get("twitter:description")),
        site_name=og1("og:site_name") or publisher or _host(url),
        author=_author(items)
        or _text(head.meta.get("author"))
        or _person(og1("article:author"))
        or _text(extracted.get("author")),
        publisher=publisher or og1("og:site_name"),
        published_at=_first(
            _iso_date(value)
            for value in (
                schema("datePublished", "uploadDate", "startDate"),
                og1("article:published_time"),
                extracted.get("date"),
            )
        ),
        canonical_url=canonical,
        favicon_url=head.favicon(),
        image_url=image,
        category=_category(items, og1("og:type"), url),
        facts=tuple(_facts(items))[:MAX_FACTS],
        price=_price(items, og),
        media=tuple(_media(og, url))[:MAX_MEDIA],
        text=(extracted.get("text") or "").strip()[:TEXT_KEEP] or None,
    )


def _head_of(html: str) -> str:
    """The page's head as written (up to ``</head>`` or ``<body``), at most HEAD_CHARS and at
    most HEAD_BLOCKS block elements: a head holds none, and thousands of nested ones would cost
    the parser time that grows with their square."""
    end = _HEAD_END.search(html, 0, HEAD_CHARS)
    head = html[: end.start() if end else HEAD_CHARS]
    for count, block in enumerate(_BLOCK.finditer(head), start=1):
        if count > HEAD_BLOCKS:
            return head[: block.start()]
    return head


class _Head:
    """The head's meta tags (by name or property, first wins), its Open Graph properties
    (og:, article:, product: and the like, every value in page order, wherever a stray element
    put them) and its links."""

    def __init__(self, tree: Any, url: str) -> None:
        self.meta: dict[str, str] = {}
        self.properties: dict[str, list[str]] = {}
        for node in tree.css("meta[content]"):
            content = node.attributes.get("content") or ""
            key = (node.attributes.get("name") or node.attributes.get("property") or "").strip().lower()
            if key and key not in self.meta:
                self.meta[key] = content
            prop = (node.attributes.get("property") or "").strip().lower()
            if ":" in prop:
                self.properties.setdefault(prop, []).append(content)
        title = tree.css_first("title")
        self.title = title.text() if title is not None else None
        self.canonical: str | None = None
        self._icons: list[tuple[int, str]] = []
        self._url = url
        for node in tree.css("link[href]"):
            rel = (node.attributes.get("rel") or "").lower().split()
            href = node.attributes.get("href") or ""
            if "canonical" in rel and self.canonical is None:
                self.canonical = href
            if "icon" in rel or "apple-touch-icon" in rel:
                self._icons.append(
                    (_icon_size(node.attributes.get("sizes"), "apple-touch-icon" in rel), href)
                )

    def favicon(self) -> str | None:
        """The largest icon up to 256 px the page names, else the site's /favicon.ico."""
        fitting = sorted((size, href) for size, href in self._icons if size <= 256)
        for _, href in reversed(fitting):
            absolute = _absolute(href, self._url)
            if absolute:
                return absolute
        return _absolute("/favicon.ico", self._url)


def _icon_size(sizes: str | None, touch: bool) -> int:
    """An icon's size from its ``sizes`` (its largest); an apple-touch-icon with none is 180."""
    best = 0
    for size in (sizes or "").lower().split():
        width, _, height = size.partition("x")
        if width.isascii() and width.isdigit() and height.isascii() and height.isdigit() and len(size) < 12:
            best = max(best, min(int(width), int(height)))
    return best or (180 if touch else 16)


def _schema_items(tree: Any, url: str) -> Iterator[dict[str, Any]]:
    """The schema.org items of the page's JSON-LD (each block on its own: a broken one is left
    out, the others count) and microdata (extruct), @graph and lists flattened, references by
    ``@id`` resolved, each with its type names (``@types``, without the schema.org prefix)."""
    import extruct

    blocks: list[Any] = []
    for script in tree.xpath("//script[contains(translate(@type, 'LDJSON', 'ldjson'), 'ld+json')]")[:50]:
        text = (script.text or "").strip().removeprefix("<!--").removesuffix("-->").strip()
        try:
            blocks.append(json.loads(text, strict=False))
        except (ValueError, RecursionError):
            continue
    try:
        microdata = extruct.extract(tree, base_url=url, syntaxes=["microdata"], uniform=True, errors="ignore")
    except Exception:  # (microdata it cannot read is a page without it)
        microdata = {}
    items = list(_flatten([*blocks, *microdata.get("microdata", [])], depth=0))[:500]
    by_id = {item["@id"]: item for item in items if isinstance(item.get("@id"), str) and len(item) > 1}
    for item in items:
        for name, value in item.items():  # a reference ({"@id": ...}) stands for its item
            if isinstance(value, dict) and set(value) == {"@id"} and value["@id"] in by_id:
                item[name] = by_id[value["@id"]]
            elif isinstance(value, list):
                item[name] = [
                    by_id.get(v["@id"], v) if isinstance(v, dict) and set(v) == {"@id"} else v for v in value
                ]
        types = item.get("@type")
        names = types if isinstance(types, list) else [types]
        item["@types"] = [str(t).rsplit("/", 1)[-1] for t in names if isinstance(t, str)]
        yield item


def _main_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with the main one (the first whose type has a category) first: its name,
    date and image come before a site's or an organisation's."""
    main = next((i for i in items if _category_of_item(i)), None)
    return items if main is None else [main, *(i for i in items if i is not main)]


def _category_of_item(item: dict[str, Any]) -> str | None:
    """The category an item's schema.org type names, if any."""
    for name in item.get("@types", ()):
        if name == "SoftwareApplication" and "game" in str(item.get("applicationCategory", "")).lower():
            return "game"
        category = _CATEGORY_OF_TYPE.get(name) or ("event" if name.endswith("Event") else None)
        if category:
            return category
    return None


def _flatten(values: Iterable[Any], *, depth: int) -> Iterator[dict[str, Any]]:
    for value in values:
        if isinstance(value, list) and depth < 4:
            yield from _flatten(value, depth=depth + 1)
        elif isinstance(value, dict):
            yield value
            graph = value.get("@graph")
            if isinstance(graph, list) and depth < 4:
                yield from _flatten(graph, depth=depth + 1)


def _trafilatura(html: Any, url: str) -> dict[str, Any]:
    """What trafilatura reads of the page's metadata (title, author, date, description, image),
    the last source of each, and its main text: from the page's first TEXT_CHARS (its cost
    grows with the text)."""
    import trafilatura

    try:
        document = trafilatura.bare_extraction(
            html,
            url=url,
            with_metadata=True,
            favor_precision=True,
            include_comments=False,
            date_extraction_params={"extensive_search": False, "original_date": True},
        )
    except Exception:  # (a page it cannot read is a page without what it adds)
        return {}
    if document is None:
        return {}
    return {
        name: getattr(document, name, None)
        for name in ("title", "author", "date", "description", "image", "text")
    }


def _category(items: list[dict[str, Any]], og_type: str | None, url: str) -> str:
    category = next((c for c in map(_category_of_item, items) if c), None)
    if category:
        return category
    if og_type and og_type.strip().lower() in _OG_TYPES:
        return _OG_TYPES[og_type.strip().lower()]
    return _site_category(url) or "other"


def _site_category(url: str) -> str | None:
    host = _host(url) or ""
    for site, category in _SITES.items():
        if host == site or host.endswith("." + site):
            return category
    if _MARKETS.search(host):  # amazon.de, ebay.co.uk and the like
        return "product"
    return None


# The facts each category shows: (label, schema.org property), in this order.
_FACT_FIELDS = {
    "product": (("Brand", "brand"),),
    "recipe": (("Servings", "recipeYield"), ("Total time", "totalTime")),
    "movie": (("Runtime", "duration"), ("Release", "datePublished")),
    "tv": (("Seasons", "numberOfSeasons"), ("Episodes", "numberOfEpisodes"), ("Release", "datePublished")),
    "video": (("Runtime", "duration"), ("Release", "uploadDate")),
    "music": (("Artist", "byArtist"), ("Runtime", "duration"), ("Release", "datePublished")),
    "podcast": (("Episodes", "numberOfEpisodes"), ("Runtime", "duration"), ("Release", "datePublished")),
    "book": (
        ("Authors", "author"),
        ("ISBN", "isbn"),
        ("Pages", "numberOfPages"),
        ("Release", "datePublished"),
    ),
    "game": (("Release", "datePublished"),),
    "software": (("Release", "datePublished"),),
    "research": (("Authors", "author"),),
    "event": (("Starts", "startDate"), ("Location", "location")),
    "course": (("Provider", "provider"),),
}
_DURATION_LABELS = ("Total time", "Runtime")
_DATE_LABELS = ("Release", "Starts")


def _facts(items: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Labelled facts of the main item (the first whose type has a category): its rating, then
    the category's fields of _FACT_FIELDS."""
    main = next(((i, c) for i in items if (c := _category_of_item(i))), None)
    if main is None:
        return
    item, category = main
    rating = item.get("aggregateRating")
    value = _number_text(rating.get("ratingValue")) if isinstance(rating, dict) else None
    if isinstance(rating, dict) and value:
        count = _number_text(rating.get("ratingCount") or rating.get("reviewCount"))
        yield "Rating", f"{value} ({int(Decimal(count)):,})" if count else value
    for label, field in _FACT_FIELDS.get(category, ()):
        raw = item.get(field)
        if label in _DURATION_LABELS:
            text = _duration(raw)
        elif label == "Authors":
            text = ", ".join(_names(raw)[:5]) or None
        elif label in _DATE_LABELS:
            text = _iso_date(raw if isinstance(raw, str) else None)
        else:
            text = _name_of(raw[0] if isinstance(raw, list) and raw else raw)
        if text:
            yield label, text[:200]


def _price(items: list[dict[str, Any]], og: dict[str, list[str]]) -> tuple[Decimal, str] | None:
    """The product's price: its Offer, else its AggregateOffer's low price, else Open Graph's."""
    for item in items:
        offers = item.get("offers")
        for offer in [item, *(offers if isinstance(offers, list) else [offers])]:
            if not isinstance(offer, dict):
                continue
            types = offer.get("@types") or [str(offer.get("@type", "")).rsplit("/", 1)[-1]]
            if not {"Offer", "AggregateOffer"} & set(types):
                continue
            amount = _amount(offer.get("price") if "Offer" in types else offer.get("lowPrice"))
            currency = str(offer.get("priceCurrency") or "").strip().upper()
            if amount is not None and _CURRENCY.match(currency):
                return amount, currency
    amount = _amount(next(iter(og.get("product:price:amount", og.get("og:price:amount", []))), None))
    currency = next(iter(og.get("product:price:currency", og.get("og:price:currency", []))), "").upper()
    if amount is not None and _CURRENCY.match(currency.strip()):
        return amount, currency.strip()
    return None


def _amount(value: Any) -> Decimal | None:
    """A price as written: 39.90, "39,90", "1.299,00", "1,299.00" or "€ 12"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, str):
        text = re.sub(r"[^\d.,]", "", value)[:40]
    else:
        return None
    if "," in text and "." in text:  # the last one is the decimal mark
        text = (
            text.replace(",", "")
            if text.rfind(".") > text.rfind(",")
            else text.replace(".", "").replace(",", ".")
        )
    elif "," in text:
        whole, _, part = text.rpartition(",")
        text = text.replace(",", "") if len(part) == 3 and whole else text.replace(",", ".")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        return None
    return amount if amount.is_finite() and 0 <= amount < Decimal("1e12") else None


def _media(og: dict[str, list[str]], url: str) -> Iterator[dict[str, Any]]:
    """The images and videos the page offers for previews (Open Graph), in its order."""
    images = [_absolute(u, url) for u in og.get("og:image:secure_url") or og.get("og:image", [])]
    image_types, widths, heights = (
        og.get("og:image:type", []),
        og.get("og:image:width", []),
        og.get("og:image:height", []),
    )
    poster = next((i for i in images if i), None)
    videos = [_absolute(u, url) for u in og.get("og:video:secure_url") or og.get("og:video", [])]
    video_types = og.get("og:video:type", [])
    v_widths, v_heights = og.get("og:video:width", []), og.get("og:video:height", [])
    for index, video in enumerate(videos):
        if video:
            yield _medium(
                "video",
                video,
                _at(video_types, index),
                width=_whole(_at(v_widths, index)),
                height=_whole(_at(v_heights, index)),
                posterUrl=poster,
                posterContentType=_at(image_types, 0) if poster else None,
                posterWidth=_whole(_at(widths, 0)) if poster else None,
                posterHeight=_whole(_at(heights, 0)) if poster else None,
            )
    for index, image in enumerate(images):
        if image:
            kind = _at(image_types, index)
            yield _medium(
                "image", image, kind, width=_whole(_at(widths, index)), height=_whole(_at(heights, index))
            )


def _medium(kind: str, url: str, content_type: str | None, **more: Any) -> dict[str, Any]:
    """A ``linkPreviewMedia`` entry: every field, null where not known."""
    return {
        "type": kind,
        "url": url,
        "contentType": content_type,
        "width": None,
        "height": None,
        "posterUrl": None,
        "posterContentType": None,
        "posterWidth": None,
        "posterHeight": None,
        **more,
    }


def _at(values: list[str], index: int) -> str | None:
    return _text(values[index]) if index < len(values) else None


def _whole(value: str | None) -> int | None:
    return (
        int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 7 else None
    )


def _author(items: list[dict[str, Any]]) -> str | None:
    for item in items:
        names = _names(item.get("author") or item.get("creator"))
        if names:
            return names[0]
    return None


def _names(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    found = [_name_of(v) for v in values[:20]]
    return [name for name in found if name and not name.startswith(("http://", "https://"))]


def _name_of(value: Any) -> str | None:
    """A schema.org value as text: a string, a number, or a thing's name."""
    if isinstance(value, dict):
        value = value.get("name") or value.get("@value")
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return _text(value) if isinstance(value, str) else None


def _image_of(items: list[dict[str, Any]]) -> str | None:
    for item in items:
        image = item.get("image") or item.get("thumbnailUrl")
        if isinstance(image, list):
            image = image[0] if image else None
        if isinstance(image, dict):
            image = image.get("url") or image.get("contentUrl")
        if isinstance(image, str) and image.strip():
            return image.strip()
    return None


def _person(value: str | None) -> str | None:
    """article:author holds a name or a profile URL; only a name is an author."""
    return value if value and not value.startswith(("http://", "https://", "/")) else None


def _number_text(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"\d{1,9}(\.\d{1,3})?", value.strip().replace(",", "")):
        return value.strip().replace(",", "")
    return None


def _duration(value: Any) -> str | None:
    """An ISO 8601 duration (PT1H20M) as people write it (1 h 20 min)."""
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value.strip().upper())
    if match is None or not any(match.groupdict().values()):
        return None
    days, hours, minutes, seconds = (float(match[name] or 0) for name in ("d", "h", "m", "s"))
    total = int(days * 86400 + hours * 3600 + minutes * 60 + seconds)
    hours_part, rest = divmod(total, 3600)
    minutes_part, seconds_part = divmod(rest, 60)
    parts = [f"{hours_part} h" if hours_part else "", f"{minutes_part} min" if minutes_part else ""]
    if not hours_part and not minutes_part:
        parts.append(f"{seconds_part} s")
    return " ".join(p for p in parts if p) or None


def _iso_date(value: Any) -> str | None:
    """A date as ISO 8601: ``2026-03-14`` when only the day is known, else the instant in UTC
    (``2026-03-14T09:30:00Z``; a time without a zone is taken as UTC)."""
    if not isinstance(value, str):
        return None
    text = value.strip()[:40]
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return dt.date.fromisoformat(text).isoformat()
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:  # a year 1 or 9999 moment that leaves the calendar in UTC
        return None


def _absolute(value: str | None, base: str) -> str | None:
    """An http(s) URL from a page's reference to it (relative ones resolved), or None."""
    if not value or not isinstance(value, str):
        return None
    try:
        absolute = urljoin(base, value.strip())
        parts = urlsplit(absolute)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or len(absolute) > 2048:
        return None
    return absolute


def _host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.removeprefix("www.") if host else None


def _text(value: Any) -> str | None:
    """Text as shown: control characters dropped, white space collapsed, at most MAX_TEXT."""
    if not isinstance(value, str):
        return None
    cleaned = "".join(
        ch for ch in value[: MAX_TEXT * 4] if unicodedata.category(ch) not in ("Cc", "Cf", "Cs")
    )
    cleaned = _SPACES.sub(" ", cleaned.replace("\n", " ")).strip()
    return cleaned[:MAX_TEXT] or None


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def _looks_like_html(body: bytes) -> bool:
    start = body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<meta", b"<title"))


def _decode(body: bytes, content_type: str | None) -> str:
    """The page's text: in the charset its header names, else its meta tag's, else UTF-8."""
    charset = None
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset":
            charset = value.strip().strip("\"'")
    if charset is None:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    if charset is not None and charset.lower() in _WINDOWS_1252_LABELS:
        charset = "cp1252"  # as browsers read them (the WHATWG Encoding Standard)
    for candidate in (charset, "utf-8"):
        if candidate:
            try:
                return body.decode(candidate, errors="replace")
            except LookupError:
                continue
    return body.decode("utf-8", errors="replace")
