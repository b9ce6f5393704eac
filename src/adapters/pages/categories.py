"""A page's category (the vocabulary and its done verbs): from its schema.org type, its Open Graph
type, or the site it is on."""

from __future__ import annotations

import re
from typing import Any

from cardvault.adapters.pages.values import host_of

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
_MARKETS = re.compile(r"(^|\.)(amazon|ebay|etsy)\.[a-z]{2,3}(\.[a-z]{2})?$")


def category_of_item(item: dict[str, Any]) -> str | None:
    """The category an item's schema.org type names, if any."""
    for name in item.get("@types", ()):
        if name == "SoftwareApplication" and "game" in str(item.get("applicationCategory", "")).lower():
            return "game"
        category = _CATEGORY_OF_TYPE.get(name) or ("event" if name.endswith("Event") else None)
        if category:
            return category
    return None


def page_category(items: list[dict[str, Any]], og_type: str | None, url: str) -> str:
    """The page's category: its items' schema.org type, else its og:type, else its site's, else other."""
    category = next((c for c in map(category_of_item, items) if c), None)
    if category:
        return category
    if og_type and og_type.strip().lower() in _OG_TYPES:
        return _OG_TYPES[og_type.strip().lower()]
    return site_category(url) or "other"


def site_category(url: str) -> str | None:
    """The category of every page on the URL's site, if it has one."""
    host = host_of(url) or ""
    for site, category in _SITES.items():
        if host == site or host.endswith("." + site):
            return category
    if _MARKETS.search(host):  # amazon.de, ebay.co.uk and the like
        return "product"
    return None
