"""ASGI middleware around the Connexion stack: request ids, the app's runtime, request guards
(the observability middleware is cardvault.handlers.http.observed)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import typing as t

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cardvault.handlers.http import runtime
from cardvault.handlers.http.errors import (
    AmbiguousCredentials,
    BodyTooLarge,
    HeadersTooLarge,
    InvalidRequest,
    UnsupportedMediaType,
)

_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
MAX_BODY_BYTES = 4 * 1024 * 1024


def start_request(scope: Scope, runtime_: runtime.Runtime) -> str:
    """Give the request its id (the caller's X-Request-Id when it is a plain one, else ours),
    kept in the scope's state, and bind the app's runtime; return the id."""
    sent = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
    request_id = sent if _CLIENT_REQUEST_ID.fullmatch(sent) else f"req_{secrets.token_hex(8)}"
    scope.setdefault("state", {})["request_id"] = request_id
    runtime.bind(runtime_)
    return request_id


def with_request_id(message: Message, request_id: str) -> Message:
    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
    headers.append((b"x-request-id", request_id.encode()))
    message["headers"] = headers
    return message


class ResponseRequestId:
    """Put X-Request-Id on operation responses before Connexion validates them (the spec
    requires the header), inside the stack; cardvault.handlers.http.observed.RequestEdge covers
    the error responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = (scope.get("state") or {}).get("request_id")
        if scope["type"] != "http" or request_id is None:
            await self.app(scope, receive, send)
            return

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = with_request_id(message, request_id)
            await send(message)

        await self.app(scope, receive, send_with_id)


MAX_HEADER_BYTES = 16 * 1024
MAX_QUERY_PARAMETERS = 32  # no operation declares more than 12
UI_PREFIX = "/v1/ui/"


def _media_type(content_type: bytes) -> tuple[bytes, bytes | None]:
    """The media type, lowercased (RFC 9110 §8.3.1: it is case-insensitive), and the charset
    parameter if one is given."""
    kind, *params = content_type.split(b";")
    charset = None
    for param in params:
        name, _, value = param.partition(b"=")
        if name.strip().lower() == b"charset":
            charset = value.strip().strip(b'"').lower()
    return kind.strip().lower(), charset


def _is_json(media_type: bytes) -> bool:
    return media_type == b"application/json" or media_type.endswith(b"+json")


class RequestGuard:
    """Check what every request must be before Connexion sees it:
    - headers of at most MAX_HEADER_BYTES in all (431), one Authorization header at most (two
      are ambiguous credentials: 400), one Idempotency-Key at most (400), one Content-Length
      and not beside Transfer-Encoding (400);
    - at most MAX_QUERY_PARAMETERS query parameters (400);
    - no path with a trailing slash (404; the router would redirect to a URL built from the
      Host header), except the docs UI;
    - a body must be JSON in UTF-8, not compressed (no operation takes anything else, and
      Connexion would hand an undeclared type to the handler raw), at most MAX_BODY_BYTES; its
      media type is passed on lowercased, as Connexion matches it case-sensitively;
    - a chunked body is buffered and given a Content-Length (Connexion reads a body only when
      that header says there is one)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        _check_head(scope)
        headers = dict(scope["headers"])
        media_type, charset = _media_type(headers.get(b"content-type", b""))
        declared = headers.get(b"content-length", b"")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        has_body = chunked or (declared.isdigit() and int(declared) > 0)
        if (has_body or media_type.startswith(b"multipart/")) and not _is_json(media_type):
            raise UnsupportedMediaType()
        if charset not in (None, b"utf-8", b"utf8"):
            raise UnsupportedMediaType()
        if headers.get(b"content-encoding", b"identity").strip().lower() != b"identity":
            raise UnsupportedMediaType()  # no operation takes a compressed body
        if declared.isdigit() and int(declared) > self.limit:
            raise BodyTooLarge(self.limit)
        if b"content-type" in headers:
            scope["headers"] = _replaced(scope["headers"], b"content-type", media_type)
        if chunked and not declared:
            body = await self._read_all(receive)
            scope["headers"] = _replaced(
                _replaced(scope["headers"], b"transfer-encoding", None),
                b"content-length",
                str(len(body)).encode(),
            )
            replayed = False

            async def replay() -> t.MutableMapping[str, t.Any]:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        received = 0

        async def counting_receive() -> t.MutableMapping[str, t.Any]:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, counting_receive, send)

    async def _read_all(self, receive: Receive) -> bytes:
        chunks, size = [], 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                raise BodyTooLarge(self.limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _check_head(scope: Scope) -> None:
    """Refuse oversized headers, ambiguous credentials or framing, too many query parameters,
    and trailing-slash paths."""
    if sum(len(name) + len(value) + 4 for name, value in scope["headers"]) > MAX_HEADER_BYTES:
        raise HeadersTooLarge(MAX_HEADER_BYTES)
    names = [name.lower() for name, _ in scope["headers"]]
    if names.count(b"authorization") > 1:
        raise AmbiguousCredentials()
    if names.count(b"idempotency-key") > 1:
        raise InvalidRequest(
            "Send one Idempotency-Key header.",
            details={
                "fields": [{"location": "header", "field": "Idempotency-Key", "message": "must be sent once"}]
            },
        )
    if names.count(b"content-length") > 1:
        raise InvalidRequest("Send one Content-Length header.")
    if b"content-length" in names and b"transfer-encoding" in names:
        # RFC 9112 §6.3: the framing is ambiguous (the stuff of request smuggling); refuse it.
        raise InvalidRequest("Send Content-Length or Transfer-Encoding, not both.")
    if scope.get("query_string", b"").count(b"&") >= MAX_QUERY_PARAMETERS:
        # Connexion gathers each name's values with a scan of the whole query: quadratic.
        raise InvalidRequest(f"A request takes at most {MAX_QUERY_PARAMETERS} query parameters.")
    path = scope["path"]
    if len(path) > 1 and path.endswith("/") and not path.startswith(UI_PREFIX):
        raise HTTPException(404)


def _replaced(
    headers: list[tuple[bytes, bytes]], name: bytes, value: bytes | None
) -> list[tuple[bytes, bytes]]:
    """The headers with every ``name`` header removed and, unless value is None, one set to value."""
    kept = [(k, v) for k, v in headers if k.lower() != name]
    return kept if value is None else [*kept, (name, value)]


DOCS_PREFIX = "/v1/ui"
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)
# Swagger UI (/v1/ui/) shares an origin with the sign-in pages, so it runs under a policy of its
# own: scripts from our files and the inline ones each page was served with (by their hashes,
# so nothing injected runs), no plugin or frame, requests only to us. Its styles need inline
# style attributes (React sets them), which cannot run anything.
_DOCS_POLICY = (
    "default-src 'none'; script-src 'self'{hashes}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_DOCS_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def docs_policy(html: bytes) -> str:
    """The Content-Security-Policy of one Swagger UI response: its inline scripts by hash."""
    hashes = "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(html)
    )
    return _DOCS_POLICY.format(hashes=hashes)


def _with_docs_headers(message: Message, policy: str) -> Message:
    headers = _replaced(list(message.get("headers", [])), b"content-security-policy", policy.encode())
    for name, value in _DOCS_HEADERS:
        headers = _replaced(headers, name, value)
    return {**message, "headers": headers}


class Docs:
    """The docs: the contract as written, $refs and all, at /v1/openapi.json and
    /v1/openapi.yaml (Connexion would serve it with every $ref inlined, losing the named schemas
    SDK generators need), and every response under /v1/ui (Swagger UI, served further in by
    cardvault.handlers.http.connexion_overrides.DocsUI) given its own strict headers (see
    ``docs_policy``): an HTML page (a few kB, ours) is held whole to hash its inline scripts,
    anything else streams."""

    def __init__(self, app: ASGIApp, spec: dict[str, t.Any], spec_text: str) -> None:
        self.app = app
        self.documents = {
            "/v1/openapi.json": (b"application/json", json.dumps(spec).encode()),
            "/v1/openapi.yaml": (b"application/yaml", spec_text.encode()),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        document = self.documents.get(scope["path"])
        if document is not None and scope["method"] in ("GET", "HEAD"):
            media_type, body = document
            headers = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})
        elif scope["path"].startswith(DOCS_PREFIX):
            await self.app(scope, receive, _with_docs_headers_sent(send))
        else:
            await self.app(scope, receive, send)


def _with_docs_headers_sent(send: Send) -> Send:
    start: Message | None = None
    chunks: list[bytes] = []

    async def send_with_headers(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            content_type = dict(message.get("headers", [])).get(b"content-type", b"")
            if content_type.startswith(b"text/html"):
                start = message  # sent with the body, once the body's scripts are known
                return
            message = _with_docs_headers(message, docs_policy(b""))
        elif start is not None and message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            length = str(len(body)).encode()
            headers = _replaced(list(start.get("headers", [])), b"content-length", length)
            await send(_with_docs_headers({**start, "headers": headers}, docs_policy(body)))
            message = {"type": "http.response.body", "body": body}
        await send(message)

    return send_with_headers
