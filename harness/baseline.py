"""The baseline of bench/bench_cards.py: a bare Starlette app that sends the API's own SQL for
``GET /v1/cards/{id}`` and a page of ``GET /v1/cards`` with the database driver directly, and
writes JSON with the same encoder (orjson). The key lookup is cached per process, as the API
caches verified keys, so each request sends one statement, as the API's do.

The statements are written out here, not taken from the API's code: a test
(tests/unit/domain/cards/test_reading_baseline.py) compares them with what the API sends, so a
change of the API's SQL fails it rather than leaving the benchmark measuring another query.

    uvicorn --factory harness.baseline:app_from_env   (CARDVAULT_DATABASE_URL names the database)
"""

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

COLUMNS = [
    "pk",
    "id",
    "account_id",
    "type",
    "content",
    "notes",
    "url",
    "source",
    "file_name",
    "file_size",
    "mime_type",
    "file_object",
    "file_kind",
    "file_extension",
    "file_language",
    "file_width",
    "file_height",
    "file_preview",
    "compact_object",
    "placeholder_object",
    "thumbnail_object",
    "thumbnail_overridden",
    "screenshot_object",
    "screenshot_compact_object",
    "screenshot_placeholder_object",
    "metadata_title",
    "metadata_description",
    "link_meta",
    "ai_summary",
    "ai_transcript",
    "file_text",
    "is_favorited",
    "completed_at",
    "created_at",
    "updated_at",
    "deleted_at",
    "archived_at",
    "annotation_count",
    "version",
]
AT = {name: i for i, name in enumerate([*COLUMNS, "tag_list", "folder_list"])}


def _gathered(dialect: str, table: str, values: str, n: int) -> str:
    of = f"{table}.card_pk = cards.pk"
    if dialect == "sqlite":
        aggregate = f"json_group_array(json_array({values})) AS json_group_array_{n}"
    else:
        aggregate = f"CAST(json_agg(json_build_array({values})) AS TEXT) AS json_agg_{n}"
    return f"(SELECT {aggregate} FROM {table} WHERE {of})"


def _select(dialect: str) -> str:
    tags = _gathered(dialect, "card_tags", "card_tags.kind, card_tags.position, card_tags.name", 1)
    folders = _gathered(dialect, "folder_cards", "folder_cards.added_at, folder_cards.folder_id", 2)
    columns = ", ".join(f"cards.{name}" for name in COLUMNS)
    return f"SELECT {columns}, {tags} AS tag_list, {folders} AS folder_list FROM cards"


def _value(dialect: str, name: str, kind: str = "VARCHAR") -> str:
    return "?" if dialect == "sqlite" else f"%({name})s::{kind}"


def card_sql(dialect: str) -> str:
    """The statement of ``GET /v1/cards/{id}``: one card of the account, with its tags and folders."""
    card, account = _value(dialect, "card_id"), _value(dialect, "account_id")
    return f"{_select(dialect)} WHERE cards.id = {card} AND cards.account_id = {account}"


def page_sql(dialect: str) -> str:
    """The statement of a page of ``GET /v1/cards`` (no filter, newest first, one card more
    than the page to tell whether there are more; no count, as the API sends it unless asked)."""
    limit = "LIMIT ? OFFSET ?" if dialect == "sqlite" else "LIMIT %(limit)s::INTEGER"
    return (
        f"{_select(dialect)} WHERE cards.account_id = {_value(dialect, 'account_id')} "
        "AND cards.deleted_at IS NULL AND cards.archived_at IS NULL "
        f"ORDER BY cards.created_at DESC, cards.pk DESC {limit}"
    )


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
    tags, ai_tags = _tags(row[AT["tag_list"]])
    body = {
        "id": row[AT["id"]],
        "type": row[AT["type"]],
        "createdAt": row[AT["created_at"]],
        "updatedAt": row[AT["updated_at"]],
        "appUrl": f"http://127.0.0.1:8000/cards/{row[AT['id']]}",
        "aiTags": ai_tags,
        "tags": tags,
        "isFavorited": bool(row[AT["is_favorited"]]),
        "folderIds": _folders(row[AT["folder_list"]]),
        "url": row[AT["url"]],
        "fileName": row[AT["file_name"]],
        "fileSize": row[AT["file_size"]],
        "mimeType": row[AT["mime_type"]],
        **_NULLS,
    }
    if full:
        body.update(
            content=row[AT["content"]],
            notes=row[AT["notes"]],
            aiSummary=row[AT["ai_summary"]],
            metadataTitle=row[AT["metadata_title"]],
            metadataDescription=row[AT["metadata_description"]],
        )
    return body


class _Baseline:
    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
        self.card_sql, self.page_sql = card_sql(self.dialect), page_sql(self.dialect)
        self.keys: dict[str, str] = {}
        self.pool: queue.Queue[Any] = queue.Queue()

    def _connect(self) -> Any:
        if self.dialect == "sqlite":
            connection = sqlite3.connect(self.url.removeprefix("sqlite:///"), check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            return connection
        return psycopg.connect(self.url.replace("postgresql+psycopg", "postgresql"), autocommit=True)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        try:
            conn = self.pool.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            yield conn
        finally:
            self.pool.put(conn)

    def account(self, conn: Any, request: Request) -> str | None:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        digest = hashlib.sha256(key.encode()).hexdigest()
        if digest in self.keys:
            return self.keys[digest]
        p = "?" if self.dialect == "sqlite" else "%s"
        row = conn.execute(
            f"SELECT account_id, secret_hash FROM api_keys WHERE secret_hash = {p} AND revoked_at IS NULL",
            (digest,),
        ).fetchone()
        if row is None or not hmac.compare_digest(row[1], digest):
            return None
        self.keys[digest] = str(row[0])
        return self.keys[digest]

    def get_card(self, request: Request) -> Response:
        with self.connection() as conn:
            account = self.account(conn, request)
            if account is None:
                return Response(status_code=401)
            card_id = request.path_params["card_id"]
            values: Any = (
                (card_id, account)
                if self.dialect == "sqlite"
                else {"card_id": card_id, "account_id": account}
            )
            row = conn.execute(self.card_sql, values).fetchone()
            if row is None:
                return Response(status_code=404)
        return Response(orjson.dumps(_json(row, full=True)), media_type="application/json")

    def list_cards(self, request: Request) -> Response:
        with self.connection() as conn:
            account = self.account(conn, request)
            if account is None:
                return Response(status_code=401)
            values: Any = (
                (account, 51, 0) if self.dialect == "sqlite" else {"account_id": account, "limit": 51}
            )
            rows = conn.execute(self.page_sql, values).fetchall()
        items = [_json(row, full=False) for row in rows[:50]]
        body = {"items": items, "pageInfo": {"hasMore": len(rows) > 50, "nextCursor": None}}
        return Response(orjson.dumps(body), media_type="application/json")


def app_from_env() -> Starlette:
    """The baseline over the database CARDVAULT_DATABASE_URL names."""
    baseline = _Baseline(os.environ["CARDVAULT_DATABASE_URL"])
    return Starlette(
        routes=[Route("/v1/cards", baseline.list_cards), Route("/v1/cards/{card_id}", baseline.get_card)]
    )
