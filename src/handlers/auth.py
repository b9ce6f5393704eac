"""Bearer authentication: the API key names the account every operation acts for."""

from __future__ import annotations

import hashlib
from typing import Any

import anyio.to_thread
from connexion.security import BearerSecurityHandler

from cardvault.domain import accounts
from cardvault.handlers import runtime


def _lookup(rt: runtime.Runtime, key: str) -> str | None:
    with rt.db.transaction(write=False) as session:
        return accounts.account_for_key(session, key=key)


async def authenticate(token: str) -> dict[str, Any] | None:
    """Return the token info of a live API key, or None (answered as 401 INVALID_API_KEY)."""
    # The checksum refuses a mistyped or made-up key without touching the database.
    if not accounts.is_well_formed_key(token):
        return None
    rt = runtime.current()
    digest = hashlib.sha256(token.encode()).hexdigest()
    account_id = rt.key_cache.get(digest)
    if account_id is None:
        # The lookup blocks, so it runs in a worker thread, off the event loop.
        account_id = await anyio.to_thread.run_sync(_lookup, rt, token)
        if account_id is None:
            return None
        rt.key_cache.put(digest, account_id)
    return {"sub": account_id}


class ApiKeyBearer(BearerSecurityHandler):
    """Connexion's bearer handler, verifying with ``authenticate`` (wired here rather than named
    in the spec, which client developers read)."""

    def _resolve_func(self, security_scheme: Any) -> Any:
        return authenticate
