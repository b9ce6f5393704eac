"""The types of settings: how each reads a variable that is set, and the error that names the
variable when its value cannot be used (an unset or empty variable is its setting's default,
cardvault.settings.declaring)."""

from __future__ import annotations

import re
from pathlib import Path

import limits

from cardvault.settings.declaring import Kind, SettingsError


def _flag(name: str, raw: str) -> bool:
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name} must be true or false, not {raw!r}")


def _number(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive")
    return value


def _whole(name: str, raw: str) -> int:
    value = _number(name, raw)
    if value != int(value):
        raise SettingsError(f"{name} must be a whole number")
    return int(value)


def _text(name: str, raw: str) -> str:
    return raw


def _path(name: str, raw: str) -> Path:
    return Path(raw)


FLAG = Kind("true or false", _flag)
NUMBER = Kind("number > 0", _number)
WHOLE = Kind("whole number > 0", _whole)
# A number whose whole part is taken (2.5 reads as 2), as the tag batch size has always been read.
WHOLE_PART = Kind("number > 0 (its whole part)", lambda name, raw: int(_number(name, raw)))
TEXT = Kind("text", _text)
PATH = Kind("path", _path)


def at_most(most: float) -> Kind[float]:
    """A positive number no larger than ``most``."""

    def parse(name: str, raw: str) -> float:
        value = _number(name, raw)
        if value > most:
            raise SettingsError(f"{name} must be at most {most:g}")
        return value

    return Kind(f"number > 0, at most {most:g}", parse)


def _share(name: str, raw: str) -> float:
    value = _number(name, raw)
    if not 0.0 <= value <= 1.0:
        raise SettingsError(f"{name} must be between 0 and 1")
    return value


SHARE = Kind("number > 0, at most 1", _share)


def _quota(name: str, raw: str) -> int | None:
    if raw.lower() == "off":
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise SettingsError(f"{name} must be a positive number of bytes or off, not {raw!r}")
    return int(raw)


def _cap(name: str, raw: str) -> int | None:
    return None if raw.lower() == "off" else _whole(name, raw)


BYTES_OR_OFF = Kind("whole number > 0, or off", _quota)
WHOLE_OR_OFF = Kind("whole number > 0, or off", _cap)


def url(schemes: tuple[str, ...], says: str, *, strip_slash: bool = False) -> Kind[str]:
    """A URL that starts with one of ``schemes`` (``says`` completes the error), its trailing
    slashes dropped with ``strip_slash``."""

    def parse(name: str, raw: str) -> str:
        value = raw.rstrip("/") if strip_slash else raw
        if not value.startswith(schemes):
            raise SettingsError(f"{name} {says}")
        return value

    named = [f"`{scheme}`" for scheme in schemes]
    return Kind(f"{', '.join(named[:-1])} or {named[-1]} URL" if len(named) > 1 else f"{named[0]} URL", parse)


HTTP_URL = url(("http://", "https://"), "must start with http:// or https://")
HTTP_BASE_URL = url(("http://", "https://"), "must start with http:// or https://", strip_slash=True)


def _secret(name: str, raw: str) -> str:
    if len(raw) < 32:
        raise SettingsError(f"{name} must be at least 32 characters")
    return raw


SECRET = Kind("32+ characters", _secret)


def _token(name: str, raw: str) -> str:
    if len(raw) < 16 or not raw.isascii() or not raw.isprintable() or " " in raw:
        raise SettingsError(f"{name} must be at least 16 printable ASCII characters, no spaces")
    return raw


TOKEN = Kind("16+ printable ASCII characters", _token)


def _port(name: str, raw: str) -> int:
    raw = raw.strip()
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise SettingsError(f"{name} must be a port from 1 to 65535, not {raw!r}")
    return int(raw)


def _ports(name: str, raw: str) -> tuple[int, ...]:
    try:
        ports = tuple(int(part) for part in raw.split(","))
    except ValueError:
        raise SettingsError(f"{name} must list ports like 80,443, not {raw!r}") from None
    if not all(0 < port < 65536 for port in ports):
        raise SettingsError(f"{name} must list ports from 1 to 65535")
    return ports


def _waits(name: str, raw: str) -> tuple[float, ...]:
    try:
        waits = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise SettingsError(f"{name} must list seconds like 0,5,300, not {raw!r}") from None
    if not 1 <= len(waits) <= 20 or not all(0 <= wait <= 86400 for wait in waits):
        raise SettingsError(f"{name} must list 1 to 20 waits of 0 to 86400 seconds")
    return waits


PORT = Kind("port", _port, blank_is_unset=True)
PORTS = Kind("ports, comma-separated", _ports, blank_is_unset=True)
WAITS = Kind("1 to 20 waits of 0 to 86400, comma-separated", _waits, blank_is_unset=True)


def _rate(name: str, raw: str) -> str | None:
    raw = raw.strip()
    if raw.lower() == "off":
        return None
    try:
        items = limits.parse_many(raw)
    except ValueError:
        items = []
    if len(items) != 1:
        raise SettingsError(f"{name} must read like 60/minute or off (one limit), not {raw!r}")
    if items[0].amount < 1:
        raise SettingsError(f"{name} must allow at least one request")
    return raw


RATE = Kind("N/period, or off", _rate)


def choices(allowed: tuple[str, ...], always: str) -> Kind[tuple[str, ...]]:
    """A comma-separated list of ``allowed`` words that holds ``always``."""
    others = ", ".join(word for word in allowed if word != always)

    def parse(name: str, raw: str) -> tuple[str, ...]:
        chosen = tuple(part.strip() for part in raw.split(","))
        if any(word not in allowed for word in chosen) or always not in chosen:
            raise SettingsError(
                f"{name} must list {always} and any of {others}, like {','.join(allowed)}, not {raw!r}"
            )
        return chosen

    return Kind(f"{always}, and any of {others}, comma-separated", parse)


def _languages(name: str, raw: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in raw.replace("+", ",").split(","))
    if not all(re.fullmatch(r"[a-z][a-z0-9_]{1,31}", word) for word in chosen):
        raise SettingsError(f"{name} must list Tesseract language names like eng,deu, not {raw!r}")
    return tuple(dict.fromkeys(chosen))


LANGUAGES = Kind("language names, comma-separated (`eng,deu`)", _languages)
