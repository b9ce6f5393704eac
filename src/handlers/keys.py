"""API key operations: thin edges over cardvault.domain.auth.keys."""

from __future__ import annotations

from typing import Any

from cardvault.domain.auth import credentials, keys
from cardvault.domain.models import ApiKey
from cardvault.handlers.http import operations, runtime


def _key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "prefix": credentials.API_KEY,
        "lastChars": key.last_chars,
        "scopes": credentials.scope_list(key.scopes),
        "createdAt": key.created_at,
        "lastUsedAt": key.last_used_at,
    }


def list_api_keys(user: str) -> dict[str, Any]:
    with runtime.current().db.transaction(write=False) as session:
        return {"items": [_key_json(key) for key in keys.list_keys(session, account_id=user)]}


def create_api_key(body: dict[str, Any], user: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    held = " ".join(operations.held_scopes())
    with runtime.current().db.transaction() as session:
        # OpenAPI cannot tie the scopes asked for to the caller's own: the domain refuses more.
        row, key = keys.create_key(
            session,
            account_id=user,
            name=body.get("name", ""),
            scopes=" ".join(body["scopes"]) if "scopes" in body else held,
            held=held,
            grant_id=operations.held_grant(),
        )
        return {"apiKey": _key_json(row), "key": key}, 201, {"Location": f"/v1/api-keys/{row.id}"}


def revoke_api_key(key_id: str, user: str) -> tuple[None, int]:
    rt = runtime.current()
    with rt.db.transaction() as session:
        revoked = keys.revoke_key(session, account_id=user, key_id=key_id)
    rt.credential_cache.forget(revoked.secret_hash)  # at once here; other processes within 5 s
    return None, 204
