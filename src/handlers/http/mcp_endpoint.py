"""``/mcp``: the API as a Model Context Protocol server over Streamable HTTP (the official SDK's
low-level server, stateless, JSON answers), with the API's own bearer credentials.

A tool call is the HTTP request of its operation (cardvault.handlers.http.mcp_tools), sent
through the whole app as an internal ASGI request with the caller's Authorization header: the
same validation, scopes, rate limits, Idempotency-Key and error table as over HTTP. A success
answers its JSON body as ``structuredContent``; an error answers it as a tool error (isError).

A request without a credential, or with an access token issued for another resource (RFC 8707),
answers 401 with ``WWW-Authenticate: Bearer resource_metadata=...`` (RFC 9728), where agent
clients find the authorization server (cardvault.handlers.web.agents)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cardvault.domain.auth import credentials
from cardvault.handlers.http import auth, runtime
from cardvault.handlers.http.errors import error_response
from cardvault.handlers.http.mcp_tools import BODY, CONFIRM, Tool, http_call, tools_from_spec

MCP_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
CARD_URI = "cardvault://cards/{id}"
MAX_BODY_BYTES = 1024 * 1024  # a tool call's arguments; the API's own bodies are bounded again
SEARCH_RESULTS = 10
RESOURCE_NOT_FOUND = -32002
_METADATA = ("type", "url", "tags", "aiTags", "createdAt", "updatedAt", "isFavorited", "isArchived")


def mcp_url(public_url: str) -> str:
    """The resource an access token must be issued for to be used at /mcp."""
    return public_url + MCP_PATH


@dataclasses.dataclass(frozen=True)
class _Caller:
    authorization: bytes
    scopes: tuple[str, ...]
    scope: Scope  # the /mcp request's


_caller: ContextVar[_Caller] = ContextVar("cardvault_mcp_caller")


@dataclasses.dataclass
class ApiTarget:
    """The app a tool call's request is sent through (set once the app is built)."""

    app: ASGIApp | None = None


@dataclasses.dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


async def _send_through(app: ASGIApp, outer: Scope, call: Any, authorization: bytes) -> Answer:
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
    }
    finished = anyio.Event()
    sent = False
    status, answer_headers, chunks = 500, {}, []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": call.body or b"", "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, answer_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            answer_headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                finished.set()

    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    return Answer(status, answer_headers, b"".join(chunks))


def _tool_error(code: str, message: str, field: str) -> types.CallToolResult:
    body = {
        "code": code,
        "error": message,
        "details": {"fields": [{"location": "argument", "field": field, "message": message}]},
        "requestId": None,
        "retryAt": None,
    }
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body))], structured_content=body, is_error=True
    )


def _result(answer: Answer) -> types.CallToolResult:
    body = answer.json()
    if answer.status >= 400:
        # The error body of the HTTP answer, with its status (a client may branch on 429 or 404).
        error = {**(body if isinstance(body, dict) else {}), "status": answer.status}
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(error))], structured_content=error, is_error=True
        )
    if body is None:
        return types.CallToolResult(content=[types.TextContent(text=f"Done ({answer.status}).")])
    return types.CallToolResult(
        content=[types.TextContent(text=answer.body.decode())], structured_content=body
    )


class Agents:
    """The MCP server of one app: its tools (from the spec), ``search``, ``fetch`` and cards as
    resources."""

    def __init__(self, spec: Mapping[str, Any], target: ApiTarget) -> None:
        self.tools = tools_from_spec(spec)
        self.target = target
        self.listed = [_listed(tool) for tool in self.tools.values()]
        self.server: Server[Any] = Server(
            "cardvault",
            version=str(spec["info"]["version"]),
            title="Card Vault",
            instructions=(
                "Card Vault keeps an account's saved items as cards. listCards with q searches"
                " them (its description gives the grammar); getExtendedCard reads one whole."
                " Destructive tools take confirm: true."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )
        # The SDK's own span per message goes: RequestEdge traces /mcp and each tool's request.
        self.server.middleware = []

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        held = set(_caller.get().scopes)
        tools = [
            listed
            for listed, tool in zip(self.listed, self.tools.values(), strict=True)
            if set(tool.scopes) <= held
        ]
        if "read" in held:
            tools += [_SEARCH_TOOL, _FETCH_TOOL]
        return types.ListToolsResult(tools=tools)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Answer:
        """Serve one tool's operation with these arguments, as the caller."""
        tool = self.tools[name]
        body = orjson.dumps(arguments[BODY]) if BODY in arguments else None
        caller = _caller.get()
        assert self.target.app is not None
        return await _send_through(
            self.target.app, caller.scope, http_call(tool, arguments, body), caller.authorization
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "search":
            return await self._search(arguments)
        if params.name == "fetch":
            return await self._fetch(arguments)
        tool = self.tools.get(params.name)
        if tool is None:
            return _tool_error("NOT_FOUND", f"There is no tool named {params.name!r}.", "name")
        if tool.destructive and arguments.get(CONFIRM) is not True:
            return _tool_error(
                "INVALID_INPUT", f"{tool.name} changes nothing without confirm: true.", CONFIRM
            )
        unknown = set(arguments) - {a.name for a in tool.arguments} - {CONFIRM}
        if unknown:  # the operation would never see them: say so, as strict validation would
            field = sorted(unknown)[0]
            return _tool_error("INVALID_INPUT", f"{tool.name} takes no argument {field!r}.", field)
        return _result(await self.call(tool.name, arguments))

    async def _search(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return _tool_error("INVALID_INPUT", "search takes a query: a non-empty string.", "query")
        answer = await self.call("listCards", {"q": query, "limit": SEARCH_RESULTS, "include": ["metadata"]})
        if answer.status >= 400:
            return _result(answer)
        results = [
            {"id": card["id"], "title": _title(card), "url": card["appUrl"]}
            for card in answer.json()["items"]
        ]
        return _structured({"results": results})

    async def _fetch(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        card_id = arguments.get("id")
        if not isinstance(card_id, str) or not card_id:
            return _tool_error("INVALID_INPUT", "fetch takes an id: a card's id.", "id")
        answer = await self.call("getExtendedCard", {"cardId": card_id})
        if answer.status >= 400:
            return _result(answer)
        return _structured(self._document(answer.json()))

    def _document(self, card: Mapping[str, Any]) -> dict[str, Any]:
        """A card as ``fetch`` answers it: its title, its text and what else describes it."""
        return {
            "id": card["id"],
            "title": _title(card),
            "text": _text(card),
            "url": card["appUrl"],
            "metadata": {
                key: card.get(key)
                for key in (
                    "type",
                    "url",
                    "tags",
                    "aiTags",
                    "createdAt",
                    "updatedAt",
                    "isFavorited",
                    "isArchived",
                )
                if card.get(key) is not None
            },
        }

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        if "read" not in _caller.get().scopes:
            return types.ListResourcesResult(resources=[])
        answer = await self.call("listCards", {"limit": 50, "include": ["metadata"]})
        cards = answer.json()["items"] if answer.status == 200 else []
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=CARD_URI.format(id=card["id"]), name=_title(card), mime_type="text/plain")
                for card in cards
            ]
        )

    async def _list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=CARD_URI,
                    name="card",
                    description="A card's text: its title, notes, content or transcript.",
                    mime_type="text/plain",
                )
            ]
        )

    async def _read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        prefix = CARD_URI.split("{", 1)[0]
        uri = str(params.uri)
        card_id = uri[len(prefix) :] if uri.startswith(prefix) else ""
        answer = await self.call("getExtendedCard", {"cardId": card_id}) if card_id else None
        if answer is None or answer.status >= 400:
            body = answer.json() if answer is not None else None
            # -32002: the protocol's code for a resource not found; the API's error body as data.
            raise MCPError(RESOURCE_NOT_FOUND, f"No card at {uri}.", body)
        document = self._document(answer.json())
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="text/plain", text=f"{document['title']}\n\n{document['text']}"
                )
            ]
        )

    async def serve(self, scope: Scope, receive: Receive, send: Send, caller: _Caller) -> None:
        """Answer one /mcp request (a fresh stateless transport: nothing outlives the request)."""
        manager = StreamableHTTPSessionManager(
            self.server,
            json_response=True,
            stateless=True,
            # Every request carries a bearer credential a page cannot attach: no DNS rebinding to fear.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=MAX_BODY_BYTES,
        )
        token = _caller.set(caller)
        try:
            async with manager.run():
                await manager.handle_request(scope, receive, send)
        finally:
            _caller.reset(token)


def _title(card: Mapping[str, Any]) -> str:
    for key in ("title", "metadataTitle", "url", "fileName"):
        if card.get(key):
            return str(card[key])
    return f"{card.get('type', 'card')} {card['id']}"


def _text(card: Mapping[str, Any]) -> str:
    parts = [
        str(card[key])
        for key in ("notes", "content", "aiSummary", "aiTranscript", "metadataDescription")
        if card.get(key)
    ]
    return "\n\n".join(parts)


def _structured(value: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(value))], structured_content=value)


def _listed(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
    )


def _object(properties: dict[str, Any], *, closed: bool = False) -> dict[str, Any]:
    """A JSON Schema object requiring every one of its properties."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {**schema, "additionalProperties": False} if closed else schema


_TEXT = {"type": "string"}
_READING = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_SEARCH_TOOL = types.Tool(
    name="search",
    title="Search cards",
    description=(
        "Search the account's cards (listCards' q grammar: words, \"phrases\", tag:, type:,"
        " is:favorite ...); the first results, each with its id for fetch."
    ),
    input_schema=_object({"query": {"type": "string", "minLength": 1, "maxLength": 1000}}, closed=True),
    output_schema=_object(
        {"results": {"type": "array", "items": _object({"id": _TEXT, "title": _TEXT, "url": _TEXT})}}
    ),
    annotations=_READING,
)
_FETCH_TOOL = types.Tool(
    name="fetch",
    title="Fetch a card",
    description="A card by its id (from search): its title, its text, its page's URL and metadata.",
    input_schema=_object({"id": {"type": "string", "minLength": 1, "maxLength": 64}}, closed=True),
    output_schema=_object(
        {"id": _TEXT, "title": _TEXT, "text": _TEXT, "url": _TEXT, "metadata": {"type": "object"}}
    ),
    annotations=_READING,
)


def _challenge(public_url: str, error: str | None = None) -> str:
    metadata = f"{public_url}{PROTECTED_RESOURCE_PATH}"
    described = f', error="{error}"' if error else ""
    return f'Bearer realm="cardvault"{described}, resource_metadata="{metadata}"'


def _refusal(scope: Scope, public_url: str, code: str, message: str, error: str | None) -> Response:
    failed = error_response(
        (scope.get("state") or {}).get("request_id"),
        401,
        code,
        message,
        headers={"WWW-Authenticate": _challenge(public_url, error)},
    )
    return Response(failed.body, status_code=401, media_type="application/json", headers=failed.headers)


def _not_allowed(scope: Scope) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": f"{scope['method']} is not allowed on /mcp: POST each message."},
    }
    return Response(
        json.dumps(body), status_code=405, media_type="application/json", headers={"Allow": "POST"}
    )


class McpRoute:
    """Serve /mcp (after the request's id and runtime are set); pass every other request on."""

    def __init__(self, app: ASGIApp, agents: Agents) -> None:
        self.app = app
        self.agents = agents

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        public_url = runtime.current().settings.public_url
        headers = [v for k, v in scope["headers"] if k.lower() == b"authorization"]
        value = headers[0].decode("latin-1") if len(headers) == 1 else ""
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await _refusal(
                scope,
                public_url,
                "UNAUTHORIZED",
                "/mcp needs an API key or an access token: send Authorization: Bearer <credential>.",
                None,
            )(scope, receive, send)
            return
        info = await auth.authenticate(token.strip())
        is_token = credentials.is_well_formed(token.strip(), credentials.ACCESS_TOKEN)
        if info is None or (is_token and info.get("resource") != mcp_url(public_url)):
            await _refusal(
                scope,
                public_url,
                "INVALID_TOKEN" if is_token else "INVALID_API_KEY",
                "The access token was not issued for this MCP server, or has expired: sign in again."
                if is_token
                else "The API key is not valid.",
                "invalid_token",
            )(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to open (GET) and no session to end (DELETE).
            await _not_allowed(scope)(scope, receive, send)
            return
        caller = _Caller(authorization=headers[0], scopes=tuple(info["scope"]), scope=scope)
        await self.agents.serve(scope, receive, send, caller)
