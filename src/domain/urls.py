"""Which cards hold the same page: a URL's normal form, and the key cards are found by (the
``url`` filter of listCards, an import's duplicates).

The rule (also in docs/imports.md and in the spec's description of listCards' ``url``): an http or
https URL with a host; w3lib's canonical form (scheme and host in lower case, the host in IDNA,
``.`` and ``..`` path segments resolved, percent-escapes in one spelling, an empty path as
``/``, query parameters sorted); the scheme's default port dropped (80, 443), and a trailing dot
of the host; tracking parameters dropped (``utm_*`` and the click ids of TRACKING_PARAMETERS);
the fragment dropped, unless it starts with ``!`` or ``/`` (an app's route, as in
``#!/inbox``). http and https stay apart, and so do ``www.`` and the bare host, and a path with
and without a trailing slash: sites answer them differently."""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import canonicalize_url

# Parameters that say where a visitor came from, never what the page is.
TRACKING_PARAMETERS = frozenset(
    {
        "fbclid",  # Facebook
        "gclid",  # Google Ads, and its app and web variants
        "gbraid",
        "wbraid",
        "dclid",
        "msclkid",  # Microsoft Ads
        "twclid",  # X (Twitter)
        "ttclid",  # TikTok
        "li_fat_id",  # LinkedIn
        "igshid",  # Instagram
        "yclid",  # Yandex
        "mc_cid",  # Mailchimp
        "mc_eid",
        "_hsenc",  # HubSpot
        "_hsmi",
        "mkt_tok",  # Marketo
        "oly_anon_id",  # Omeda
        "oly_enc_id",
        "vero_id",  # Vero
        "ref_src",  # X's embeds
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL = 2048  # the longest url a card holds (the spec's Url)
MAX_HOST = 253  # the longest DNS name; cards.url_site holds its site key


def normal_url(url: str) -> str | None:
    """The URL's normal form, or None when it is no http or https URL with a host."""
    if len(url) > MAX_URL:
        return None
    try:
        canonical = canonicalize_url(url.strip(), keep_fragments=True)
        parts = urlsplit(canonical)
        port = parts.port
    except ValueError:  # a port out of range or not a number, a broken IPv6 host
        return None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{port}"
    if "@" in parts.netloc:
        netloc = f"{parts.netloc.rsplit('@', 1)[0]}@{netloc}"
    query = "&".join(pair for pair in parts.query.split("&") if pair and not _tracking(pair))
    fragment = parts.fragment if parts.fragment[:1] in ("!", "/") else ""
    return urlunsplit((parts.scheme, netloc, parts.path or "/", query, fragment))


def _tracking(pair: str) -> bool:
    name = pair.split("=", 1)[0].lower()
    return name.startswith("utm_") or name in TRACKING_PARAMETERS


def site_key(host: str) -> str:
    """A host's labels reversed, each followed by a dot (``blog.example.com`` is
    ``com.example.blog.``): a site and its subdomains are the keys that begin with its own."""
    return "".join(f"{label}." for label in reversed(host.split(".")))


def url_site(url: str | None) -> str | None:
    """The site key of the URL's host in its normal form (for ``site:`` in a search), or None:
    no URL, none with a normal form, or a host longer than a DNS name can be."""
    normal = None if url is None else normal_url(url)
    host = None if normal is None else urlsplit(normal).hostname
    return None if not host or len(host) > MAX_HOST else site_key(host)


def url_key(url: str | None) -> str | None:
    """The key of the URL's normal form (32 hex digits of its SHA-256: an index entry of fixed
    size, however long the URL), or None for no URL or one without a normal form."""
    if url is None:
        return None
    normal = normal_url(url)
    return None if normal is None else hashlib.sha256(normal.encode()).hexdigest()[:32]
