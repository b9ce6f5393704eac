"""Conditional requests at the HTTP edge (RFC 9110 §13): the If-Match and If-None-Match fields
read and parsed, and the ETag put on a response. The rule (versions, the locked comparison)
is cardvault.domain.versions; the operations of cards, folders and webhooks call these.

Each field is parsed in one pass over at most MAX_FIELD_BYTES, into at most MAX_TAGS entity
tags; a field over either bound answers 400 INVALID_INPUT naming the header. A field within
them that is not of the RFC's grammar (``*``, or a list of entity tags ``"..."`` or
``W/"..."``) names no version, so it matches none: If-Match fails (412, nothing changes) and
If-None-Match answers the resource (200). That is the safe reading either way, and a
malformed field never makes a write unconditional."""

from __future__ import annotations

from typing import Any

from connexion.context import scope
from sqlalchemy.orm import Session

from cardvault.domain import versions
from cardvault.domain.models import Card, Webhook
from cardvault.domain.versions import Condition, Row
from cardvault.handlers.http.errors import InvalidRequest

MAX_FIELD_BYTES = 2048  # the spec's maxLength of both fields
MAX_TAGS = 32  # entity tags in one field
_OWS = " \t"


def require(session: Session, model: type[Row], *, account_id: str, row_id: str) -> None:
    """Check the request's If-Match against the row (locked for the rest of the transaction):
    412 PRECONDITION_FAILED when it names no current version. Call it first in the write's
    transaction, before the change."""
    versions.require(
        session, model, account_id=account_id, row_id=row_id, condition=field(b"if-match", "If-Match")
    )


def if_match() -> Condition | None:
    """The request's If-Match, parsed (None when it sends none)."""
    return field(b"if-match", "If-Match")


def require_on(row: Card | Webhook) -> None:
    """Check the request's If-Match against a row the request reads and leaves as it is."""
    versions.compare(row, field(b"if-match", "If-Match"))


def unchanged(tag: str) -> tuple[None, int, dict[str, str]] | None:
    """The 304 Not Modified answer (with the ETag, no body) when the request's If-None-Match
    names the resource's current entity tag (weak comparison; ``*`` names any), else None."""
    condition = field(b"if-none-match", "If-None-Match")
    if condition is not None and condition.matches_weakly(tag):
        return None, 304, {"ETag": tag}
    return None


def tagged(
    session: Session,
    body: Any,
    resource: Card | Webhook,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> tuple[Any, int, dict[str, str]]:
    """The response with the resource's ETag, as it will be committed: the session is flushed
    first, which raises the version of what the request changed."""
    session.flush()
    return body, status, {**(headers or {}), "ETag": versions.etag(resource.version)}


def with_etag(
    body: Any, tag: str, status: int = 200, headers: dict[str, str] | None = None
) -> tuple[Any, int, dict[str, str]]:
    """An answer with this ETag."""
    return body, status, {**(headers or {}), "ETag": tag}


def sent(name: bytes) -> bool:
    """Whether the request has a field of this name."""
    return any(header.lower() == name for header, _ in scope["headers"])


def field(name: bytes, label: str) -> Condition | None:
    """The request's field of this name (every line of it, as one list), parsed; None when it
    is not sent."""
    lines = [value for header, value in scope["headers"] if header.lower() == name]
    if not lines:
        return None
    if sum(len(line) + 2 for line in lines) > MAX_FIELD_BYTES + 2:
        raise _invalid(label, f"must be at most {MAX_FIELD_BYTES} bytes")
    return parse(", ".join(line.decode("latin-1") for line in lines), label)


NOTHING = Condition()  # what a malformed field names: no version at all


def parse(value: str, label: str = "If-Match", location: str = "header") -> Condition:
    """Parse ``*`` or a list of entity tags (RFC 9110 §8.8.3 and §5.6.1: empty list elements
    and whitespace around commas are allowed); anything else is NOTHING. Raise InvalidRequest
    over the bounds, naming ``label`` at ``location`` (a header, or a body field's pointer)."""
    if len(value) > MAX_FIELD_BYTES:
        raise _invalid(label, f"must be at most {MAX_FIELD_BYTES} bytes", location)
    if value.strip(_OWS) == "*":
        return Condition(any=True)
    tags: list[tuple[bool, str]] = []
    i, end = 0, len(value)
    while i < end:
        if value[i] in _OWS or value[i] == ",":
            i += 1
            continue
        weak = value.startswith("W/", i)
        start = i + 2 if weak else i
        if start >= end or value[start] != '"':
            return NOTHING
        close = start + 1
        while close < end and _etagc(value[close]):
            close += 1
        if close >= end or value[close] != '"':
            return NOTHING
        tags.append((weak, value[start : close + 1]))
        if len(tags) > MAX_TAGS:
            raise _invalid(label, f"may name at most {MAX_TAGS} entity tags", location)
        i = close + 1
        while i < end and value[i] in _OWS:
            i += 1
        if i < end and value[i] != ",":
            return NOTHING
    return Condition(tags=tuple(tags))


def _etagc(char: str) -> bool:
    """RFC 9110's etagc: %x21 / %x23-7E / obs-text (%x80-FF)."""
    code = ord(char)
    return code == 0x21 or 0x23 <= code <= 0x7E or 0x80 <= code <= 0xFF


def _invalid(label: str, message: str, location: str = "header") -> InvalidRequest:
    return InvalidRequest(
        f"The {label} {'header' if location == 'header' else 'field'} {message}.",
        details={"fields": [{"location": location, "field": label, "message": message}]},
    )
