"""ASGI middleware around the Connexion stack: request ids, the app's runtime, body size."""

from __future__ import annotations

import re
import secrets
import typing as t

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cardvault.handlers import runtime
from cardvault.handlers.errors import BodyTooLarge, UnsupportedMediaType

_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
MAX_BODY_BYTES = 4 * 1024 * 1024


class RequestContext:
    """Give each request an id (echoed as X-Request-Id) and bind the app's runtime."""

    def __init__(self, app: ASGIApp, runtime: runtime.Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = sent if _CLIENT_REQUEST_ID.fullmatch(sent) else f"req_{secrets.token_hex(8)}"
        scope.setdefault("state", {})["request_id"] = request_id
        runtime.bind(self.runtime)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = _with_request_id(message, request_id)
            await send(message)

        await self.app(scope, receive, send_with_id)


def _with_request_id(message: Message, request_id: str) -> Message:
    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
    headers.append((b"x-request-id", request_id.encode()))
    message["headers"] = headers
    return message


class ResponseRequestId:
    """Put X-Request-Id on operation responses before Connexion validates them (the spec
    requires the header), inside the stack; RequestContext covers the error responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = (scope.get("state") or {}).get("request_id")
        if scope["type"] != "http" or request_id is None:
            await self.app(scope, receive, send)
            return

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = _with_request_id(message, request_id)
            await send(message)

        await self.app(scope, receive, send_with_id)


def _is_json(media_type: bytes) -> bool:
    return media_type == b"application/json" or media_type.endswith(b"+json")


class BodyGuard:
    """Check request bodies before Connexion sees them: a body must be JSON (no operation takes
    anything else, and Connexion would hand an undeclared one to the handler raw), at most
    MAX_BODY_BYTES, and a chunked one is buffered and given a Content-Length (Connexion reads a
    body only when that header says there is one)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        media_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        declared = headers.get(b"content-length", b"")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        has_body = chunked or (declared.isdigit() and int(declared) > 0)
        if (has_body or media_type.startswith(b"multipart/")) and not _is_json(media_type):
            raise UnsupportedMediaType()
        if declared.isdigit() and int(declared) > self.limit:
            raise BodyTooLarge(self.limit)
        if chunked and not declared:
            body = await self._read_all(receive)
            scope["headers"] = [
                (k, v)
                for k, v in scope["headers"]
                if k.lower() not in (b"transfer-encoding", b"content-length")
            ] + [(b"content-length", str(len(body)).encode())]
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
