"""How a tool call reaches its operation: the /mcp request's caller (its Authorization header,
scopes and request), and the operation's request sent through the whole app as an internal ASGI
request, as that caller, answered as the status, headers and body the app sent."""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from typing import Any

import anyio
import orjson
from starlette.types import ASGIApp, Message, Scope

from cardvault.handlers.http.auth import MCP_DISPATCH
from cardvault.handlers.http.mcp_tools import HttpCall


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who sent the /mcp request being served: each tool call's request goes as them."""

    authorization: bytes
    scopes: tuple[str, ...]
    scope: Scope  # the /mcp request's


# Set by the route for the request it serves; the SDK runs the request's handlers in tasks
# started inside it, which copy it.
current: ContextVar[Caller] = ContextVar("cardvault_mcp_caller")


@dataclasses.dataclass
class ApiTarget:
    """The app a tool call's request is sent through (set once the app is built)."""

    app: ASGIApp | None = None


# The most of an operation's answer a tool call carries back: a list's page with its cards' whole
# texts can be far larger than an agent can read, and the answer is held, parsed and written
# again (as text and as structured content) in memory.
MAX_ANSWER_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the app answered an operation's request (``oversized``: its body was over
    MAX_ANSWER_BYTES, and is dropped)."""

    status: int
    headers: dict[str, str]
    body: bytes
    oversized: bool = False

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


async def send_through(app: ASGIApp, outer: Scope, call: HttpCall, authorization: bytes) -> Answer:
    """Serve ``call`` (an HttpCall) by the app, as the caller's request."""
    outer_headers = dict(outer["headers"])
    headers = [(b"authorization", authorization), (b"accept", b"application/json"), *call.headers]
    for name in (b"host", b"user-agent"):
        if name in outer_headers:
            headers.append((name, outer_headers[name]))
    request_id = (outer.get("state") or {}).get("request_id")
    if request_id:
        headers.append((b"x-request-id", request_id.encode()))
    if call.body is not None:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(call.body)).encode())]
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": call.method,
        "scheme": outer.get("scheme", "http"),
        "server": outer.get("server"),
        "client": outer.get("client"),
        "root_path": "",
        "path": call.path,
        "raw_path": call.raw_path.encode(),
        "query_string": call.query,
        "headers": headers,
        # Marks the request as the tool dispatch's: only here is a token issued for /mcp taken.
        "extensions": {MCP_DISPATCH: True},
    }
    finished = anyio.Event()
    sent = False
    status, answer_headers, chunks = 500, {}, []
    size = 0

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": call.body or b"", "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, answer_headers, size
        if message["type"] == "http.response.start":
            status = message["status"]
            answer_headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= MAX_ANSWER_BYTES:
                chunks.append(chunk)
            else:
                chunks.clear()  # the rest is read and dropped: the app finishes its answer
            if not message.get("more_body", False):
                finished.set()

    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    if size > MAX_ANSWER_BYTES:
        return Answer(status, answer_headers, b"", oversized=True)
    return Answer(status, answer_headers, b"".join(chunks))
