"""The baseline: a bare Starlette app that sends the same SQL as the API with the database
driver directly, and writes JSON with the same encoder (orjson): the key lookup (cached per
process, as the API caches verified keys), then one statement for the card or the page, each
card with its tags and folders as JSON (the page without a count, as the API sends it unless
asked)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

URL = os.environ["CARDVAULT_DATABASE_URL"]
IS_SQLITE = URL.startswith("sqlite")
P = "?" if IS_SQLITE else "%s"
COLUMNS = (
    "pk, id, account_id, type, content, notes, url, source, file_name, file_size, mime_type, "
    "metadata_title, metadata_description, ai_summary, ai_transcript, is_favorited, completed_at, "
    "created_at, updated_at"
)
ARRAY, OF = ("json_group_array", "json_array") if IS_SQLITE else ("json_agg", "json_build_array")
AGGREGATES = (
    f"(SELECT {ARRAY}({OF}(kind, position, name)) FROM card_tags WHERE card_pk = cards.pk), "
    f"(SELECT {ARRAY}({OF}(added_at, folder_id)) FROM folder_cards WHERE card_pk = cards.pk)"
)
SELECT = f"SELECT {COLUMNS}, {AGGREGATES} FROM cards"
_keys: dict[str, str] = {}
_pool: queue.Queue[Any] = queue.Queue()


def _connect() -> Any:
    if IS_SQLITE:
        connection = sqlite3.connect(URL.removeprefix("sqlite:///"), check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        return connection
    return psycopg.connect(URL.replace("postgresql+psycopg", "postgresql"), autocommit=True)


@contextmanager
def connection() -> Iterator[Any]:
    try:
        conn = _pool.get_nowait()
    except queue.Empty:
        conn = _connect()
    try:
        yield conn
    finally:
        _pool.put(conn)


def _account(conn: Any, request: Request) -> str | None:
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    digest = hashlib.sha256(key.encode()).hexdigest()
    if digest in _keys:
        return _keys[digest]
    row = conn.execute(
        f"SELECT account_id, secret_hash FROM api_keys WHERE secret_hash = {P} AND revoked_at IS NULL",
        (digest,),
    ).fetchone()
    if row is None or not hmac.compare_digest(row[1], digest):
        return None
    _keys[digest] = str(row[0])
    return _keys[digest]


def _tags(value: Any) -> tuple[list[str], list[str]]:
    rows = sorted(json.loads(value) if isinstance(value, str) else value or [])
    return [n for k, _, n in rows if k == "user"], [n for k, _, n in rows if k == "ai"]


def _folders(value: Any) -> list[str]:
    return [f for _, f in sorted(json.loads(value) if isinstance(value, str) else value or [])]


_NULLS = dict.fromkeys(
    [
        "compactUrl",
        "placeholderUrl",
        "detailUrl",
        "fileExtension",
        "fileKind",
        "fileLanguage",
        "filePreview",
        "fileUrl",
        "screenshotUrl",
        "thumbnailUrl",
        "linkPreviewImageUrl",
    ]
)


def _json(row: Any, *, full: bool) -> dict[str, Any]:
    tags, ai_tags = _tags(row[19])
    body = {
        "id": row[1],
        "type": row[3],
        "createdAt": row[17],
        "updatedAt": row[18],
        "appUrl": f"http://127.0.0.1:8000/cards/{row[1]}",
        "aiTags": ai_tags,
        "tags": tags,
        "isFavorited": bool(row[15]),
        "folderIds": _folders(row[20]),
        "url": row[6],
        "fileName": row[8],
        "fileSize": row[9],
        "mimeType": row[10],
        **_NULLS,
    }
    if full:
        body.update(
            content=row[4],
            notes=row[5],
            aiSummary=row[13],
            metadataTitle=row[11],
            metadataDescription=row[12],
        )
    return body


def get_card(request: Request) -> Response:
    with connection() as conn:
        account = _account(conn, request)
        if account is None:
            return Response(status_code=401)
        row = conn.execute(
            f"{SELECT} WHERE id = {P} AND account_id = {P}", (request.path_params["card_id"], account)
        ).fetchone()
        if row is None:
            return Response(status_code=404)
    return Response(orjson.dumps(_json(row, full=True)), media_type="application/json")


def list_cards(request: Request) -> Response:
    with connection() as conn:
        account = _account(conn, request)
        if account is None:
            return Response(status_code=401)
        rows = conn.execute(
            f"{SELECT} WHERE account_id = {P} AND deleted_at IS NULL AND archived_at IS NULL "
            "ORDER BY created_at DESC, pk DESC LIMIT 51",
            (account,),
        ).fetchall()
    items = [_json(row, full=False) for row in rows[:50]]
    body = {"items": items, "pageInfo": {"hasMore": len(rows) > 50, "nextCursor": None}}
    return Response(orjson.dumps(body), media_type="application/json")


app = Starlette(routes=[Route("/v1/cards", list_cards), Route("/v1/cards/{card_id}", get_card)])
