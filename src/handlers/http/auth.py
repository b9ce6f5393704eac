"""Bearer authentication: an API key (``cvk_``) or an OAuth 2.0 access token (``cva_``) names
the account every operation acts for, and the scopes it may use. Cookies are never read here:
the browser session belongs to the sign-in and card pages alone."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from sqlalchemy.exc import DBAPIError

from cardvault.domain.auth import credentials, keys, oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.db import is_busy
from cardvault.handlers.http import runtime

MCP_PATH = "/mcp"
# Set in the ``extensions`` of the internal requests a tool call at /mcp sends through the app
# (mcp_calls.send_through). Extensions are not wire data: no outside client can set it.
MCP_DISPATCH = "cardvault.mcp_dispatch"


def _lookup_key(rt: runtime.Runtime, key: str) -> runtime.Holder | None:
    with rt.db.transaction(write=False) as session:
        holder = keys.key_holder(session, key=key)
    if holder is None:
        return None
    now = now_ms()
    if keys.is_last_use_stale(holder, now):
        try:
            with rt.db.transaction() as session:
                keys.record_use(session, key_id=holder.key_id, now=now)
        except DBAPIError as exc:
            if not is_busy(exc):
                raise
            # lastUsedAt is a convenience: a busy database never fails the request for it.
    return runtime.Holder(
        account_id=holder.account_id, scopes=holder.scopes, grant_id=holder.grant_id, key_id=holder.key_id
    )


def _lookup_token(rt: runtime.Runtime, token: str) -> tuple[runtime.Holder, float] | None:
    with rt.db.transaction(write=False) as session:
        holder = oauth.token_holder(session, token=token, now=now_ms())
    if holder is None:
        return None
    found = runtime.Holder(
        account_id=holder.account_id, scopes=holder.scopes, grant_id=holder.grant_id, resource=holder.resource
    )
    return found, holder.expires_at / 1000


async def authenticate(token: str) -> dict[str, Any] | None:
    """Return the token info (account and scopes) of a live API key or access token, or None
    (answered as 401 with ``WWW-Authenticate: Bearer error="invalid_token"``)."""
    # The checksum refuses a mistyped or made-up value without touching the database.
    is_key = keys.is_well_formed_key(token)
    if not is_key and not credentials.is_well_formed(token, credentials.ACCESS_TOKEN):
        return None
    rt = runtime.current()
    digest = credentials.digest(token)
    holder = rt.credential_cache.get(digest)
    if holder is None:
        # The lookup blocks, so it runs in a worker thread, off the event loop.
        if is_key:
            holder = await anyio.to_thread.run_sync(_lookup_key, rt, token)
            ends_at = None
        else:
            found = await anyio.to_thread.run_sync(_lookup_token, rt, token)
            holder, ends_at = found if found else (None, None)
        if holder is None:
            return None
        rt.credential_cache.put(digest, holder, ends_at)
    return {
        "sub": holder.account_id,
        "scope": list(holder.scopes),
        "grant": holder.grant_id,
        "key": holder.key_id,
        "resource": holder.resource,
    }


def mcp_resource(public_url: str) -> str:
    """The resource an access token must be issued for to be used at /mcp (RFC 8707)."""
    return public_url + MCP_PATH


async def authenticate_api(token: str, request: Any) -> dict[str, Any] | None:
    """``authenticate`` for /v1 (Connexion's bearer handler): a token issued for /mcp is taken
    only on the requests the MCP tool dispatch sends through the app; on any other request it
    answers as an invalid token (401 ``INVALID_TOKEN``)."""
    info = await authenticate(token)
    if info is None or info["resource"] != mcp_resource(runtime.current().settings.public_url):
        return info
    extensions = getattr(request, "scope", {}).get("extensions") or {}
    return info if extensions.get(MCP_DISPATCH) is True else None
