"""A page's schema.org items (JSON-LD and microdata, through extruct) and what they say: names,
authors, images, the main item's facts and a product's price."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from cardvault.adapters.pages.categories import category_of_item
from cardvault.adapters.pages.values import clean_text, iso_date, number_text, readable_duration

_CURRENCY = re.compile(r"^[A-Z]{3}$")


def schema_items(tree: Any, url: str) -> Iterator[dict[str, Any]]:
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


def main_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with the main one (the first whose type has a category) first: its name,
    date and image come before a site's or an organisation's."""
    main = next((i for i in items if category_of_item(i)), None)
    return items if main is None else [main, *(i for i in items if i is not main)]


def _flatten(values: Iterable[Any], *, depth: int) -> Iterator[dict[str, Any]]:
    for value in values:
        if isinstance(value, list) and depth < 4:
            yield from _flatten(value, depth=depth + 1)
        elif isinstance(value, dict):
            yield value
            graph = value.get("@graph")
            if isinstance(graph, list) and depth < 4:
                yield from _flatten(graph, depth=depth + 1)


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


def facts_of(items: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Labelled facts of the main item (the first whose type has a category): its rating, then
    the category's fields of _FACT_FIELDS."""
    main = next(((i, c) for i in items if (c := category_of_item(i))), None)
    if main is None:
        return
    item, category = main
    rating = item.get("aggregateRating")
    value = number_text(rating.get("ratingValue")) if isinstance(rating, dict) else None
    if isinstance(rating, dict) and value:
        count = number_text(rating.get("ratingCount") or rating.get("reviewCount"))
        yield "Rating", f"{value} ({int(Decimal(count)):,})" if count else value
    for label, field in _FACT_FIELDS.get(category, ()):
        raw = item.get(field)
        if label in _DURATION_LABELS:
            text = readable_duration(raw)
        elif label == "Authors":
            text = ", ".join(names_of(raw)[:5]) or None
        elif label in _DATE_LABELS:
            text = iso_date(raw if isinstance(raw, str) else None)
        else:
            text = name_of(raw[0] if isinstance(raw, list) and raw else raw)
        if text:
            yield label, text[:200]


def price_of(items: list[dict[str, Any]], og: dict[str, list[str]]) -> tuple[Decimal, str] | None:
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


def author_of(items: list[dict[str, Any]]) -> str | None:
    """The first author (or creator) an item names."""
    for item in items:
        names = names_of(item.get("author") or item.get("creator"))
        if names:
            return names[0]
    return None


def names_of(value: Any) -> list[str]:
    """The names a schema.org value gives (at most 20), profile URLs left out."""
    values = value if isinstance(value, list) else [value]
    found = [name_of(v) for v in values[:20]]
    return [name for name in found if name and not name.startswith(("http://", "https://"))]


def name_of(value: Any) -> str | None:
    """A schema.org value as text: a string, a number, or a thing's name."""
    if isinstance(value, dict):
        value = value.get("name") or value.get("@value")
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    return clean_text(value) if isinstance(value, str) else None


def image_of(items: list[dict[str, Any]]) -> str | None:
    """The first image (or thumbnail) an item names, as written."""
    for item in items:
        image = item.get("image") or item.get("thumbnailUrl")
        if isinstance(image, list):
            image = image[0] if image else None
        if isinstance(image, dict):
            image = image.get("url") or image.get("contentUrl")
        if isinstance(image, str) and image.strip():
            return image.strip()
    return None
