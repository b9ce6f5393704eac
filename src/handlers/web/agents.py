"""What agent clients (MCP) find and do before their first call: the protected resource's
metadata (RFC 9728), naming this server as /mcp's authorization server, and dynamic client
registration (RFC 7591): public clients with PKCE, returning to https or a loopback address,
counted per client address, and gone a day later unless an account allows them."""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from cardvault.adapters.limiter import Policy
from cardvault.domain.auth import credentials, oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import InvalidInput, RateLimited
from cardvault.domain.guards import rate_limits
from cardvault.handlers.http import runtime
from cardvault.handlers.web.sign_in import address_key

MAX_REGISTRATION_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "600",
}


def protected_resource_document(public_url: str) -> dict[str, Any]:
    """/mcp as an OAuth 2.0 protected resource (RFC 9728)."""
    return {
        "resource": f"{public_url}/mcp",
        "authorization_servers": [public_url],
        "scopes_supported": list(credentials.SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Card Vault (MCP)",
        "resource_documentation": f"{public_url}/v1/ui/",
    }


async def protected_resource(request: Request) -> Response:
    """GET /.well-known/oauth-protected-resource (and .../mcp, RFC 9728 §3.1's form for /mcp)."""
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=_CORS)
    document = protected_resource_document(runtime.current().settings.public_url)
    return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600", **_CORS})


def _refusal(
    error: str, description: str, status: int = 400, headers: dict[str, str] | None = None
) -> Response:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store", **_CORS, **(headers or {})},
    )


def _metadata_error(metadata: Any) -> str | None:
    """What is wrong with a registration's metadata for a public client, or None."""
    if not isinstance(metadata, dict):
        return "The body must be a JSON object of client metadata."
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        return f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} redirect URIs."
    if not all(isinstance(uri, str) for uri in uris):
        return "Each redirect URI must be a string."
    if metadata.get("token_endpoint_auth_method", "none") != "none":
        return "Only public clients register here: token_endpoint_auth_method must be none (PKCE)."
    if not set(metadata.get("grant_types") or ["authorization_code"]) <= {
        "authorization_code",
        "refresh_token",
    }:
        return "grant_types may name authorization_code and refresh_token only."
    if not set(metadata.get("response_types") or ["code"]) <= {"code"}:
        return "response_types may name code only."
    for field in ("client_name", "scope"):
        if not isinstance(metadata.get(field, ""), str):
            return f"{field} must be a string."
    return None


def _register(metadata: dict[str, Any]) -> dict[str, Any]:
    rt = runtime.current()
    now = now_ms()
    with rt.db.transaction() as session:
        client = oauth.register_client(
            session,
            name=(metadata.get("client_name") or "").strip()[:100] or "An MCP client",
            redirect_uris=metadata["redirect_uris"],
            scopes=metadata.get("scope") or "",
            now=now,
        )
        return {
            "client_id": client.id,
            "client_id_issued_at": now // 1000,
            "client_name": client.name,
            "redirect_uris": client.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": client.scopes,
        }


def _spend(request: Request) -> None:
    rt = runtime.current()
    limit = rt.settings.rate_limits.get("client-registrations")
    if limit is None:
        return
    policy = Policy.parse("client-registrations", limit)
    key = "address:" + address_key(request.client.host if request.client else "unknown")
    rate_limits.spend(rt.limiter, policy, account_id=key, fail_open=False)


async def register(request: Request) -> Response:
    """POST /oauth/register (RFC 7591): register a public client; 201 with its client_id."""
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=_CORS)
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return _refusal("invalid_client_metadata", "Send the client metadata as application/json.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_REGISTRATION_BYTES:
            return _refusal("invalid_client_metadata", "The client metadata is too large.", 413)
    try:
        metadata = json.loads(body)
    except (ValueError, RecursionError):  # bytes that are not UTF-8; arrays nested past the stack
        return _refusal("invalid_client_metadata", "The body is not JSON.")
    problem = _metadata_error(metadata)
    if problem is not None:
        return _refusal("invalid_client_metadata", problem)
    try:
        await anyio.to_thread.run_sync(_spend, request)
    except RateLimited as refused:
        retry = max(1, -(-((refused.retry_at or 0) - now_ms()) // 1000))
        return _refusal(
            "too_many_requests", "Too many registrations: try later.", 429, {"Retry-After": str(retry)}
        )
    try:
        answer = await anyio.to_thread.run_sync(_register, metadata)
    except InvalidInput as refused:
        return _refusal("invalid_redirect_uri", refused.message)
    return JSONResponse(answer, status_code=201, headers={"Cache-Control": "no-store", **_CORS})
