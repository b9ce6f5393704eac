"""Values as a page writes them, made into what a card shows: text, absolute URLs, host names,
ISO dates, durations and numbers."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

MAX_TEXT = 2000  # characters kept of a title, description, name
_SPACES = re.compile(r"\s+")
_DURATION = re.compile(
    r"^P(?:(?P<d>\d{1,4})D)?(?:T(?:(?P<h>\d{1,4})H)?(?:(?P<m>\d{1,5})M)?(?:(?P<s>\d{1,6}(?:\.\d+)?)S)?)?$"
)


def clean_text(value: Any) -> str | None:
    """Text as shown: control characters dropped, white space collapsed, at most MAX_TEXT."""
    if not isinstance(value, str):
        return None
    cleaned = "".join(
        ch for ch in value[: MAX_TEXT * 4] if unicodedata.category(ch) not in ("Cc", "Cf", "Cs")
    )
    cleaned = _SPACES.sub(" ", cleaned.replace("\n", " ")).strip()
    return cleaned[:MAX_TEXT] or None


def first_of(values: Iterable[str | None]) -> str | None:
    """The first value that is not empty."""
    return next((v for v in values if v), None)


def absolute_url(value: str | None, base: str) -> str | None:
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


def host_of(url: str) -> str | None:
    """The URL's host name without ``www.``."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.removeprefix("www.") if host else None


def iso_date(value: Any) -> str | None:
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


def readable_duration(value: Any) -> str | None:
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


def number_text(value: Any) -> str | None:
    """A number, or a string of digits (with a decimal part and thousands commas), as text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"\d{1,9}(\.\d{1,3})?", value.strip().replace(",", "")):
        return value.strip().replace(",", "")
    return None
