"""The baseline: a bare Starlette app that runs the same SQL as the API (key lookup, card row,
tag rows; for the list, the count, the page and its tags) with the database driver directly."""

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
    row = conn.execute(
        f"SELECT account_id, secret_hash FROM api_keys WHERE secret_hash = {P} AND revoked_at IS NULL",
        (digest,),
    ).fetchone()
    if row is None or not hmac.compare_digest(row[1], digest):
        return None
    return str(row[0])


def _tags(conn: Any, pks: list[int]) -> dict[int, list[str]]:
    marks = ", ".join([P] * len(pks))
    rows = conn.execute(
        f"SELECT card_pk, kind, name_key, name, position, account_id FROM card_tags "
        f"WHERE card_pk IN ({marks}) ORDER BY position",
        pks,
    ).fetchall()
    tags: dict[int, list[str]] = {pk: [] for pk in pks}
    for row in rows:
        if row[1] == "user":
            tags[row[0]].append(row[3])
    return tags


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


def _json(row: Any, tags: list[str], *, full: bool) -> dict[str, Any]:
    body = {
        "id": row[1],
        "type": row[3],
        "createdAt": row[17],
        "updatedAt": row[18],
        "appUrl": f"http://127.0.0.1:8000/cards/{row[1]}",
        "aiTags": [],
        "tags": tags,
        "isFavorited": bool(row[15]),
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
            f"SELECT {COLUMNS} FROM cards WHERE id = {P} AND account_id = {P}",
            (request.path_params["card_id"], account),
        ).fetchone()
        if row is None:
            return Response(status_code=404)
        body = _json(row, _tags(conn, [row[0]])[row[0]], full=True)
    return Response(json.dumps(body), media_type="application/json")


def list_cards(request: Request) -> Response:
    with connection() as conn:
        account = _account(conn, request)
        if account is None:
            return Response(status_code=401)
        total = conn.execute(f"SELECT count(*) FROM cards WHERE account_id = {P}", (account,)).fetchone()[0]
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM cards WHERE account_id = {P} ORDER BY created_at DESC, pk DESC LIMIT 51",
            (account,),
        ).fetchall()
        page = rows[:50]
        tags = _tags(conn, [row[0] for row in page])
        items = [_json(row, tags[row[0]], full=False) for row in page]
    body = {"items": items, "pageInfo": {"hasMore": len(rows) > 50, "nextCursor": None}, "total": total}
    return Response(json.dumps(body), media_type="application/json")


app = Starlette(routes=[Route("/v1/cards", list_cards), Route("/v1/cards/{card_id}", get_card)])
