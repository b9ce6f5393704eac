"""``/mcp``: the API as a Model Context Protocol server over Streamable HTTP
(cardvault.handlers.http.mcp_server), with the API's own bearer credentials.

A request without a credential, or with an access token issued for another resource (RFC 8707),
answers 401 with ``WWW-Authenticate: Bearer resource_metadata=...`` (RFC 9728), where agent
clients find the authorization server (cardvault.handlers.web.agents). Stateless: only POST."""

from __future__ import annotations

import json

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cardvault.domain.auth import credentials
from cardvault.handlers.http import auth, mcp_calls, runtime
from cardvault.handlers.http.errors import error_response
from cardvault.handlers.http.mcp_server import Agents

MCP_PATH = auth.MCP_PATH
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"


def mcp_url(public_url: str) -> str:
    """The resource an access token must be issued for to be used at /mcp."""
    return auth.mcp_resource(public_url)


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
        caller = mcp_calls.Caller(authorization=headers[0], scopes=tuple(info["scope"]), scope=scope)
        await self.agents.serve(scope, receive, send, caller)
