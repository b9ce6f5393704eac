"""Hostile inputs: for every operation of the spec, the worst requests we could find, timed
against a trivial request of the same operation, with how long each holds up the event loop.

    .venv/bin/python -m bench.bench_hostile [--database sqlite|postgresql] [--repeats N]

The goal it measures: validation and classification cost linear in the input and small in
absolute terms (aim: at most 5x a trivial request of the same operation), and no request
blocking the event loop for long.

A real `cardvault serve` runs on a free loopback port (pinned to CPU 0 when there are two; this
process runs on CPU 1) over a database seeded through the domain functions: a few thousand
cards to search, pools of cards to trash, restore, archive and delete, folders and tags.

Every operation in openapi/cardvault.yaml must have a trivial request below (the run stops
otherwise, so a new operation must be added here). Cases come from the spec (every string
field or parameter with a pattern, every integer and boolean parameter, every path id, every
body) and by hand (classification, search, card id lists). Each case is sent once with
GET /v1/health polled every 5 ms from another thread (the largest health latency is the stall,
compared with health at idle), then repeated within a time budget; the table shows medians.
Some inputs come in two sizes; the larger is estimated from the smaller (assuming quadratic
growth) instead of run when that estimate is over --max-seconds, or when it already took over
--slow-seconds on an earlier operation, which keeps a run within about two minutes. Status
codes are shown; any 5xx is flagged as a bug (and the server log's tail printed). It is a
measurement, not a test: it exits 0. `--only createCard,listCards` runs some operations.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import http.client
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import yaml
from sqlalchemy import text

from cardvault.domain import folders
from cardvault.domain.auth import accounts, keys
from cardvault.domain.cards import editing, trash
from cardvault.domain.database import open_database
from cardvault.handlers.http.middleware import MAX_BODY_BYTES, MAX_HEADER_BYTES
from harness import servers
from harness.servers import ROOT, fresh_database

SPEC = ROOT / "openapi" / "cardvault.yaml"
POSTGRES = os.environ.get("CARDVAULT_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
CONTENT_BYTES = editing.MAX_CONTENT_BYTES
TRIVIAL = "trivial"
AIM = 5.0  # the ratio the goal aims at
POLL_SECONDS = 0.005
VOCABULARY = [
    *("apple", "apricot", "banana", "berry", "cherry", "citrus", "cat", "car", "cobalt", "cedar"),
    *("coffee", "copper", "date", "dog", "eagle", "elm", "fig", "fern", "grape", "garden", "house"),
    *("harbor", "ink", "iris", "jam", "jade", "kite", "kiwi", "lemon", "lime", "mango", "maple"),
    *("nut", "nest", "olive", "orange", "pear", "pine"),
]


# --- requests and cases --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Req:
    """One HTTP request; `after` runs (untimed) on its response's status and body, e.g. to wait
    for a tag operation to finish."""

    method: str
    path: str
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    auth: bool = True
    after: Callable[[int, bytes], None] | None = None


@dataclasses.dataclass(frozen=True)
class Case:
    """A request to time. `make(i)` builds it (any preparation it does is not timed); `vs` names
    the case of the same operation it is compared with; `grows_from` = (label, factor) names a
    smaller input of the same shape, from which a quadratic estimate decides whether to run it."""

    label: str
    make: Callable[[int], Req]
    vs: str = TRIVIAL
    grows_from: tuple[str, float] | None = None


@dataclasses.dataclass
class Operation:
    op_id: str
    method: str
    template: str  # /v1/...{param}
    spec: dict[str, Any]  # the resolved operation object
    trivial: Callable[[int], Req] | None = None
    fixed_path: str = ""  # a valid path for cases that fail before touching the resource
    sample_body: bytes | None = None  # a valid body that needs no preparation
    cases: list[Case] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Result:
    op_id: str
    label: str
    vs: str
    statuses: list[str]
    samples_ms: list[float]
    health_max_ms: float
    skipped: str = ""
    estimate_ms: float = 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms) if self.samples_ms else self.estimate_ms


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _fill(head: str, unit: str, tail: str = "", size: int = CONTENT_BYTES) -> str:
    """head + unit repeated + tail, as long as fits in `size` bytes of UTF-8."""
    room = size - len((head + tail).encode())
    return head + unit * (room // len(unit.encode())) + tail


def _marks_out_of_order(size: int, *, unit: str = "bytes") -> str:
    """One base letter followed by combining marks in blocks of descending combining class: the
    worst order for canonical reordering (NFD), which sorts each run of marks by insertion."""
    by_class: dict[int, str] = {}
    for code in range(0x300, 0x370):  # two UTF-8 bytes each
        by_class.setdefault(unicodedata.combining(chr(code)), chr(code))
    marks = [by_class[c] for c in sorted(by_class, reverse=True) if c > 1]
    count = (size - 1) // 2 if unit == "bytes" else size - 1
    per = count // len(marks)
    return "e" + "".join(mark * per for mark in marks)


def _distinct_words(size: int) -> str:
    words, total, i = [], 0, 0
    while True:
        word = "w" + _base36(i)
        total += len(word) + 1
        if total > size:
            return " ".join(words)
        words.append(word)
        i += 1


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, digit = divmod(number, 36)
        out = digits[digit] + out
        if not number:
            return out


# --- the spec ------------------------------------------------------------------------------


def _resolve(node: Any, spec: dict[str, Any]) -> Any:
    """The node with every $ref replaced by what it names (the spec has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolve(target, spec)
        return {key: _resolve(value, spec) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, spec) for value in node]
    return node


def load_operations() -> dict[str, Operation]:
    spec = yaml.safe_load(SPEC.read_text())
    operations = {}
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method, raw in item.items():
            if method == "parameters":
                continue
            operation = _resolve({**raw, "parameters": [*shared, *raw.get("parameters", [])]}, spec)
            operations[raw["operationId"]] = Operation(
                op_id=raw["operationId"], method=method.upper(), template="/v1" + path, spec=operation
            )
    return operations


def _ecma(pattern: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _filler(schema: dict[str, Any], length: int) -> tuple[str, str]:
    """A value of `length` characters that the string schema's pattern accepts (when we find
    one), and a character that makes it fail when appended: the pattern then has to look at the
    whole value."""
    pattern = _ecma(schema["pattern"])
    candidates = [head + "a" * max(length - len(head), 0) for head in ("", "https://example.com/", "text/")]
    candidates.append("a" * min(length, 64) + " " * max(length - 64, 0))  # a tag, then spaces
    value = next((c for c in candidates if pattern.search(c)), candidates[0])
    bad = next((b for b in ("\x01", "\x00", "\x7f", " ", "/") if not pattern.search(value + b)), "\x00")
    return value, bad


def _string_bound(field: str, schema: dict[str, Any]) -> int:
    if "maxLength" in schema:
        return int(schema["maxLength"])
    if field == "content":
        return CONTENT_BYTES  # stated in bytes; 'a' is one byte
    return 100_000


def body_field_cases(op: Operation, path: Callable[[int], str]) -> list[Case]:
    """For each string field (or list of strings) with a pattern: 32,000 characters and then a
    bad one, and a value as long as allowed ending in a bad one (the pattern runs to the end)."""
    schema = op.spec["requestBody"]["content"]["application/json"]["schema"]
    out = []
    for field, prop in schema.get("properties", {}).items():
        item = prop.get("items") if prop.get("type") == "array" else None
        target = item if item is not None else prop
        if target.get("type") != "string" or "pattern" not in target:
            continue
        bound = _string_bound(field, target)
        long_value, bad = _filler(target, 32_000)
        max_value, max_bad = _filler(target, bound - 1)
        if item is None:
            long_body, max_body = {field: long_value + bad}, {field: max_value + max_bad}
            max_label = f"{field}: {bound:,} chars, last bad"
        else:
            count = int(prop.get("maxItems", 100))
            values = [f"{i:04d}{max_value[4:]}" for i in range(count)]
            values[-1] += max_bad
            long_body, max_body = {field: [long_value + bad]}, {field: values}
            max_label = f"{field}: {count} x {bound:,} chars, last bad"
        out.append(_body_case(op, f"{field}: 32,000 chars + {bad!r}", _json(long_body), path))
        out.append(_body_case(op, max_label, _json(max_body), path))
    return out


def _body_case(op: Operation, label: str, body: bytes, path: Callable[[int], str], **extra: Any) -> Case:
    return Case(label, lambda i: Req(op.method, path(i), body), **extra)


def _fresh_case(
    label: str, method: str, path: Callable[[], str], body: bytes, grows: tuple[str, float] | None
) -> Case:
    """A body sent to a path made for each run (a fresh card for an update)."""
    return Case(label, lambda i: Req(method, path(), body), grows_from=grows)


SHAPES = (
    "4 MiB of whitespace",
    "{field}: nested 30 deep",
    "{field}: nested 300 deep",
    "{field}: nested 5,000 deep",
    "{field}: 100,000-element array",
    "{field}: 100,000-key object",
    "100,000 unknown top-level keys",
    "{field}: 4 MiB array of 1M strings",
)


@functools.lru_cache(maxsize=4)
def _shape_body(shape: str, field: str) -> bytes:
    """The body of one of SHAPES, built when first sent (they are large) and kept for reuse."""
    key = b'{"' + field.encode() + b'":'
    if shape == SHAPES[0]:
        return b" " * MAX_BODY_BYTES
    if "nested" in shape:
        # As text: json.dumps itself would hit the recursion limit at 5,000 levels.
        depth = int(shape.split()[2].replace(",", ""))
        return key + b"[" * depth + b"]" * depth + b"}"
    if "element array" in shape:
        return key + b"[" + b",".join(b"%d" % i for i in range(100_000)) + b"]}"
    if "key object" in shape:
        return key + b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(100_000)) + b"}}"
    if "top-level" in shape:
        return b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(100_000)) + b"}"
    return key + b"[" + b'"a",' * ((MAX_BODY_BYTES - 64) // 4) + b'"a"]}'


def body_shape_cases(op: Operation) -> list[Case]:
    """Deep nesting, long arrays, wide objects and 4 MiB bodies, inside a field of the body."""
    schema = op.spec["requestBody"]["content"]["application/json"]["schema"]
    props = list(schema.get("properties", {}))
    field = "tags" if "tags" in props else (schema.get("required") or props)[0]
    return [
        Case(
            shape.format(field=field),
            lambda i, shape=shape: Req(op.method, op.fixed_path, _shape_body(shape, field)),
        )
        for shape in SHAPES
    ]


def query_cases(op: Operation, base: Callable[[int], Req]) -> list[Case]:
    """Odd values for every query parameter: integers and booleans not in their JSON form or
    huge, strings as long as allowed ending in a bad character or far too long, cursors of
    garbage; and one parameter given 10,000 times."""
    out = []
    params = [p for p in op.spec["parameters"] if p["in"] == "query"]
    for param in params:
        name, schema = param["name"], param["schema"]
        kind = schema.get("type")
        values: dict[str, str] = {}
        if kind == "integer":
            values = {"1e1": "1e1", "'9' x 5,000": "9" * 5000, "'9' x 100,000": "9" * 100_000}
        elif kind == "boolean":
            values = {"TRUE": "TRUE", "'true' x 25,000": "true" * 25_000}
        elif "enum" in schema:
            values = {"'x' x 100,000": "x" * 100_000}
        elif kind == "string":
            if "pattern" in schema:
                bound = int(schema.get("maxLength", 256))
                value, bad = _filler(schema, bound - 1)
                values[f"{bound:,} chars, last bad"] = value + bad
            values["100,000 chars"] = "a" * 100_000
            if name == "cursor":
                bound = int(schema.get("maxLength", 2048))
                values[f"{bound:,} chars of garbage"] = "A" * bound
                values[f"{bound:,} chars, payload.signature"] = (
                    "A" * (bound // 2) + "." + "B" * (bound // 2 - 1)
                )
        for label, value in values.items():
            out.append(_query_case(base, f"{name}={label}", f"{name}={quote(value, safe='')}"))
    if params:
        first = params[0]["name"]
        out.append(_query_case(base, f"{first} given 10,000 times", "&".join([f"{first}=1"] * 10_000)))
    return out


def _query_case(base: Callable[[int], Req], label: str, query: str, **extra: Any) -> Case:
    def make(i: int) -> Req:
        req = base(i)
        joiner = "&" if "?" in req.path else "?"
        return dataclasses.replace(req, path=f"{req.path}{joiner}{query}")

    return Case(label, make, **extra)


def path_cases(op: Operation) -> list[Case]:
    """Ids that name nothing: well-formed, one bad character at the end, and 200,000 characters."""
    names = [p["name"] for p in op.spec["parameters"] if p["in"] == "path"]
    if not names:
        return []
    ids = {
        "unknown 64-char id": "x" * 64,
        "64-char id, last '!'": "x" * 63 + "!",
        "200,000-char id": "x" * 200_000,
    }
    out = []
    for label, bad_id in ids.items():
        path = re.sub(r"\{[^}]+\}", bad_id, op.template)
        body = op.sample_body
        out.append(Case(f"path: {label}", lambda i, path=path, body=body: Req(op.method, path, body)))
    return out


def head_cases(op: Operation) -> list[Case]:
    """Long and many headers, and a flood of unknown query parameters, on the trivial request."""
    assert op.trivial is not None
    trivial = op.trivial

    def with_headers(extra: tuple[tuple[str, str], ...]) -> Callable[[int], Req]:
        def make(i: int) -> Req:
            req = trivial(i)
            return dataclasses.replace(req, headers=req.headers + extra)

        return make

    def unknown(count: int) -> str:
        return "&".join(f"p{i}=1" for i in range(count))

    return [
        Case("header of 16 KiB", with_headers((("X-Pad", "a" * MAX_HEADER_BYTES),))),
        Case("header of 64 KiB", with_headers((("X-Pad", "a" * 4 * MAX_HEADER_BYTES),))),
        Case("1,000 headers (under 16 KiB)", with_headers(tuple((f"x-h{i}", "1") for i in range(1000)))),
        _query_case(trivial, "1,000 unknown query parameters", unknown(1000)),
        _query_case(
            trivial,
            "10,000 unknown query parameters",
            unknown(10_000),
            grows_from=("1,000 unknown query parameters", 10.0),
        ),
    ]


# --- the data and the server ---------------------------------------------------------------


@dataclasses.dataclass
class Seeded:
    key: str
    search_ids: list[str]
    plain: list[str]
    trashed: list[str]
    archived: list[str]
    big_archived: list[str]
    link_id: str
    card_id: str
    folder_id: str
    renamed_folder_id: str


def seed(url: str, count: int) -> Seeded:
    """An account with `count` searchable cards, pools of cards in each state, and folders."""
    db = open_database(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name="hostile").id
        key = keys.issue_api_key(session, account_id=account)

    def add(session: Any, content: str, tags: tuple[str, ...] = ()) -> str:
        return editing.add_card(session, account_id=account, content=content, tags=tags).card.id

    search_ids: list[str] = []
    n = len(VOCABULARY)
    for start in range(0, count, 500):
        with db.transaction() as session:
            for i in range(start, min(start + 500, count)):
                words = " ".join(VOCABULARY[(i * 7 + j * 11 + j * j) % n] for j in range(12))
                tags = (f"topic-{i % 20}", f"group-{i % 7}")
                search_ids.append(add(session, f"Card {i}: {words}", tags))
    with db.transaction() as session:
        plain = [add(session, f"pool card {i}") for i in range(800)]
        trashed = [add(session, f"trashed card {i}") for i in range(300)]
        archived = [add(session, f"archived card {i}") for i in range(200)]
        for card_id in trashed:
            trash.move_to_trash(session, account_id=account, card_id=card_id)
        for card_id in archived:
            editing.set_archived(session, account_id=account, card_id=card_id, is_archived=True)
        link_id = add(session, "https://example.com/articles/42")
        card_id = add(session, "A small card to read.", ("reading",))
        folder_id = folders.create_folder(session, account_id=account, name="Main").id
        renamed = folders.create_folder(session, account_id=account, name="Renamed").id
        for i in range(20):
            folders.create_folder(session, account_id=account, name=f"Folder {i:02d}")
    big_archived = []
    for start in range(0, 100, 20):
        with db.transaction() as session:
            for i in range(start, start + 20):
                big = add(session, _fill(f"big {i} ", "x"))
                editing.set_archived(session, account_id=account, card_id=big, is_archived=True)
                big_archived.append(big)
    if db.dialect == "postgresql":
        # Statistics, as autovacuum would have them after a bulk load; without them the planner
        # picks plans that take seconds (listTags: 1.6 s instead of 20 ms on 3,000 cards).
        with db.engine.begin() as connection:
            connection.execute(text("ANALYZE"))
    db.dispose()
    return Seeded(
        key, search_ids, plain, trashed, archived, big_archived, link_id, card_id, folder_id, renamed
    )


@contextmanager
def serving(url: str, workdir: Path) -> Iterator[str]:
    """`cardvault serve` on a free port (CPU 0 when there are two); yield its base URL."""
    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_DATA_DIR": str(workdir),
        "CARDVAULT_VALIDATE_RESPONSES": "false",
    }
    for name in ("CARDVAULT_PUBLIC_URL", "CARDVAULT_REDIS_URL"):
        env.pop(name, None)  # workers run inside serve
    with servers.serving(env, workdir / "server.log", pin=True, start_seconds=60) as base:
        yield base.removesuffix("/v1")


class Fixtures:
    """Resources the requests act on; what a destructive request needs is made fresh (untimed)."""

    def __init__(self, base: str, seeded: Seeded) -> None:
        self.seeded = seeded
        self.api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {seeded.key}"}, timeout=120)
        self.counter = itertools.count()
        self.tag_operation_id = ""

    def call(self, method: str, path: str, body: Any = None) -> Any:
        response = self.api.request(method, path, json=body)
        if response.status_code >= 300:
            raise SystemExit(
                f"setup request {method} {path} answered {response.status_code}: {response.text}"
            )
        return response.json() if response.content else None

    def fresh_card(self) -> str:
        if self.seeded.plain:
            return self.seeded.plain.pop()
        return str(self.call("POST", "/v1/cards", {"content": "fresh card"})["cardId"])

    def trashed_card(self) -> str:
        if self.seeded.trashed:
            return self.seeded.trashed.pop()
        card_id = self.fresh_card()
        self.call("POST", f"/v1/cards/{card_id}/trash")
        return card_id

    def archived_card(self) -> str:
        if self.seeded.archived:
            return self.seeded.archived.pop()
        card_id = self.fresh_card()
        self.call("POST", f"/v1/cards/{card_id}/archive")
        return card_id

    def fresh_folder(self) -> str:
        return str(self.call("POST", "/v1/folders", {"name": f"tmp {uuid.uuid4().hex}"})["id"])

    def tagged(self, kind: str) -> str:
        """A new tag on one new card; the tag operation started on it touches one card."""
        tag = f"{kind}-{next(self.counter)}-{uuid.uuid4().hex[:6]}"
        self.call("POST", "/v1/cards", {"content": "tagged card", "tags": [tag]})
        return tag

    def in_folder(self, card_ids: list[str]) -> list[str]:
        self.call("POST", f"/v1/folders/{self.seeded.folder_id}/cards", {"cardIds": card_ids})
        return card_ids

    def search_slice(self, i: int, size: int = 100) -> list[str]:
        ids = self.seeded.search_ids
        start = (i * size) % max(len(ids) - size, 1)
        return ids[start : start + size]

    def wait_tag_operation(self, status: int, body: bytes) -> None:
        if status != 202:
            return
        operation = json.loads(body)["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.call("GET", f"/v1/tags/operations/{operation}")["status"] != "running":
                return
            time.sleep(0.01)
        raise SystemExit(f"tag operation {operation} did not finish")


# --- the cases of each operation -----------------------------------------------------------


def define(operations: dict[str, Operation], fx: Fixtures) -> None:
    """Give every operation its trivial request and its cases; stop on an operation without."""
    s = fx.seeded
    ops = operations

    def op(op_id: str) -> Operation:
        if op_id not in ops:
            raise SystemExit(f"bench_hostile defines {op_id}, which the spec does not have")
        return ops[op_id]

    def simple(
        op_id: str, path: Callable[[int], str], body: Callable[[int], Any] | None = None, **kw: Any
    ) -> None:
        o = op(op_id)
        o.trivial = lambda i: Req(o.method, path(i), _json(body(i)) if body else None, **kw)

    # system
    simple("getHealth", lambda i: "/v1/health", auth=False)
    op("getHealth").fixed_path = "/v1/health"

    # cards
    o = op("createCard")
    o.trivial = lambda i: Req("POST", "/v1/cards", _json({"content": "hello"}))
    o.fixed_path = "/v1/cards"
    o.sample_body = _json({"content": "hello"})

    o = op("listCards")
    simple("listCards", lambda i: "/v1/cards")
    o.fixed_path = "/v1/cards"

    simple("getCard", lambda i: f"/v1/cards/{s.card_id}")
    op("getCard").fixed_path = f"/v1/cards/{s.card_id}"

    simple("getExtendedCard", lambda i: f"/v1/cards/{s.card_id}/extended")
    op("getExtendedCard").fixed_path = f"/v1/cards/{s.card_id}/extended"

    o = op("updateCard")
    o.trivial = lambda i: Req("PATCH", f"/v1/cards/{fx.fresh_card()}", _json({"content": f"hello {i}"}))
    o.fixed_path = f"/v1/cards/{s.card_id}"
    o.sample_body = _json({"notes": "n"})

    simple("deleteCard", lambda i: f"/v1/cards/{fx.trashed_card()}")
    op("deleteCard").fixed_path = f"/v1/cards/{s.card_id}"

    o = op("setCardFavorite")
    o.trivial = lambda i: Req("PATCH", f"/v1/cards/{s.card_id}/favorite", _json({"isFavorited": i % 2 == 0}))
    o.fixed_path = f"/v1/cards/{s.card_id}/favorite"
    o.sample_body = _json({"isFavorited": True})

    simple("markCardDone", lambda i: f"/v1/cards/{s.link_id}/done")
    simple("trashCard", lambda i: f"/v1/cards/{fx.fresh_card()}/trash")
    simple("restoreCard", lambda i: f"/v1/cards/{fx.trashed_card()}/restore")
    simple("archiveCard", lambda i: f"/v1/cards/{fx.fresh_card()}/archive")
    simple("unarchiveCard", lambda i: f"/v1/cards/{fx.archived_card()}/unarchive")

    # tags
    simple("listTags", lambda i: "/v1/tags")
    op("listTags").fixed_path = "/v1/tags"
    wait = fx.wait_tag_operation
    for op_id, kind, fields in (
        ("renameTag", "rename", lambda t: {"from": t, "to": t + "-renamed"}),
        ("mergeTag", "merge", lambda t: {"from": t, "into": t + "-merged"}),
        ("deleteTag", "delete", lambda t: {"tag": t}),
    ):
        o = op(op_id)
        path = o.template
        o.trivial = lambda i, path=path, kind=kind, fields=fields: Req(
            "POST", path, _json(fields(fx.tagged(kind))), after=wait
        )
        o.fixed_path = path
        o.sample_body = _json(fields("missing"))
    simple("getTagOperation", lambda i: f"/v1/tags/operations/{fx.tag_operation_id}")

    # trash
    simple("listTrash", lambda i: "/v1/trash")
    op("listTrash").fixed_path = "/v1/trash"

    def empty_trash(i: int) -> Req:
        fx.trashed_card()  # one card at least (the first run empties the seeded pool)
        return Req("DELETE", "/v1/trash")

    op("emptyTrash").trivial = empty_trash

    # folders
    o = op("createFolder")
    o.trivial = lambda i: Req("POST", "/v1/folders", _json({"name": f"Folder {uuid.uuid4().hex}"}))
    o.fixed_path = "/v1/folders"
    simple("listFolders", lambda i: "/v1/folders")
    op("listFolders").fixed_path = "/v1/folders"
    simple("getFolder", lambda i: f"/v1/folders/{s.folder_id}")
    o = op("updateFolder")
    o.trivial = lambda i: Req(
        "PATCH", f"/v1/folders/{s.renamed_folder_id}", _json({"name": f"Renamed {uuid.uuid4().hex}"})
    )
    o.fixed_path = f"/v1/folders/{s.renamed_folder_id}"
    o.sample_body = _json({"color": "red"})
    simple("deleteFolder", lambda i: f"/v1/folders/{fx.fresh_folder()}")
    members = f"/v1/folders/{s.folder_id}/cards"
    o = op("addFolderCards")
    o.trivial = lambda i: Req("POST", members, _json({"cardIds": [fx.fresh_card()]}))
    o.fixed_path, o.sample_body = members, _json({"cardIds": [s.card_id]})
    o = op("removeFolderCards")
    o.trivial = lambda i: Req("DELETE", members, _json({"cardIds": fx.in_folder([fx.fresh_card()])}))
    o.fixed_path, o.sample_body = members, _json({"cardIds": [s.card_id]})

    missing = sorted(o.op_id for o in ops.values() if o.trivial is None)
    if missing:
        raise SystemExit(f"no trivial request for {', '.join(missing)}: add them to bench/bench_hostile.py")

    def base(o: Operation) -> Callable[[int], Req]:
        assert o.trivial is not None
        return o.trivial

    # cases every operation gets, from the spec
    for o in ops.values():
        o.cases = [Case(TRIVIAL, base(o)), *head_cases(o), *path_cases(o)]
        if "requestBody" in o.spec:
            fixed = o.fixed_path
            o.cases += body_field_cases(o, lambda i, fixed=fixed: fixed)
            o.cases += body_shape_cases(o)
        else:
            o.cases.append(
                Case(
                    "4 MiB JSON body (takes none)",
                    lambda i, o=o: dataclasses.replace(base(o)(i), body=b" " * (MAX_BODY_BYTES - 2) + b"{}"),
                )
            )
        o.cases += query_cases(o, base(o))

    # cases by hand: classification of large contents, on create and on update
    marks = "marks out of canonical order"
    large: list[tuple[str, dict[str, Any], tuple[str, float] | None]] = [
        ("quote-like: '\"' + 'ab\" ' x n + ' —'", {"content": _fill('"', 'ab" ', " —")}, None),
        ("quote-like: '\"' + 'ab\" ' x n + '— Author'", {"content": _fill('"', 'ab" ', "— Author")}, None),
        ("quote-like: closers each before 60 spaces", {"content": _fill('"', '"' + " " * 60 + "x")}, None),
        (
            "palette-like: colours, last token bad",
            {"content": _fill("", "rebeccapurple, #a1b2c3; red ", "nope")},
            None,
        ),
        ("link: 'https://a/' + '/' x n", {"content": _fill("https://a/", "/")}, None),
        ("link-like: 'https://a/' + '/' x n + ' x'", {"content": _fill("https://a/", "/", " x")}, None),
        ("accents: 'e\\u0301' x n", {"content": _fill("", "e\u0301")}, None),
        (
            "words: 'lorem ipsum dolor sit amet ' x n",
            {"content": _fill("", "lorem ipsum dolor sit amet ")},
            None,
        ),
        ("distinct words (index budget)", {"content": _distinct_words(CONTENT_BYTES)}, None),
        (f"{marks}, 16 KiB", {"content": _marks_out_of_order(16 * 1024)}, None),
        (f"{marks}, 64 KiB", {"content": _marks_out_of_order(64 * 1024)}, (f"content: {marks}, 16 KiB", 4.0)),
        (
            f"{marks}, 512 KiB",
            {"content": _marks_out_of_order(CONTENT_BYTES)},
            (f"content: {marks}, 64 KiB", 8.0),
        ),
        (f"{marks}, 16K chars", {"notes": _marks_out_of_order(16 * 1024, unit="chars")}, None),
        (
            f"{marks}, 64K chars",
            {"notes": _marks_out_of_order(65_536, unit="chars")},
            (f"notes: {marks}, 16K chars", 4.0),
        ),
        ("100 distinct valid tags of 64 chars", {"tags": [f"{i:03d}-" + "t" * 60 for i in range(100)]}, None),
    ]
    for op_id, make_path in (
        ("createCard", lambda: "/v1/cards"),
        ("updateCard", lambda: f"/v1/cards/{fx.fresh_card()}"),
    ):
        o = op(op_id)
        labels = set()
        for label, body, grows in large:
            field, value = next(iter(body.items()))
            size = (
                f" ({len(value.encode()) // 1024} KiB)"
                if isinstance(value, str) and not re.search(r"KiB|chars", label)
                else ""
            )
            labels.add(f"{field}: {label}{size}")
            if grows and grows[0] not in labels:
                raise SystemExit(f"{op_id}: {label} grows from unknown case {grows[0]}")
            o.cases.append(_fresh_case(f"{field}: {label}{size}", o.method, make_path, _json(body), grows))

    o = op("createCard")
    o.cases += [
        _body_case(
            o,
            "fileSize: 100,000-digit integer",
            b'{"fileSize":' + b"9" * 100_000 + b"}",
            lambda i: "/v1/cards",
        ),
        _body_case(
            o,
            "content: 4 MiB of 'a' (over 512 KiB)",
            _json({"content": "a" * (MAX_BODY_BYTES - 64)}),
            lambda i: "/v1/cards",
        ),
        Case(
            "Authorization: Bearer + 15 KiB",
            lambda i: Req(
                "POST",
                "/v1/cards",
                _json({"content": "x"}),
                (("Authorization", "Bearer " + "a" * 15_000),),
                auth=False,
            ),
        ),
        Case(
            "Content-Type with 2,000 parameters",
            lambda i: Req(
                "POST", "/v1/cards", _json({"content": "x"}), content_type="application/json" + "; a=b" * 2000
            ),
        ),
        Case(
            "X-Request-Id of 15 KiB",
            lambda i: Req("POST", "/v1/cards", _json({"content": "x"}), (("X-Request-Id", "r" * 15_000),)),
        ),
    ]

    # search: each case against q=c on the same cards
    o = op("listCards")
    q_c = "q=c"
    o.cases += [
        _query_case(base(o), q_c, "q=c"),
        _query_case(base(o), "q='c c c … c' (16 words)", "q=" + quote(" ".join(["c"] * 16)), vs=q_c),
        _query_case(
            base(o), "q='a b c … p' (16 one-letter words)", "q=" + quote(" ".join("abcdefghijklmnop")), vs=q_c
        ),
        _query_case(base(o), "q=16 distinct words", "q=" + quote(" ".join(VOCABULARY[:32:2])), vs=q_c),
        _query_case(base(o), "q=one word of 256 chars", "q=" + "c" * 256, vs=q_c),
        _query_case(
            base(o), "q=128 two-letter words (256 chars)", "q=" + quote(" ".join(["ca"] * 85)), vs=q_c
        ),
        _query_case(
            base(o),
            "archived=only&include=content&limit=100 (100 x 512 KiB)",
            "archived=only&include=content,metadata,processing&limit=100",
        ),
    ]
    o = op("getCard")
    o.cases.append(Case("a card of 512 KiB", lambda i: Req("GET", f"/v1/cards/{s.big_archived[0]}")))
    o = op("getExtendedCard")
    o.cases.append(Case("a card of 512 KiB", lambda i: Req("GET", f"/v1/cards/{s.big_archived[0]}/extended")))
    op("listTags").cases.append(
        _query_case(base(op("listTags")), "sort=count&limit=500", "sort=count&limit=500")
    )
    op("listFolders").cases.append(_query_case(base(op("listFolders")), "limit=500", "limit=500"))
    op("listTrash").cases.append(
        _query_case(
            base(op("listTrash")),
            "limit=100&include=content,metadata,processing",
            "limit=100&include=content,metadata,processing",
        )
    )

    # card id lists
    for op_id in ("addFolderCards", "removeFolderCards"):
        o = op(op_id)
        body_cases = {
            "cardIds: 2,000 objects {'a': i}": {"cardIds": [{"a": i} for i in range(2000)]},
            "cardIds: 2,000 equal strings": {"cardIds": ["crd_x"] * 2000},
            "cardIds: 100 objects {'a': i}": {"cardIds": [{"a": i} for i in range(100)]},
            "cardIds: 100 equal strings": {"cardIds": ["crd_x"] * 100},
            "cardIds: 100 distinct ids of 1,024 chars": {
                "cardIds": [f"{i:03d}" + "x" * 1021 for i in range(100)]
            },
        }
        for label, body in body_cases.items():
            o.cases.append(_body_case(o, label, _json(body), lambda i: members))
        if op_id == "addFolderCards":
            o.cases.append(
                Case(
                    "cardIds: 100 real cards, new to the folder",
                    lambda i: Req("POST", members, _json({"cardIds": fx.search_slice(i)})),
                )
            )
        else:
            o.cases.append(
                Case(
                    "cardIds: 100 real cards in the folder",
                    lambda i: Req(
                        "DELETE", members, _json({"cardIds": fx.in_folder(fx.search_slice(i + 7))})
                    ),
                )
            )


# --- measuring -----------------------------------------------------------------------------


class HealthPoller(threading.Thread):
    """GET /v1/health every POLL_SECONDS while armed; remembers (start, end) of each poll."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.armed = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.polls: list[tuple[float, float]] = []
        self.stopped = False

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=600) as client:
            while not self.stopped:
                if not self.armed.is_set():
                    self.idle.set()
                    self.armed.wait(0.1)
                    continue
                self.idle.clear()
                started = time.perf_counter()
                with suppress(httpx.HTTPError):
                    client.get("/v1/health")
                ended = time.perf_counter()
                self.polls.append((started, ended))
                time.sleep(max(0.0, POLL_SECONDS - (ended - started)))

    @contextmanager
    def polling(self) -> Iterator[list[tuple[float, float]]]:
        """Poll while the block runs; the polls made are in the yielded list once it ends."""
        self.polls = []
        self.armed.set()
        time.sleep(0.006)  # a poll in flight first
        made: list[tuple[float, float]] = []
        try:
            yield made
        finally:
            self.armed.clear()
            self.idle.wait(600)  # the poll in flight ends, whatever it took
            made.extend(self.polls)


class Runner:
    """Sends the timed requests over one keep-alive connection, with http.client: httpx refuses
    URLs over 64 KiB, and some cases are longer."""

    def __init__(self, base: str, key: str, args: argparse.Namespace, poller: HealthPoller) -> None:
        self.base, self.key, self.args, self.poller = base, key, args, poller
        self.address = urlsplit(base)
        self.timeout = args.max_seconds * 4 + 30
        self.connection = self._connect()
        self.slow: dict[str, str] = {}  # label of a slow case with a smaller size -> where measured

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self.address.hostname or "127.0.0.1", self.address.port
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def send(self, req: Req) -> tuple[float, str]:
        headers = [("Authorization", f"Bearer {self.key}")] if req.auth else []
        if req.body is not None:
            headers += [("Content-Type", req.content_type), ("Content-Length", str(len(req.body)))]
        headers.extend(req.headers)
        started = time.perf_counter()
        try:
            self.connection.putrequest(req.method, req.path, skip_accept_encoding=True)
            for name, value in headers:
                self.connection.putheader(name, value)
            self.connection.endheaders(req.body)
            response = self.connection.getresponse()
            body = response.read()
        except TimeoutError:
            self._reconnect(wait=True)
            return time.perf_counter() - started, "timeout"
        except (OSError, http.client.HTTPException) as exc:
            self._reconnect(wait=False)
            return time.perf_counter() - started, type(exc).__name__
        elapsed = time.perf_counter() - started
        if response.will_close:
            self.connection.close()
            self.connection = self._connect()
        if req.after is not None:
            req.after(response.status, body)
        return elapsed, str(response.status)

    def _reconnect(self, *, wait: bool) -> None:
        self.connection.close()
        self.connection = self._connect()
        deadline = time.monotonic() + (600 if wait else 30)
        while time.monotonic() < deadline:  # until the server answers again
            try:
                if httpx.get(f"{self.base}/v1/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.5)

    def send_polled(self, req: Req) -> tuple[float, str, float]:
        """Send with health polled meanwhile; return the time, the status and the longest
        health latency among polls that overlapped the request."""
        with self.poller.polling() as polls:
            started = time.perf_counter()
            elapsed, status = self.send(req)
            ended = started + elapsed
        overlapping = [e - s for s, e in polls if e >= started and s <= ended]
        return elapsed, status, max(overlapping, default=0.0)

    def idle_health(self, seconds: float = 1.5) -> list[float]:
        with self.poller.polling() as polls:
            time.sleep(seconds)
        return sorted(e - s for s, e in polls)

    def run(self, op: Operation, case: Case, done: dict[str, Result]) -> Result:
        if case.grows_from is not None and case.grows_from[0] in done:
            estimate = done[case.grows_from[0]].median_ms * case.grows_from[1] ** 2
            reason = ""
            if estimate > self.args.max_seconds * 1000:
                reason = "not run: quadratic estimate from the smaller size"
            elif case.label in self.slow:
                reason = f"not run: quadratic estimate; measured on {self.slow[case.label]}"
            if reason:
                return Result(op.op_id, case.label, case.vs, [], [], 0.0, reason, estimate)
        counter = itertools.count()
        elapsed, status, stall = self.send_polled(case.make(next(counter)))  # also the warm-up
        statuses, stalls, samples = [status], [stall], []
        if elapsed > self.args.slow_seconds:
            samples.append(elapsed)
            if case.grows_from is not None:  # once is enough: other operations estimate it
                self.slow.setdefault(case.label, op.op_id)
        else:
            least = self.args.min_repeats if elapsed < 0.1 else 2
            runs = max(least, min(self.args.repeats, int(self.args.budget / elapsed)))
            for _ in range(runs):
                elapsed, status = self.send(case.make(next(counter)))
                samples.append(elapsed)
                statuses.append(status)
            if 0.02 < statistics.median(samples) < 0.1:  # short enough to slip between polls
                for _ in range(2):
                    _, status, stall = self.send_polled(case.make(next(counter)))
                    stalls.append(stall)
                    statuses.append(status)
        return Result(
            op.op_id, case.label, case.vs, statuses, [x * 1000 for x in samples], max(stalls) * 1000
        )


# --- the report ----------------------------------------------------------------------------


def _statuses(result: Result) -> str:
    return "/".join(sorted(set(result.statuses), key=result.statuses.index)) or "-"


def _flags(result: Result, ratio: float) -> str:
    flags = []
    if any(s.startswith("5") for s in result.statuses):
        flags.append("<< 5xx: BUG")
    if any(not s.isdigit() for s in result.statuses):
        flags.append("<< no answer")
    if result.skipped:
        flags.append(f"({result.skipped})")
    elif ratio > AIM:
        flags.append(f"> {AIM:.0f}x")
    return " ".join(flags)


def report(results: list[Result], idle: list[float], args: argparse.Namespace, seconds: float) -> None:
    by_key = {(r.op_id, r.label): r for r in results}
    idle_p50 = statistics.median(idle) * 1000
    idle_p99 = idle[min(len(idle) - 1, int(len(idle) * 0.99))] * 1000
    print(
        f"\n{args.database}, {args.cards} cards; median of up to {args.repeats} runs per case; "
        f"health at idle: p50 {idle_p50:.1f} ms, p99 {idle_p99:.1f} ms, max {idle[-1] * 1000:.1f} ms "
        f"({len(idle)} polls); health max: the longest GET /v1/health while the case ran "
        f"(polled every {POLL_SECONDS * 1000:.0f} ms); stall: health max / idle p50"
    )
    columns = (("operation", "<18"), ("case", "<58"), ("status", ">9"), ("base ms", ">9"), ("case ms", ">9"))
    columns += (("ratio", ">7"), ("health max", ">10"), ("stall", ">7"))
    header = " ".join(f"{name:{form}}" for name, form in columns)
    print(header)
    print("-" * len(header))
    rows = []
    for result in results:
        base = by_key[(result.op_id, result.vs)].median_ms
        ratio = result.median_ms / base if base else 0.0
        label = result.label if result.vs == TRIVIAL else f"{result.label} [vs {result.vs}]"
        if len(label) > 58:
            label = label[:57] + "…"
        stall = f"{result.health_max_ms / idle_p50:.1f}x" if result.health_max_ms else "-"
        health = f"{result.health_max_ms:.1f}" if result.health_max_ms else "-"
        case_ms = f"~{result.median_ms:.0f}" if result.skipped else f"{result.median_ms:.2f}"
        print(
            f"{result.op_id:<18} {label:<58} {_statuses(result):>9} {base:>9.2f} {case_ms:>9} "
            f"{ratio:>6.1f}x {health:>10} {stall:>7} {_flags(result, ratio)}".rstrip()
        )
        rows.append((ratio, result, base))
    measured = [row for row in rows if not row[1].skipped]
    measured.sort(key=lambda row: row[0], reverse=True)
    print(f"\n{len(results)} cases over {len({r.op_id for r in results})} operations in {seconds:.0f} s")
    print("worst ratios:")
    for ratio, result, base in measured[:5]:
        print(
            f"  {ratio:8.1f}x  {result.op_id} {result.label!r}: {result.median_ms:.1f} ms vs {base:.2f} ms "
            f"({_statuses(result)}), health max {result.health_max_ms:.0f} ms"
        )
    stalls = sorted((r for r in results if not r.skipped), key=lambda r: r.health_max_ms, reverse=True)
    print("longest event-loop stalls (health latency while the request ran):")
    for result in stalls[:5]:
        print(
            f"  {result.health_max_ms:8.1f} ms ({result.health_max_ms / idle_p50:.0f}x idle p50)  "
            f"{result.op_id} {result.label!r}"
        )
    skipped = [row for row in rows if row[1].skipped]
    if skipped:
        print("not run, estimated from a smaller size of the same input (quadratic growth):")
    by_label: dict[str, list[tuple[float, Result]]] = {}
    for ratio, result, _ in skipped:
        by_label.setdefault(result.label, []).append((ratio, result))
    for label, group in by_label.items():
        seconds = sorted(result.median_ms / 1000 for _, result in group)
        ratios = sorted(ratio for ratio, _ in group)
        if len(group) == 1:
            print(f"  {label!r} on {group[0][1].op_id}: ~{seconds[0]:.1f} s ({ratios[0]:.0f}x)")
        else:
            span = f"~{seconds[0]:.1f}-{seconds[-1]:.1f} s ({ratios[0]:.0f}x-{ratios[-1]:.0f}x)"
            print(f"  {label!r} on {len(group)} operations: {span}")
    errors = [r for r in results if any(s.startswith("5") or not s.isdigit() for s in r.statuses)]
    for result in errors:
        print(f"  5xx or no answer: {result.op_id} {result.label!r} ({_statuses(result)})")
    worst_ratio, worst, worst_base = measured[0]
    worst_stall = stalls[0]
    above = sum(1 for row in measured if row[0] > AIM)
    print(
        f"\nSUMMARY worst ratio {worst_ratio:.1f}x ({worst.op_id}: {worst.label}; "
        f"{worst.median_ms:.1f} ms vs {worst_base:.2f} ms), aim <= {AIM:.0f}x; {above} of {len(measured)} "
        f"cases above it; worst stall {worst_stall.health_max_ms:.0f} ms ({worst_stall.op_id}: "
        f"{worst_stall.label}); {len(errors)} cases with 5xx or no answer; {len(skipped)} not run"
        + (f" (estimated up to {max(row[0] for row in skipped):.0f}x)" if skipped else "")
    )
    print(
        json.dumps(
            {
                "bench": "hostile",
                "database": args.database,
                "cases": len(results),
                "worst_ratio": round(worst_ratio, 2),
                "worst_case": f"{worst.op_id}: {worst.label}",
                "worst_stall_ms": round(worst_stall.health_max_ms, 1),
                "idle_health_p50_ms": round(idle_p50, 2),
                "above_aim": above,
                "errors": len(errors),
                "skipped": len(skipped),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument(
        "--cards", type=int, default=3000, help="cards to search (seeded before the server starts)"
    )
    parser.add_argument("--repeats", type=int, default=15, help="timed runs per case at most")
    parser.add_argument("--min-repeats", type=int, default=3, help="timed runs per case at least")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timed runs per case")
    parser.add_argument("--slow-seconds", type=float, default=0.5, help="a case slower than this runs once")
    parser.add_argument("--max-seconds", type=float, default=6.0, help="skip a case estimated to take longer")
    parser.add_argument("--only", default="", help="comma-separated operationIds to run (default: all)")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})

    started = time.perf_counter()
    operations = load_operations()
    with tempfile.TemporaryDirectory() as workdir:
        url = fresh_database(args.database, Path(workdir), name="hostile", server=POSTGRES)
        print(f"seeding {args.cards} cards on {args.database} …", file=sys.stderr, flush=True)
        seeded = seed(url, args.cards)
        with serving(url, Path(workdir)) as base:
            fx = Fixtures(base, seeded)
            define(operations, fx)
            # an operation to read back
            response = fx.api.post("/v1/tags/delete", json={"tag": fx.tagged("seed")})
            fx.wait_tag_operation(response.status_code, response.content)
            fx.tag_operation_id = response.json()["id"]
            poller = HealthPoller(base)
            poller.start()
            runner = Runner(base, seeded.key, args, poller)
            idle = runner.idle_health()
            order = sorted(operations.values(), key=lambda o: o.op_id == "emptyTrash")  # it empties the pool
            only = set(filter(None, args.only.split(",")))
            results: list[Result] = []
            for op in order:
                if only and op.op_id not in only:
                    continue
                op_started = time.perf_counter()
                done: dict[str, Result] = {}
                for case in op.cases:
                    result = runner.run(op, case, done)
                    done[case.label] = result
                    results.append(result)
                print(
                    f"{op.op_id}: {len(op.cases)} cases in {time.perf_counter() - op_started:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
            poller.stopped = True
            poller.armed.set()
            fx.api.close()
        if any(status.startswith("5") for result in results for status in result.statuses):
            log = (Path(workdir) / "server.log").read_text(errors="replace")
            print(f"server log, last 4,000 characters:\n{log[-4000:]}", file=sys.stderr)
    report(results, idle, args, time.perf_counter() - started)


if __name__ == "__main__":
    main()
