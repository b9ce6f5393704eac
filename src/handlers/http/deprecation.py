"""What the spec marks `deprecated: true`, said on the answers: `Deprecation` (RFC 9745) and,
where the spec gives a date, `Sunset` (RFC 8594).

An operation or a parameter that is deprecated names when in `x-deprecated-at` (a date, or a
date and time in UTC) and, optionally, when it may stop answering in `x-sunset`. Every answer
of a deprecated operation, and every answer to a request that sends a deprecated query or
header parameter, carries `Deprecation: @<epoch seconds>` (a Structured Field Date, RFC 9651)
and, with `x-sunset`, `Sunset: <IMF-fixdate>`. The table is read from the spec once, when the
app is built; a spec that deprecates something without `x-deprecated-at`, or sets a sunset
before the deprecation, is refused then. The routed operation is read through
`connexion_overrides.routed_operation`, once Connexion's routing has run.
"""

from __future__ import annotations

import datetime as dt
import typing as t
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import format_datetime
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cardvault.handlers.http import connexion_overrides

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@dataclass(frozen=True)
class Notice:
    """When something was (or will be) deprecated, and when it may stop answering."""

    deprecated_at: dt.datetime
    sunset: dt.datetime | None

    def headers(self) -> list[tuple[bytes, bytes]]:
        found = [(b"deprecation", f"@{int(self.deprecated_at.timestamp())}".encode())]
        if self.sunset is not None:
            found.append((b"sunset", format_datetime(self.sunset, usegmt=True).encode()))
        return found


@dataclass(frozen=True)
class Deprecated:
    """An operation's notice, if it is deprecated, and those of its deprecated parameters."""

    operation: Notice | None
    # (where: "query" or "header", the name as matched: a header's in lower case, its notice)
    parameters: tuple[tuple[str, str, Notice], ...]

    def applying(self, scope: Scope) -> Notice | None:
        """The notice a request gets: the operation's, else the soonest of the deprecated
        parameters it sends."""
        if self.operation is not None:
            return self.operation
        sent = {("header", name.decode("latin-1").lower()) for name, _ in scope.get("headers", ())}
        query = scope.get("query_string", b"").decode("latin-1")
        sent |= {("query", name) for name, _ in parse_qsl(query, keep_blank_values=True)}
        used = [notice for where, name, notice in self.parameters if (where, name) in sent]
        if not used:
            return None
        sunsets = [notice.sunset for notice in used if notice.sunset is not None]
        return Notice(min(notice.deprecated_at for notice in used), min(sunsets) if sunsets else None)


def _moment(value: t.Any, what: str) -> dt.datetime:
    """A date or date and time of the spec (YAML reads `2027-01-31` as a date) in UTC."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError as error:
            raise ValueError(f"{what}: {value!r} is not an ISO 8601 date") from error
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    raise ValueError(f"{what}: {value!r} is not a date")


def _notice(node: dict[str, t.Any], what: str) -> Notice | None:
    if not node.get("deprecated"):
        return None
    if "x-deprecated-at" not in node:
        raise ValueError(f"{what} is deprecated: say since when in x-deprecated-at")
    notice = Notice(
        _moment(node["x-deprecated-at"], f"{what} x-deprecated-at"),
        _moment(node["x-sunset"], f"{what} x-sunset") if "x-sunset" in node else None,
    )
    if notice.sunset is not None and notice.sunset < notice.deprecated_at:
        raise ValueError(f"{what}: x-sunset is before x-deprecated-at")
    return notice


def _resolved(spec: dict[str, t.Any], node: dict[str, t.Any]) -> dict[str, t.Any]:
    while "$ref" in node:
        target: t.Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def notices_from_spec(spec: dict[str, t.Any], function_of: Callable[[str], str]) -> dict[str, Deprecated]:
    """Per routed function (`function_of(operationId)`), what of its operation is deprecated;
    operations with nothing deprecated are left out."""
    table: dict[str, Deprecated] = {}
    for template, item in spec["paths"].items():
        for method in _METHODS:
            if method not in item:
                continue
            operation = item[method]
            what = f"{method.upper()} {template}"
            merged = {
                (p["in"], p["name"]): p
                for p in (
                    _resolved(spec, raw)
                    for raw in [*item.get("parameters", []), *operation.get("parameters", [])]
                )
            }
            parameters = tuple(
                (where, name.lower() if where == "header" else name, notice)
                for (where, name), parameter in merged.items()
                if where in {"query", "header"}
                and (notice := _notice(parameter, f"{what} parameter {name}")) is not None
            )
            own = _notice(operation, what)
            if own is not None or parameters:
                table[function_of(operation["operationId"])] = Deprecated(own, parameters)
    return table


class Deprecations:
    """Adds the deprecation headers to the answers of what the spec deprecates."""

    def __init__(self, app: ASGIApp, notices: dict[str, Deprecated]) -> None:
        self.app = app
        self.notices = notices

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.notices:
            await self.app(scope, receive, send)
            return
        connexion_overrides.shared_extensions(scope)  # so that the routing below is seen here

        async def send_noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                found = self.notices.get(connexion_overrides.routed_operation(scope) or "")
                notice = found.applying(scope) if found is not None else None
                if notice is not None:
                    message = {**message, "headers": [*message.get("headers", []), *notice.headers()]}
            await send(message)

        await self.app(scope, receive, send_noted)
