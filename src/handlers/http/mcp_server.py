"""The MCP server of /mcp (the official SDK's low-level server, stateless, JSON answers): the
spec's tools (cardvault.handlers.http.mcp_tools), each call its operation's request
(cardvault.handlers.http.mcp_calls), a success's JSON as ``structuredContent`` and an error's
body as a tool error; ``search`` and ``fetch`` for connectors; cards as ``cardvault://cards/{id}``
resources."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from cardvault.handlers.http import mcp_calls
from cardvault.handlers.http.mcp_tools import BODY, CONFIRM, Tool, http_call, tools_from_spec

CARD_URI = "cardvault://cards/{id}"
MAX_BODY_BYTES = 1024 * 1024  # a tool call's arguments; the API's own bodies are bounded again
SEARCH_RESULTS = 10
PARSED_ON_LOOP_BYTES = 64 * 1024
RESOURCE_NOT_FOUND = -32002
INTERNAL_ERROR = -32603
# Every request carries a bearer credential a page cannot attach: no DNS rebinding to fear.
_NO_REBINDING_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
_METADATA = ("type", "url", "tags", "aiTags", "createdAt", "updatedAt", "isFavorited", "isArchived")


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


def _oversized(name: str, answer: mcp_calls.Answer, *, writes: bool, pages: bool) -> types.CallToolResult:
    """An answer over MAX_ANSWER_BYTES: a tool error. A write that succeeded says it was done,
    with the operation's status (the structured result its output schema promises cannot be
    carried, so it cannot be a success; it must not read as a failure to make again)."""
    limit = mcp_calls.MAX_ANSWER_BYTES // (1024 * 1024)
    too_large = f"{name}'s answer is over {limit} MiB, more than a tool call carries"
    if writes and answer.status < 400:
        where = answer.headers.get("location")
        message = f"{name} was done ({answer.status}): do not send it again; only {too_large}."
        result = _tool_error("CONTENT_TOO_LARGE", message, "arguments")
        assert isinstance(result.structured_content, dict)
        result.structured_content["status"] = answer.status
        if where:
            result.structured_content["details"]["location"] = where
        result.content = [types.TextContent(text=json.dumps(result.structured_content))]
        return result
    advice = (
        "ask for less (a smaller limit, fewer includes)"
        if pages
        else "read it over the HTTP API, which has no such limit"
    )
    return _tool_error("CONTENT_TOO_LARGE", f"{too_large}: {advice}.", "arguments")


async def _parsed(answer: mcp_calls.Answer) -> Any:
    """The answer's JSON; a large one is parsed in a worker thread, off the event loop."""
    if len(answer.body) <= PARSED_ON_LOOP_BYTES:
        return answer.json()
    return await anyio.to_thread.run_sync(answer.json)


async def _result(tool: Tool | None, name: str, answer: mcp_calls.Answer) -> types.CallToolResult:
    """A tool's result from its operation's answer (``tool`` None: search's or fetch's read)."""
    if answer.oversized:
        writes = tool is not None and tool.writes
        pages = tool is not None and any(argument.name == "limit" for argument in tool.arguments)
        return _oversized(name, answer, writes=writes, pages=pages)
    body = await _parsed(answer)
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

    def __init__(self, spec: Mapping[str, Any], target: mcp_calls.ApiTarget) -> None:
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
            # The 2026-07-28 transport checks a call's Mcp-Param headers against the tool's input
            # schema; without this lookup it serves a whole tools/list to find it, on every call.
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )
        # The SDK's own span per message goes: RequestEdge traces /mcp and each tool's request.
        self.server.middleware = []

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self.tools.get(name)
        if tool is not None:
            return tool.input_schema
        extra = {"search": _SEARCH_TOOL, "fetch": _FETCH_TOOL}.get(name)
        return extra.input_schema if extra is not None else None

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        held = set(mcp_calls.current.get().scopes)
        tools = [
            listed
            for listed, tool in zip(self.listed, self.tools.values(), strict=True)
            if set(tool.scopes) <= held
        ]
        if "read" in held:
            tools += [_SEARCH_TOOL, _FETCH_TOOL]
        return types.ListToolsResult(tools=tools)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> mcp_calls.Answer:
        """Serve one tool's operation with these arguments, as the caller."""
        tool = self.tools[name]
        body = orjson.dumps(arguments[BODY]) if BODY in arguments else None
        caller = mcp_calls.current.get()
        assert self.target.app is not None
        return await mcp_calls.send_through(
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
        return await _result(tool, tool.name, await self.call(tool.name, arguments))

    async def _search(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return _tool_error("INVALID_INPUT", "search takes a query: a non-empty string.", "query")
        answer = await self.call("listCards", {"q": query, "limit": SEARCH_RESULTS, "include": ["metadata"]})
        if answer.status >= 400 or answer.oversized:
            return await _result(None, "search", answer)
        results = [
            {"id": card["id"], "title": _title(card), "url": card["appUrl"]}
            for card in (await _parsed(answer))["items"]
        ]
        return _structured({"results": results})

    async def _fetch(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        card_id = arguments.get("id")
        if not isinstance(card_id, str) or not card_id:
            return _tool_error("INVALID_INPUT", "fetch takes an id: a card's id.", "id")
        answer = await self.call("getExtendedCard", {"cardId": card_id})
        if answer.status >= 400 or answer.oversized:
            return await _result(None, "fetch", answer)
        return _structured(self._document(await _parsed(answer)))

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
        if "read" not in mcp_calls.current.get().scopes:
            return types.ListResourcesResult(resources=[])
        answer = await self.call("listCards", {"limit": 50, "include": ["metadata"]})
        cards = (await _parsed(answer))["items"] if answer.status == 200 and not answer.oversized else []
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
        if answer is not None and answer.oversized:
            raise MCPError(INTERNAL_ERROR, f"The card at {uri} is over the size a message carries.")
        if answer is None or answer.status >= 400:
            body = answer.json() if answer is not None else None
            # -32002: the protocol's code for a resource not found; the API's error body as data.
            raise MCPError(RESOURCE_NOT_FOUND, f"No card at {uri}.", body)
        document = self._document(await _parsed(answer))
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="text/plain", text=f"{document['title']}\n\n{document['text']}"
                )
            ]
        )

    async def serve(self, scope: Scope, receive: Receive, send: Send, caller: mcp_calls.Caller) -> None:
        """Answer one /mcp request (a fresh stateless transport: nothing outlives the request)."""
        manager = StreamableHTTPSessionManager(
            self.server,
            json_response=True,
            stateless=True,
            security_settings=_NO_REBINDING_CHECK,
            max_request_body_size=MAX_BODY_BYTES,
        )
        token = mcp_calls.current.set(caller)
        try:
            async with manager.run():
                await manager.handle_request(scope, receive, send)
        finally:
            mcp_calls.current.reset(token)


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
