"""A corpus of malformed and hostile requests to every operation, built from the spec: each one
answers the JSON error body with its status, never a 5xx, and leaves the database as it was.
Hostile search input that is not an error (wildcards, full-text operators) answers exactly the
cards it should."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest
from sqlalchemy import select, text, update

from cardvault.domain.db import Database
from cardvault.domain.models import Account, Base, Subscription
from cardvault.domain.webhooks import endpoints
from cardvault.domain.webhooks import events as webhook_events
from cardvault.handlers.web.routes import ROUTES as WEB_ROUTES
from cardvault.settings import Settings
from cardvault.spec import spec_document
from cardvault.workers import broker as worker_broker
from cardvault.workers import exports as export_worker
from tests.conftest import Api, app_env
from tests.unit.handlers.test_uploads import uploaded

SPEC = spec_document()[1]
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ERROR_KEYS = {"code", "error", "details", "requestId", "retryAt"}
MAX_BODY = 4 * 1024 * 1024
JSON_TYPE = (("Content-Type", "application/json"),)
BAD = 400, "INVALID_INPUT"
BAD_TAG = 400, "INVALID_TAG"
NOT_FOUND = 404, "NOT_FOUND"
UNSUPPORTED = 415, "UNSUPPORTED_MEDIA_TYPE"
TOO_LARGE = 413, "CONTENT_TOO_LARGE"
# The corpus's caps (its settings): a third account of the world holds as many cards, folders
# and webhooks as it may, so its createCard, createFolder and createWebhook answer their 409s.
MAX_CARDS, MAX_FOLDERS = 100, 4
AT_THE_CAPS = {"auth": False, "headers": (("Authorization", "Bearer {fullKey}"),)}
# Path placeholders of the spec, and the world's ids filled in when a case is sent.
ID_KINDS = {
    "cardId": "Card",
    "folderId": "Folder",
    "operationId": "Operation",
    "exportId": "Export",
    "importId": "Import",
    "keyId": "ApiKey",
    "webhookId": "Webhook",
    "annotationId": "Annotation",
    "shareId": "Share",
    "subscriptionId": "Subscription",
}

# A body each operation accepts: cases whose fault is elsewhere (auth, headers, query, path)
# carry it, so a fault that slipped through would change data and fail the snapshot too.
VALID_BODIES: dict[str, dict[str, Any]] = {
    "createCard": {"content": "corpus"},
    "createUpload": {"fileName": "a.png", "fileSize": 10, "mimeType": "image/png"},
    "createCardThumbnailUpload": {"fileName": "a.png", "fileSize": 10, "mimeType": "image/png"},
    "replaceCardThumbnail": {"fileKey": "upl_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
    "createCardCaptionsUpload": {"fileName": "a.vtt", "fileSize": 10, "mimeType": "text/vtt"},
    "replaceCardCaptions": {"fileKey": "upl_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
    "updateCard": {"content": "changed"},
    "setCardFavorite": {"isFavorited": True},
    "renameTag": {"from": "alpha", "to": "omega"},
    "mergeTag": {"from": "alpha", "into": "beta"},
    "deleteTag": {"tag": "alpha"},
    "createFolder": {"name": "Corpus"},
    "updateFolder": {"name": "Renamed"},
    "addFolderCards": {"cardIds": ["{card2}"]},
    "removeFolderCards": {"cardIds": ["{cardId}"]},
    "createApiKey": {"name": "corpus", "scopes": ["read"]},
    "createWebhook": {"url": "https://hooks.example.com/corpus", "events": ["export.failed"]},
    "startImport": {"fileKey": "upl_aaaaaaaaaaaaaaaaaaaaaaaaaa", "fileEtag": '"corpus"'},
    "updateWebhook": {"description": "renamed"},
    "bulkCards": {"operation": "favorite", "items": [{"cardId": "{cardId}", "isFavorited": True}]},
    "createAnnotation": {"quote": "corpus", "note": "corpus"},
    "updateAnnotation": {"note": "changed"},
    "createShare": {"cardId": "{cardId}"},
    "updateShare": {"title": "renamed"},
    "createSubscription": {"url": "https://feeds.example.com/corpus.xml"},
    "updateSubscription": {"tags": ["corpus"]},
}

# Visible-character rules (tags, folder names): values made only of whitespace, control,
# zero-width or other format characters, or holding a control character.
INVISIBLE = [
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u00ad",
    "\u061c",
    "\u180e",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u2028",
    "\u202e",
    "\u2060",
    "\u2066",
    "\u3000",
    "\ufeff",
    " \u200b ",
    "\u200b\ufeff\u200e",
]
CONTROL = ["\u0001", "\u0007", "\u001b[31m", "a\u0007b", "a\u007fb", "a\u0085b", "a\u009fb", "a\tb", "a\nb"]
# Tags must also begin and end with a visible character.
TAG_ONLY = ["\u200bword", "word\u200b", "\ufeffword", "word\u200e", "a" * 65]
SURROGATES = ["\\ud800", "\\udfff", "a\\udc00b", "\\ud800\\ud800", "\\udbff"]
BAD_INTEGERS = ["1_0", "\uff15", "\u0665", " 5", "+5", "5 ", "1e1", "0x10", "1.0", "05", "", "-", "NaN"]
BAD_INTEGERS += ["Infinity", "null", "true", "\U0001d7d3", "5\u200b", "5\x00", "9" * 30, "1" * 5000]
BAD_BOOLEANS = ["True", "TRUE", "1", "0", "yes", "on", " true", "false ", "", "null", "t"]


# Long value lists go in full to these operations and fields, and are shared out among the
# others, which keeps the corpus at a few seconds.
PRIMARY_OPERATIONS = {"createCard", "listCards", "getCard"}
PRIMARY_FIELDS = {("createCard", "tags"), ("createFolder", "name")}
T = TypeVar("T")


def share(values: list[T], key: str, stride: int) -> list[T]:
    """Every stride-th value, from an offset the key picks: the fields or operations of one rule
    share the list out instead of each sending all of it."""
    return values[zlib.crc32(key.encode()) % stride :: stride]


@functools.cache
def blob(name: str) -> bytes:
    """A large body, made once and shared by the cases that send it."""
    makers: dict[str, Callable[[], bytes]] = {
        "spaces-4MiB+1": lambda: b" " * (MAX_BODY + 1),
        "spaces-4MiB": lambda: b" " * MAX_BODY,
        "spaces-5MiB": lambda: b" " * (5 * 1024 * 1024),
        "text-4MiB+1": lambda: b"x" * (MAX_BODY + 1),
        "json-4MiB+1": lambda: b'{"content": "' + b"x" * MAX_BODY + b'"}',
        "array-100k": lambda: dump(list(range(100_000))),
    }
    return makers[name]()


@dataclasses.dataclass(frozen=True)
class Operation:
    """An operation of the spec, as far as the corpus needs it."""

    id: str
    method: str
    path: str
    query: dict[str, dict[str, Any]]
    body: dict[str, Any] | None
    secured: bool
    headers: frozenset[str] = frozenset()

    @property
    def id_param(self) -> str | None:
        """The path's id parameter, if it has one."""
        return next((name for name in ID_KINDS if "{" + name + "}" in self.path), None)


@dataclasses.dataclass(frozen=True)
class Case:
    """One malformed request and the error it must answer. Placeholders such as ``{cardId}`` in
    the path, query, headers and body stand for the world's values, filled in when it is sent."""

    id: str
    operation: str
    method: str
    path: str
    status: int
    code: str
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    auth: bool = True
    chunked: bool = False


def _resolve(node: Any) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = SPEC
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolve(target)
        return {key: _resolve(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value) for value in node]
    return node


def operations() -> list[Operation]:
    """Every operation of the spec, with its query parameters and body schema resolved."""
    found = []
    for template, item in SPEC["paths"].items():
        for method, spec in item.items():
            if method not in HTTP_METHODS:
                continue
            params = [_resolve(p) for p in item.get("parameters", []) + spec.get("parameters", [])]
            body = spec.get("requestBody")
            found.append(
                Operation(
                    id=spec["operationId"],
                    method=method.upper(),
                    path="/v1" + template,
                    query={p["name"]: p["schema"] for p in params if p["in"] == "query"},
                    body=_resolve(body["content"]["application/json"]["schema"]) if body else None,
                    secured=spec.get("security", SPEC["security"]) != [],
                    headers=frozenset(p["name"] for p in params if p["in"] == "header"),
                )
            )
    return found


def dump(value: Any) -> bytes:
    return json.dumps(value).encode()


class Builder:
    """Collects the cases of one operation."""

    def __init__(self, op: Operation) -> None:
        self.op = op
        self.cases: list[Case] = []
        self.valid = dump(VALID_BODIES[op.id]) if op.body else None

    def share(self, values: list[T], rule: str, stride: int = 2) -> list[T]:
        """All the values for a primary operation, a share of them for the others."""
        return values if self.op.id in PRIMARY_OPERATIONS else share(values, self.op.id + rule, stride)

    def add(self, label: str, expected: tuple[int, str], **fields: Any) -> None:
        if self.op.body and "body" not in fields:
            fields["body"] = self.valid
            fields["headers"] = JSON_TYPE + fields.get("headers", ())
        fields.setdefault("method", self.op.method)
        fields.setdefault("path", self.op.path)
        self.cases.append(
            Case(f"{self.op.id}:{label}", self.op.id, status=expected[0], code=expected[1], **fields)
        )

    def body(self, label: str, expected: tuple[int, str], raw: bytes, **fields: Any) -> None:
        headers = fields.pop("headers", JSON_TYPE)
        self.add(label, expected, body=raw, headers=headers, **fields)


def request_head_cases(b: Builder) -> None:
    """Credentials, oversized and ambiguous heads, for every operation."""
    if b.op.secured:
        b.add("auth:missing", (401, "UNAUTHORIZED"), auth=False)
        unauthorized, invalid_key = (401, "UNAUTHORIZED"), (401, "INVALID_API_KEY")
        credentials = [
            ("basic", "Basic dXNlcjpwYXNz", unauthorized),
            ("bare-scheme", "Bearer", unauthorized),
            ("no-scheme", "{key}", unauthorized),
            ("unknown-key", "Bearer cvk_" + "a" * 36, invalid_key),
            ("checksum", "Bearer {badKey}", invalid_key),
            ("key-plus-one", "Bearer {key}x", invalid_key),
            ("long", "Bearer " + "x" * 5000, invalid_key),
            ("sql", "Bearer ' OR 1=1 --", invalid_key),
            ("wildcard", "Bearer cvk_%", invalid_key),
        ]
        for label, value, expected in b.share(credentials, "auth", 3):
            b.add(f"auth:{label}", expected, auth=False, headers=(("Authorization", value),))
    for label, second in [("bad", "Bearer x"), ("same", "Bearer {key}"), ("empty", "")]:
        b.add(f"auth:two-headers-{label}", BAD, headers=(("Authorization", second),))
    both = (("Authorization", "Bearer nope"), ("Authorization", "Bearer {key}"))
    b.add("auth:two-headers-bad-first", BAD, auth=False, headers=both)
    b.add("head:one-big-header", (431, "HEADERS_TOO_LARGE"), headers=(("X-Pad", "a" * 16_500),))
    many = tuple((f"X-Pad-{i}", "b" * 100) for i in range(200))
    b.add("head:many-headers", (431, "HEADERS_TOO_LARGE"), headers=many)
    huge = (("Authorization", "Bearer " + "k" * 17_000),)
    b.add("head:huge-authorization", (431, "HEADERS_TOO_LARGE"), auth=False, headers=huge)
    if "Idempotency-Key" in b.op.headers:
        keys = [("too-long", "k" * 256), ("empty", ""), ("control", "a\x7fb"), ("tab", "a\tb")]
        for label, value in keys:
            b.add(f"idempotency:{label}", BAD, headers=(("Idempotency-Key", value),))
        two = (("Idempotency-Key", "one"), ("Idempotency-Key", "two"))
        b.add("idempotency:two-headers", BAD, headers=two)
    conditional_cases(b)
    # The client drops Content-Length beside Transfer-Encoding unless both are set by hand.
    framing = (*JSON_TYPE, ("Content-Length", "{length}"), ("Transfer-Encoding", "chunked"))
    b.body("head:length-and-chunked", BAD, b.valid or b"{}", headers=framing)


# Malformed If-Match values (docs/conditional-requests.md) name no version: each fails (412,
# nothing changed); over the bounds (2048 bytes, 32 entity tags), either header answers 400.
MALFORMED_CONDITIONS = [
    ("empty", ""),
    ("garbage", "garbage"),
    ("unquoted", "17"),
    ("unclosed", '"17'),
    ("weak-unquoted", "W/17"),
    ("no-comma", '"1" "2"'),
    ("star-in-list", '*, "1"'),
    ("commas-only", ", ,"),
    ("space-inside", '"a b"'),
    ("stale", '"999999"'),
    ("weak", 'W/"1"'),
    ("stale-list", '"0", "999999"'),
]
OVERSIZED_CONDITIONS = [
    ("too-many", ", ".join(f'"{n}"' for n in range(40))),
    ("too-long", '"' + "a" * 3000 + '"'),
    ("huge-list", ", ".join(['"1"'] * 1000)),
]


def conditional_cases(b: Builder) -> None:
    """Oversized If-Match and If-None-Match values where an operation declares them (400), and
    malformed, stale or weak If-Match values (412, nothing changed)."""
    for header in ("If-Match", "If-None-Match"):
        if header not in b.op.headers:
            continue
        for label, value in OVERSIZED_CONDITIONS:
            b.add(f"{header.lower()}:{label}", BAD, headers=((header, value),))
    if "If-Match" in b.op.headers:
        failed = (412, "PRECONDITION_FAILED")
        for label, value in b.share(MALFORMED_CONDITIONS, "If-Match", 2):
            b.add(f"if-match:{label}", failed, headers=(("If-Match", value),))
        b.add("if-match:one-bad-line", failed, headers=(("If-Match", '"1"'), ("If-Match", "bad")))


NON_JSON_TYPES = [
    "text/plain",
    "text/json",
    "text/html; charset=utf-8",
    "application/xml",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/octet-stream",
    "application/jsonx",
    "application/json5",
    "application/ json",
    "json",
    "*/*",
    "application/*",
    "image/png",
    "application/json; charset=latin-1",
    "application/json; charset=utf-16",
    'application/json;charset="iso-8859-1"',
    "APPLICATION/JSON; CHARSET=UTF-16LE",
    "application/json; charset=us-ascii",
]
ODD_CASED_JSON = [
    "APPLICATION/JSON",
    "Application/Json; charset=UTF-8",
    "application/json;CHARSET=utf-8",
    'application/JSON ; charset="utf-8"',
    "aPpLiCaTiOn/jSoN",
    "application/json; charset=UTF8",
]


def body_framing_cases(b: Builder) -> None:
    """Media types and sizes, for every operation (also those that take no body)."""
    # An invalid body: a media type wrongly accepted shows as a 400, never as a change.
    invalid = dump({**VALID_BODIES.get(b.op.id, {}), "zzUnknown": 1})
    for media_type in b.share(NON_JSON_TYPES, "media", 2 if b.op.body else 4):
        b.body(f"media:{media_type}", UNSUPPORTED, invalid, headers=(("Content-Type", media_type),))
    b.body("media:empty-type", UNSUPPORTED, invalid, headers=(("Content-Type", ""),))
    b.body("media:no-type", UNSUPPORTED, invalid, headers=())
    form = (("Content-Type", "application/x-www-form-urlencoded"),)
    b.body("media:form-body", UNSUPPORTED, b"content=x&tags=a", headers=form)
    b.body("size:4MiB+1-spaces", TOO_LARGE, blob("spaces-4MiB+1"))
    # Not JSON and too large: the media type is refused first.
    b.body("size:4MiB+1-as-text", UNSUPPORTED, blob("text-4MiB+1"), headers=(("Content-Type", "text/plain"),))
    if b.op.body:
        b.body("size:4MiB+1-json", TOO_LARGE, blob("json-4MiB+1"))
        b.body("size:chunked-5MiB", TOO_LARGE, blob("spaces-5MiB"), chunked=True)
        b.body("size:exactly-4MiB-of-spaces", BAD, blob("spaces-4MiB"))
        for media_type in ODD_CASED_JSON:
            b.body(f"media-cased:{media_type}", BAD, invalid, headers=(("Content-Type", media_type),))


UNKNOWN_QUERIES = [
    "zz=1",
    "zz",
    "zz=",
    "zz=1&zz=2",
    "limit%5B%5D=1",
    "%00=1",
    "a%00b=1",
    "__proto__=1",
    "callback=alert(1)",
    "LIMIT=1",
    "Q=x",
    "page=2&offset=0",
    "x" * 2000 + "=1",
]


def _templated_siblings(path: str) -> list[str]:
    """The spec's paths beside ``path`` whose last segment is an id (/exports/{exportId} beside
    /exports/latest)."""
    parent = path.removeprefix("/v1").rsplit("/", 1)[0]
    return [p for p in SPEC["paths"] if p.startswith(parent + "/{") and p.count("/") == parent.count("/") + 1]


def path_cases(b: Builder) -> None:
    """Unknown and near-miss paths, for every operation; tricks with its id, if it has one."""
    op = b.op
    b.add("path:trailing-slash", NOT_FOUND, path=op.path + "/", headers=(("Host", "evil.example"),))
    b.add("path:encoded-trailing-slash", NOT_FOUND, path=op.path + "%2F")
    b.add("path:upper-version", NOT_FOUND, path=op.path.replace("/v1/", "/V1/"))
    unversioned = op.path.removeprefix("/v1")
    pages = [route for route in WEB_ROUTES if route.path_regex.fullmatch(unversioned)]
    if not pages:
        b.add("path:no-version", NOT_FOUND, path=unversioned)
    elif not any(op.method.upper() in (route.methods or ()) for route in pages):
        # /cards/{cardId} is the card page (its own tests): other methods are refused there.
        b.add("path:no-version", (405, "METHOD_NOT_ALLOWED"), path=unversioned)
    b.add("path:v2", NOT_FOUND, path=op.path.replace("/v1/", "/v2/"))
    b.add("path:double-slash", NOT_FOUND, path=op.path.replace("/v1/", "/v1//"))
    segments = op.path.split("/")
    b.add("path:upper-case", NOT_FOUND, path="/".join([*segments[:2], segments[2].upper(), *segments[3:]]))
    if not op.path.endswith("}"):
        # Beside a templated sibling (/exports/latest, /exports/{exportId}) the near-miss is
        # that operation's malformed id.
        # Where the sibling has no such method (POST /cards/bulk beside /cards/{cardId}), 405.
        siblings = _templated_siblings(op.path)
        near_miss = NOT_FOUND if not siblings else BAD
        if siblings and not any(op.method.lower() in SPEC["paths"][p] for p in siblings):
            near_miss = (405, "METHOD_NOT_ALLOWED")
        b.add("path:suffix", near_miss, path=op.path + ".json")
        b.add("path:matrix", near_miss, path=op.path + ";x=1")
    for query in b.share(UNKNOWN_QUERIES, "unknown-query", 3):
        b.add(f"query:unknown:{query[:40]}", BAD, query=query)
    if op.id in PRIMARY_OPERATIONS:  # Connexion reads n distinct names in O(n^2): kept small here
        b.add("query:unknown:2000-names", BAD, query="&".join(f"p{i}=1" for i in range(2000)))
    param = op.id_param
    if param is None:
        return
    slot = "{" + param + "}"
    kind = ID_KINDS[param]

    def at(value: str) -> str:
        return op.path.replace(slot, value)

    malformed = [
        ("too-long", "x" * 65),
        ("space", "bad%20id"),
        ("nul", "%00"),
        ("inner-nul", "a%00b"),
        ("non-ascii", "%C3%A9"),
        ("invalid-utf8", "%FF"),
        ("semicolon", "a;b"),
        ("comma", "a,b"),
        ("plus", "a+b"),
        ("star", "*"),
        ("percent", "%25"),
        ("quote", "%27"),
        ("sql", "1'%20OR%20'1'='1"),
        ("backslash", "a%5Cb"),
        ("dots-encoded", "%2E%2E"),
        ("trailing-space", slot + "%20"),
        ("leading-space", "%20" + slot),
        ("trailing-nul", slot + "%00"),
        ("zero-width", slot + "%E2%80%8B"),
        ("fullwidth", "%EF%BC%A1"),
    ]
    for label, value in b.share(malformed, "path-id"):
        b.add(f"path-id:{label}", BAD, path=at(value))
    for label, value in [
        ("missing", "crd_missing"),
        ("dash", "-"),
        ("underscore", "_"),
        ("like-wildcards", "{" + kind.lower() + "Underscores}"),
        ("upper-cased", "{" + kind.lower() + "Upper}"),
        ("longest", "a" * 64),
        ("digits", "9" * 64),
        ("another-account", "{foreign" + kind + "}"),
        ("other-kind", "{operationId}" if param != "operationId" else "{cardId}"),
    ]:
        b.add(f"path-id:{label}", NOT_FOUND, path=at(value))
    b.add("path-id:encoded-slash", NOT_FOUND, path=at("a%2Fb"))
    # A segment holding a line feed matches no route at all.
    b.add("path-id:trailing-newline", NOT_FOUND, path=at(slot + "%0A"))
    b.add("path-id:empty", NOT_FOUND, path=at(""))
    b.add("path-id:foreign-key", NOT_FOUND, auth=False, headers=(("Authorization", "Bearer {foreignKey}"),))


def _query_values(
    b: Builder, name: str, schema: dict[str, Any]
) -> Iterator[tuple[str, str, tuple[int, str]]]:
    kind = schema.get("type")
    if kind == "integer":
        for raw in b.share(BAD_INTEGERS, name, 3):
            yield f"form:{raw[:20]!r}", raw, BAD
        if "minimum" in schema:
            yield "below-minimum", str(schema["minimum"] - 1), BAD
        if "maximum" in schema:
            yield "above-maximum", str(schema["maximum"] + 1), BAD
    elif kind == "boolean":
        for raw in BAD_BOOLEANS:
            yield f"form:{raw!r}", raw, BAD
    elif "enum" in schema:
        first = schema["enum"][0]
        for raw in [first.upper(), first.title(), f" {first}", f"{first} ", f"{first},{first}", "", "%"]:
            yield f"enum:{raw!r}", raw, BAD
    else:
        code = BAD_TAG if schema.get("x-error-code") == "INVALID_TAG" else BAD
        yield "nul", "a\x00b", code
        if "maxLength" in schema:
            yield "over-max-length", "a" * (schema["maxLength"] + 1), code
            yield "30k", "a" * 30_000, code  # the client refuses URLs over 64 KiB
        if "pattern" in schema and name != "q" and code != BAD_TAG:  # a tag is trimmed
            yield "trailing-newline", "abc\n", code
            yield "control", "a\x07b", code
        if name in ("cursor", "include", "folder"):
            for raw in ["", "a b", "!", "%", "a/b", "ab==", "\u00e9", "\ufffd", "' OR 1=1 --"]:
                yield f"pattern:{raw!r}", raw, BAD
        if name == "include":
            for raw in [
                "content,",
                ",content",
                "CONTENT",
                "content,nope",
                "content;metadata",
                "TOTAL",
                "totals",
            ]:
                yield f"pattern:{raw!r}", raw, BAD
        if code == BAD_TAG:
            for raw in [*INVISIBLE, *CONTROL, *TAG_ONLY]:
                yield f"tag:{raw!r}", raw, BAD_TAG
    if name not in ("q", "tag"):  # there U+FFFD, which %FF decodes to, is a fine value
        yield "non-utf8", "%FF", BAD


def _sample(name: str, schema: dict[str, Any]) -> str:
    """A value the parameter accepts."""
    if "enum" in schema:
        return str(schema["enum"][0])
    if schema.get("type") == "integer":
        return str(max(schema.get("minimum", 1), 1))
    if schema.get("type") == "boolean":
        return "true"
    return {"include": "content"}.get(name, "a")


def query_cases(b: Builder) -> None:
    """Odd values, repeats and near-miss names of each query parameter."""
    for name, schema in b.op.query.items():
        # A repeatable filter (type, tag, folder) takes each value as its items' schema says.
        one = schema["items"] if schema.get("type") == "array" and name != "include" else schema
        for label, raw, expected in _query_values(b, name, one):
            encoded = raw if raw == "%FF" else quote(raw, safe="")
            b.add(f"query:{name}:{label}", expected, query=f"{name}={encoded}")
        sample = _sample(name, schema)
        if schema.get("type") != "array":  # a list parameter may repeat
            b.add(f"query:{name}:repeated-same", BAD, query=f"{name}={sample}&{name}={sample}")
        empty = BAD_TAG if one.get("x-error-code") == "INVALID_TAG" else BAD
        b.add(f"query:{name}:repeated-empty", empty, query=f"{name}=&{name}=")
        if one is not schema:  # more values than it takes
            b.add(f"query:{name}:over-20-values", BAD, query="&".join([f"{name}={sample}"] * 21))
    if b.op.query:
        b.add("query:all-repeated", BAD, query="&".join(f"{n}=1&{n}=2" for n in b.op.query))


def _wrong_types(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    kind = schema.get("type")
    values: list[tuple[str, Any]] = []
    if kind != "string":
        values += [("string", "1"), ("empty-string", "")]
    if kind not in ("integer",):
        values += [("integer", 1), ("float", 1.5), ("zero", 0)]
    if kind != "boolean":
        values.append(("boolean", True))
    if kind != "array":
        values += [("array", ["x"]), ("empty-array", [])]
    values += [("object", {"a": 1}), ("empty-object", {})]
    # Nullable: `nullable` beside `type`, or a reference given as `oneOf: [Type, NullValue]`.
    if not any(_resolve(option).get("nullable") for option in [schema, *schema.get("oneOf", [])]):
        values.append(("null", None))
    return values


def _item_code(schema: dict[str, Any]) -> tuple[int, str]:
    return BAD_TAG if schema.get("x-error-code") == "INVALID_TAG" else BAD


def field_cases(b: Builder, name: str, schema: dict[str, Any]) -> None:
    """Wrong types, odd numbers, NUL, surrogates, invisible and oversized values of one field."""
    base = {k: v for k, v in VALID_BODIES[b.op.id].items() if k != name}
    items = schema.get("items") if schema.get("type") == "array" else None
    leaf = items or schema

    def put(label: str, expected: tuple[int, str], value: Any) -> None:
        b.body(f"field:{name}:{label}", expected, dump({**base, name: [value] if items else value}))

    def put_raw(label: str, expected: tuple[int, str], raw: str) -> None:
        prefix = dump(base)[:-1] + (b", " if base else b"")
        wrapped = f"[{raw}]" if items else raw
        b.body(f"field:{name}:{label}", expected, prefix + f'"{name}": {wrapped}'.encode() + b"}")

    for label, value in b.share(_wrong_types(schema), "type" + name):
        b.body(f"field:{name}:type-{label}", _item_code(schema), dump({**base, name: value}))
    if items:
        for label, value in b.share(_wrong_types(items), "item-type" + name):
            put(f"item-type-{label}", _item_code(items), value)
        bound = schema.get("maxItems", 100)
        b.body(f"field:{name}:over-max-items", BAD, dump({**base, name: ["x"] * (bound + 1)}))
        b.body(f"field:{name}:100k-items", BAD, dump({**base, name: [f"i{i}" for i in range(100_000)]}))
        b.body(f"field:{name}:100k-numbers", BAD, dump({**base, name: list(range(100_000))}))
    if leaf.get("type") == "integer":
        for raw in ["1.0", "1e3", "1E400", "-1", "1e-400", "1099511627777", "10" * 20, "1" + "0" * 5000]:
            put_raw(f"number:{raw[:20]}", BAD, raw)
        for raw in ["0x10", "+1", "01", ".5", "1.", "-", "NaN", "Infinity", "-Infinity"]:
            put_raw(f"not-json-number:{raw}", BAD, raw)
    if leaf.get("type") == "boolean":
        for raw in ["1", "0", "1.0", '"true"', '"false"', "True", "tru", "nul"]:
            put_raw(f"not-boolean:{raw}", BAD, raw)
    if leaf.get("type") != "string":
        return
    code = _item_code(leaf)
    for label, value in [("nul", "a\u0000b"), ("only-nul", "\u0000")]:
        put(label, code, value)
    for raw in SURROGATES:
        put_raw(f"surrogate:{raw}", BAD, f'"{raw}"')
    put_raw("raw-control-char", BAD, '"a\x01b"')
    put_raw("bad-escape", BAD, '"\\x41"')
    put_raw("short-escape", BAD, '"\\u12"')
    if "enum" in leaf:
        first = next(v for v in leaf["enum"] if v is not None)
        for value in [first.upper(), first.title(), f" {first}", f"{first} ", "", "%", first + "\u200b"]:
            put(f"enum:{value!r}", BAD, value)
    if "maxLength" in leaf:
        put("over-max-length", code, "a" * (leaf["maxLength"] + 1))
        put("1MiB", code, "a" * 1024 * 1024)
    elif name == "content":
        put("over-512KiB", TOO_LARGE, "x" * 524_289)
        put("over-512KiB-of-utf8", TOO_LARGE, "\u00e9" * 262_145)
        put("3MiB", TOO_LARGE, "x" * 3 * 1024 * 1024)
    if code == BAD_TAG or name == "name":
        extra = TAG_ONLY if code == BAD_TAG else []
        # An empty string is refused unless the field may be empty (an API key's name).
        values = [v for v in [*INVISIBLE, *CONTROL, *extra] if v or leaf.get("minLength") != 0]
        for value in values if (b.op.id, name) in PRIMARY_FIELDS else share(values, b.op.id + name, 4):
            put(f"invisible:{value!r}", code, value)
    if name in ("url",):
        for value in ["javascript:alert(1)", "https://", "https://a b", "ftp://x", "//x", "https://x\n", "x"]:
            put(f"not-a-url:{value!r}", BAD, value)
    if name == "mimeType":
        for value in ["text", "text/", "/plain", "text/plain; charset=x", "text/plain\n"]:
            put(f"not-a-type:{value!r}", BAD, value)
    if name == "fileName":
        put("control", BAD, "a\u0007.txt")


BAD_JSON = [
    b"{",
    b"}",
    b"{'a': 1}",
    b'{"a": 1,}',
    b'{"a" 1}',
    b'{"a": 1}x',
    b"{} {}",
    b"[]",
    b'"text"',
    b"null",
    b"1",
    b"true",
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b'{"a": -Infinity}',
    b"\xef\xbb\xbf{}",
    b"/* c */ {}",
    b"{} // c",
    b'{"a": undefined}',
    b"{a: 1}",
    b"",
    b"   ",
    b"\x00",
    b"{\x00}",
    b"[" * 100_000,
    b'{"a": "unterminated',
]
NOT_UTF8 = [
    b'{"zz": "\xff"}',
    b'{"zz": "caf\xe9"}',
    b"\xff\xfe{\x00}\x00",
    b"\xfe\xff\x00{\x00}",
    b'{"zz": "\xc0\xaf"}',
    b'{"zz": "\xed\xa0\x80"}',
    b'{"zz": "\xf4\x90\x80\x80"}',
    b'{"zz": "\xe2\x82"}',
    b"\x80",
]


def body_cases(b: Builder) -> None:
    """Malformed JSON, nesting, sizes and every field's bad values, for each operation with a body."""
    schema = b.op.body
    assert schema is not None
    props: dict[str, Any] = schema.get("properties", {})
    first = next(iter(props))
    for i, raw in enumerate(b.share(BAD_JSON, "json")):
        b.body(f"json:{i}:{raw[:12]!r}", BAD, raw)
    for i, raw in enumerate(b.share(NOT_UTF8, "utf8")):
        b.body(f"utf8:{i}:{raw[:12]!r}", BAD, raw)
    if schema.get("required"):
        b.body("required:none", BAD, b"{}")
        for name in schema["required"]:
            rest = {k: v for k, v in VALID_BODIES[b.op.id].items() if k != name}
            b.body(f"required:{name}", BAD, dump(rest))
    valid = VALID_BODIES[b.op.id]
    for label, extra in [
        ("zz", {"zz": 1}),
        ("proto", {"__proto__": {"isAdmin": True}}),
        ("constructor", {"constructor": {"prototype": {}}}),
        ("empty-name", {"": 1}),
        ("id", {"id": "crd_x"}),
        ("account", {"accountId": "acc_x"}),
        ("cased", {first.upper(): valid.get(first, "x")}),
        ("padded", {first + " ": valid.get(first, "x")}),
        ("zero-width", {first + "\u200b": valid.get(first, "x")}),
        ("surrogate-name", None),
        ("1MiB-name", {"k" * 1024 * (1024 if b.op.id in PRIMARY_OPERATIONS else 1): 1}),
        ("many-names", {f"k{i}": i for i in range(100_000 if b.op.id == "createCard" else 1000)}),
    ]:
        if extra is None:
            b.body(f"unknown-field:{label}", BAD, dump(valid)[:-1] + b', "\\ud800": 1}')
        else:
            b.body(f"unknown-field:{label}", BAD, dump({**valid, **extra}))
    last_invalid = dump(valid)[:-1] + f', "{first}": 12345}}'.encode()
    b.body("duplicate-key:last-invalid", BAD, last_invalid)  # a repeated name is refused outright
    b.body("duplicate-key:unknown", BAD, dump(valid)[:-1] + b', "zz": 1, "zz": 2}')
    for depth in (33, 50, 500, 5000):
        nested = b"[" * depth + b"]" * depth
        b.body(f"nesting:arrays-{depth}", BAD, dump(valid)[:-1] + b', "zz": ' + nested + b"}")
        b.body(f"nesting:in-{first}-{depth}", BAD, f'{{"{first}": '.encode() + nested + b"}")
    for depth in (50, 5000):
        nested = b'{"a": ' * depth + b"1" + b"}" * depth
        b.body(f"nesting:objects-{depth}", BAD, nested)
    b.body("nesting:top-level-arrays-50", BAD, b"[" * 50 + b"]" * 50)
    b.body("size:top-level-100k-array", BAD, blob("array-100k"))
    for name, field_schema in props.items():
        field_cases(b, name, field_schema)


# Webhook URLs that reach inside, or hide where they lead, in the forms a check can miss.
HOSTILE_WEBHOOK_URLS = [
    ("localhost", "https://localhost/x"),
    ("unspecified", "https://0.0.0.0/x"),
    ("unspecified-v6", "https://[::]/x"),
    ("mapped-metadata", "https://[::ffff:169.254.169.254]/x"),
    ("nat64-metadata", "https://[64:ff9b::a9fe:a9fe]/x"),
    ("6to4-metadata", "https://[2002:a9fe:a9fe::]/x"),
    ("shared-space", "https://100.64.0.1/x"),
    ("link-local-zone", "https://[fe80::1%25eth0]/x"),
    ("userinfo", "https://user:pw@hooks.example.com/x"),
    ("backslash-userinfo", "https://hooks.example.com\\@10.0.0.1/x"),
    ("port-not-allowed", "https://hooks.example.com:8443/x"),
    ("port-out-of-range", "https://hooks.example.com:99999/x"),
    ("non-ascii-host", "https://h\u00f6\u00f6ks.example.com/x"),
    ("space", "https://hooks.example.com/a b"),
    ("over-2048", "https://hooks.example.com/" + "a" * 2048),
]


def domain_cases(b: Builder) -> None:
    """Requests that pass the schema and are refused by the domain, changing nothing."""
    op = b.op
    card_path = op.path.replace("{cardId}", "{trashed}")
    refusals: dict[str, list[tuple[str, tuple[int, str], dict[str, Any]]]] = {
        "createCard": [
            (
                "upload-not-found",
                (404, "UPLOAD_NOT_FOUND"),
                {"body": dump({"fileKey": "up_1", "fileName": "a"})},
            ),
            ("upload-wildcard", (404, "UPLOAD_NOT_FOUND"), {"body": dump({"fileKey": "%"})}),
            (
                "upload-path",
                (404, "UPLOAD_NOT_FOUND"),
                {"body": dump({"fileKey": "../../secret_key", "fileEtag": "x"})},
            ),
            (
                "file-required",
                (400, "FILE_REQUIRED"),
                {"body": dump({"cardType": "image", "fileName": "a.png"})},
            ),
            ("bad-tag-among-good", BAD_TAG, {"body": dump({"content": "x", "tags": ["ok", "\u200b"]})}),
            (
                "read-only-key",
                (403, "INSUFFICIENT_SCOPE"),
                {"body": dump(VALID_BODIES["createCard"]), "auth": False, "headers": as_key("readKey")},
            ),
            (
                "card-limit",
                (409, "CARD_LIMIT_REACHED"),
                {"body": dump(VALID_BODIES["createCard"]), **AT_THE_CAPS},
            ),
        ],
        "bulkCards": [
            (
                "over-100-items",
                BAD,
                {"body": dump({"operation": "create", "items": [{"content": "x"}] * 101})},
            ),
            ("file-key-item", BAD, {"body": dump({"operation": "create", "items": [{"fileKey": "up_1"}]})}),
            ("unknown-operation", BAD, {"body": dump({"operation": "purge", "items": [{"cardId": "x"}]})}),
            *(
                (
                    f"item-if-match:{label}",
                    BAD,
                    {
                        "body": dump(
                            {"operation": "trash", "items": [{"cardId": "{cardId}", "ifMatch": value}]}
                        )
                    },
                )
                for label, value in OVERSIZED_CONDITIONS
            ),
            (
                "read-only-key",
                (403, "INSUFFICIENT_SCOPE"),
                {"body": dump(VALID_BODIES["bulkCards"]), "auth": False, "headers": as_key("readKey")},
            ),
        ],
        "createUpload": [
            (
                "too-large",
                (413, "FILE_TOO_LARGE"),
                {"body": dump({**VALID_BODIES["createUpload"], "fileSize": 100_000_000})},
            ),
            (
                "svg",
                (400, "UNSUPPORTED_TYPE"),
                {"body": dump({**VALID_BODIES["createUpload"], "mimeType": "image/svg+xml"})},
            ),
            ("empty", BAD, {"body": dump({**VALID_BODIES["createUpload"], "fileSize": 0})}),
        ],
        "createCardThumbnailUpload": [
            ("not-a-link", (400, "TYPE_MISMATCH"), {"body": dump(VALID_BODIES["createCardThumbnailUpload"])}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "replaceCardThumbnail": [
            ("not-a-link", (400, "TYPE_MISMATCH"), {"body": dump(VALID_BODIES["replaceCardThumbnail"])}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "resetCardThumbnail": [
            ("not-a-link", (400, "TYPE_MISMATCH"), {}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "createCardCaptionsUpload": [
            ("not-audio", (400, "TYPE_MISMATCH"), {"body": dump(VALID_BODIES["createCardCaptionsUpload"])}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "replaceCardCaptions": [
            ("not-audio", (400, "TYPE_MISMATCH"), {"body": dump(VALID_BODIES["replaceCardCaptions"])}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "deleteCardCaptions": [
            ("not-audio", (400, "TYPE_MISMATCH"), {}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "updateCard": [
            ("bad-tag-among-good", BAD_TAG, {"body": dump({"tags": ["ok", " "]})}),
            ("content-too-large", TOO_LARGE, {"body": dump({"content": "y" * 524_289, "notes": "n"})}),
        ],
        "deleteCard": [("not-in-trash", (409, "CARD_NOT_IN_TRASH"), {})],
        "markCardDone": [
            ("not-a-link", (400, "TYPE_MISMATCH"), {}),
            ("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path}),
        ],
        "refreshCard": [("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path})],
        "archiveCard": [("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path})],
        "unarchiveCard": [("in-trash", (409, "CARD_IN_TRASH"), {"path": card_path})],
        "renameTag": [
            ("to-existing", (409, "TAG_EXISTS"), {"body": dump({"from": "alpha", "to": "BETA"})}),
            ("missing", NOT_FOUND, {"body": dump({"from": "nope", "to": "x"})}),
            ("like-underscore", NOT_FOUND, {"body": dump({"from": "alph_", "to": "x"})}),
            ("like-percent", NOT_FOUND, {"body": dump({"from": "al%", "to": "x"})}),
            ("sql", NOT_FOUND, {"body": dump({"from": "' OR 1=1 --", "to": "x"})}),
            ("foreign-tag", NOT_FOUND, {"body": dump({"from": "foreign", "to": "x"})}),
        ],
        "mergeTag": [
            ("missing", NOT_FOUND, {"body": dump({"from": "nope", "into": "beta"})}),
            ("like-underscore", NOT_FOUND, {"body": dump({"from": "_lpha", "into": "beta"})}),
            ("like-percent", NOT_FOUND, {"body": dump({"from": "%", "into": "beta"})}),
        ],
        "deleteTag": [
            ("missing", NOT_FOUND, {"body": dump({"tag": "nope"})}),
            ("like-percent", NOT_FOUND, {"body": dump({"tag": "%"})}),
            ("like-underscore", NOT_FOUND, {"body": dump({"tag": "_____"})}),
            ("fts-star", NOT_FOUND, {"body": dump({"tag": "alp*"})}),
        ],
        "createFolder": [
            ("exists-other-case", (409, "FOLDER_EXISTS"), {"body": dump({"name": "INBOX"})}),
            ("exists-padded", (409, "FOLDER_EXISTS"), {"body": dump({"name": "  Inbox  "})}),
            (
                "folder-limit",
                (409, "FOLDER_LIMIT_REACHED"),
                {"body": dump({"name": "One more"}), **AT_THE_CAPS},
            ),
        ],
        "updateFolder": [("to-other-name", (409, "FOLDER_EXISTS"), {"body": dump({"name": "second"})})],
        "createShare": [
            ("foreign-card", NOT_FOUND, {"body": dump({"cardId": "{foreignCard}"})}),
            ("foreign-folder", NOT_FOUND, {"body": dump({"folderId": "{foreignFolder}"})}),
            ("trashed-card", (409, "CARD_IN_TRASH"), {"body": dump({"cardId": "{trashed}"})}),
            ("card-and-folder", BAD, {"body": dump({"cardId": "{cardId}", "folderId": "{folderId}"})}),
            ("neither", BAD, {"body": dump({"title": "x"})}),
            ("expired", BAD, {"body": dump({"cardId": "{cardId}", "expiresAt": 1})}),
        ],
        "updateShare": [("expired", BAD, {"body": dump({"expiresAt": 1})})],
        "createSubscription": [
            (
                "foreign-folder",
                NOT_FOUND,
                {"body": dump({"url": "https://a.example/f", "folderId": "{foreignFolder}"})},
            ),
            ("ftp-url", BAD, {"body": dump({"url": "ftp://a.example/f"})}),
            ("no-host", BAD, {"body": dump({"url": "https:///f"})}),
        ],
        "listSubscriptions": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "listShares": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "listCards": [
            ("made-up-cursor", (400, "INVALID_CURSOR"), {"query": "cursor=abc"}),
            ("foreign-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={foreignCursor}"}),
            ("cursor-other-sort", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}&sort=oldest"}),
            ("cursor-other-filter", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}&type=link"}),
            ("keys-only-key", (403, "INSUFFICIENT_SCOPE"), {"auth": False, "headers": as_key("keysOnlyKey")}),
            ("url-port-out-of-range", (400, "INVALID_INPUT"), {"query": "url=https://example.com:99999/a"}),
            ("url-javascript", (400, "INVALID_INPUT"), {"query": "url=javascript:alert(1)"}),
            ("url-data", (400, "INVALID_INPUT"), {"query": "url=data:text/html,x"}),
            ("url-over-2048", (400, "INVALID_INPUT"), {"query": "url=https://example.com/" + "a" * 2030}),
            ("q-type-unknown", (400, "INVALID_QUERY"), {"query": "q=type:banana"}),
            ("q-is-unknown", (400, "INVALID_QUERY"), {"query": "q=alpha%20is:read"}),
            ("q-has-unknown", (400, "INVALID_QUERY"), {"query": "q=-has:everything"}),
            ("q-date-word", (400, "INVALID_QUERY"), {"query": "q=before:soon"}),
            ("q-date-impossible", (400, "INVALID_QUERY"), {"query": "q=after:2025-02-30"}),
            ("q-date-too-far", (400, "INVALID_QUERY"), {"query": "q=after:99999999999999999999"}),
            ("q-site-no-host", (400, "INVALID_QUERY"), {"query": "q=site:%25"}),
            ("q-site-javascript", (400, "INVALID_QUERY"), {"query": "q=site:javascript:alert(1)"}),
            ("q-17-qualifiers", (400, "INVALID_QUERY"), {"query": "q=" + "%20".join(["is:done"] * 17)}),
        ],
        "listTags": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "listImports": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "startImport": [
            ("missing-upload", (404, "UPLOAD_NOT_FOUND"), {"body": dump(VALID_BODIES["startImport"])}),
            ("format-unknown", BAD, {"body": dump({**VALID_BODIES["startImport"], "format": "evernote"})}),
            (
                "duplicates-unknown",
                BAD,
                {"body": dump({**VALID_BODIES["startImport"], "onDuplicate": "drop"})},
            ),
            (
                "foreign-upload-key",
                (404, "UPLOAD_NOT_FOUND"),
                {"body": dump({**VALID_BODIES["startImport"], "fileKey": "{foreignCard}"})},
            ),
        ],
        "cancelImport": [("finished", (409, "IMPORT_FINISHED"), {})],
        "listTrash": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "listFolders": [("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"})],
        "createWebhook": [
            ("loopback-url", BAD, {"body": dump({"url": "https://127.0.0.1/x", "events": ["*"]})}),
            ("metadata-url", BAD, {"body": dump({"url": "https://169.254.169.254/x", "events": ["*"]})}),
            ("plain-http", BAD, {"body": dump({"url": "http://hooks.example.com/x", "events": ["*"]})}),
            (
                "star-and-more",
                BAD,
                {"body": dump({"url": "https://a.example/", "events": ["*", "card.created"]})},
            ),
            ("unknown-event", BAD, {"body": dump({"url": "https://a.example/", "events": ["card.eaten"]})}),
            (
                "star-and-a-named-only-event",
                BAD,
                {"body": dump({"url": "https://a.example/", "events": ["*", "share.created"]})},
            ),
            ("cased-event", BAD, {"body": dump({"url": "https://a.example/", "events": ["Share.Deleted"]})}),
            *(
                (f"url-{label}", BAD, {"body": dump({"url": url, "events": ["*"]})})
                for label, url in HOSTILE_WEBHOOK_URLS
            ),
            (
                "limit",
                (409, "WEBHOOK_LIMIT_REACHED"),
                {"body": dump(VALID_BODIES["createWebhook"]), **AT_THE_CAPS},
            ),
        ],
        "updateWebhook": [
            ("private-url", BAD, {"body": dump({"url": "https://[fd00::1]/x"})}),
            *((f"url-{label}", BAD, {"body": dump({"url": url})}) for label, url in HOSTILE_WEBHOOK_URLS),
        ],
        "retryWebhookDelivery": [
            (
                "foreign-webhook",
                NOT_FOUND,
                {"path": "/v1/webhooks/{foreignWebhook}/deliveries/{deliveryId}/retry"},
            ),
            (
                "missing-delivery",
                NOT_FOUND,
                {"path": "/v1/webhooks/{webhookId}/deliveries/msg_missing/retry"},
            ),
        ],
        "listChanges": [
            ("cards-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={cardsCursor}"}),
            ("foreign-changes-cursor", (400, "INVALID_CURSOR"), {"query": "cursor={foreignChangesCursor}"}),
            ("latest-cased", (400, "INVALID_CURSOR"), {"query": "cursor=LATEST"}),
            ("type-cased", BAD, {"query": "types=Share"}),
            ("type-plural", BAD, {"query": "types=subscriptions"}),
            ("types-nine", BAD, {"query": "&".join(["types=share"] * 9)}),
        ],
        "createApiKey": [
            (
                "scope-not-held",
                (403, "INSUFFICIENT_SCOPE"),
                {"body": dump({"scopes": ["read", "keys"]}), "auth": False, "headers": as_key("keysOnlyKey")},
            ),
            (
                "default-scopes-no-keys",
                (403, "INSUFFICIENT_SCOPE"),
                {"auth": False, "headers": as_key("readKey")},
            ),
        ],
        "revokeApiKey": [
            ("already-revoked", NOT_FOUND, {"path": op.path.replace("{keyId}", "{revokedKeyId}")}),
            ("no-keys-scope", (403, "INSUFFICIENT_SCOPE"), {"auth": False, "headers": as_key("readKey")}),
        ],
        "listApiKeys": [
            ("no-keys-scope", (403, "INSUFFICIENT_SCOPE"), {"auth": False, "headers": as_key("readKey")}),
        ],
    }
    for label, expected, fields in refusals.get(op.id, []):
        if "body" in fields:
            fields = {**fields, "headers": JSON_TYPE + fields.get("headers", ())}
        b.add(f"domain:{label}", expected, **fields)


def as_key(placeholder: str) -> tuple[tuple[str, str], ...]:
    """The Authorization header of another key of the world's account."""
    return (("Authorization", f"Bearer {{{placeholder}}}"),)


def method_cases(op: Operation, first_on_path: bool) -> list[Case]:
    """Methods the path does not have: 405 with the error body (listed under its first operation)."""
    if not first_on_path:
        return []
    # A method a templated sibling has is that operation's (GET /cards/bulk is getCard's "bulk").
    paths = [op.path.removeprefix("/v1"), *_templated_siblings(op.path)]
    allowed = {method.upper() for path in paths for method in SPEC["paths"][path] if method in HTTP_METHODS}
    return [
        Case(f"{op.id}:method:{method}", op.id, method, op.path, 405, "METHOD_NOT_ALLOWED")
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "PROPFIND")
        if method not in allowed
    ]


@functools.cache
def corpus() -> tuple[Case, ...]:
    """Every case, generated per operation of the spec (once: the big bodies are shared)."""
    cases: list[Case] = []
    seen_paths: set[str] = set()
    for op in operations():
        b = Builder(op)
        request_head_cases(b)
        body_framing_cases(b)
        path_cases(b)
        query_cases(b)
        if op.body:
            body_cases(b)
        domain_cases(b)
        cases += b.cases + method_cases(op, op.path not in seen_paths)
        seen_paths.add(op.path)
    return tuple(cases)


def test_the_corpus_covers_every_operation_of_the_spec() -> None:
    cases = corpus()
    per_operation = Counter(case.operation for case in cases)
    assert set(per_operation) == {op.id for op in operations()}
    assert min(per_operation.values()) >= 30, per_operation
    assert set(VALID_BODIES) == {op.id for op in operations() if op.body}
    assert len(cases) >= 300
    assert len({case.id for case in cases}) == len(cases), "case ids are unique"


# --- running it -------------------------------------------------------------------------------


def _hashable(row: Any) -> tuple[Any, ...]:
    """A row as a tuple that can go in a set (JSON columns as their text)."""
    return tuple(
        json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value for value in row
    )


# Bookkeeping a request keeps whether or not it is refused: a key that authenticates records
# when it was last used, to the minute (a corpus that runs past a minute under load sees it move).
UNCOMPARED = {("api_keys", "last_used_at")}


def snapshot(database: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (but the UNCOMPARED columns), sorted, with the full-text index
    read through a query."""
    with database.transaction(write=False) as session:
        tables = {
            table.name: sorted(
                (
                    _hashable(row)
                    for row in session.execute(
                        select(*(c for c in table.columns if (table.name, c.name) not in UNCOMPARED))
                    )
                ),
                key=repr,
            )
            for table in Base.metadata.sorted_tables
        }
        search = (
            "SELECT rowid, headline, body FROM card_search ORDER BY rowid"
            if database.dialect == "sqlite"
            else "SELECT card_pk, part, tag_key, CAST(words AS text) FROM card_search ORDER BY 1, 2, 3"
        )
        tables["card_search"] = [tuple(row) for row in session.execute(text(search))]
    return tables


def wait_for_tag_operation(api: Api, operation_id: str) -> None:
    for _ in range(500):
        if api.get(f"/v1/tags/operations/{operation_id}").json()["status"] != "running":
            return
        time.sleep(0.01)
    raise AssertionError(f"tag operation {operation_id} did not finish")


def wait_for_export(api: Api, export_id: str) -> str:
    for _ in range(1000):
        if api.get(f"/v1/exports/{export_id}").json()["job"]["status"] == "ready":
            return export_id
        time.sleep(0.01)
    raise AssertionError(f"export {export_id} did not finish")


def start_import(api: Api) -> str:
    key, etag = uploaded(
        api, b"title,url,time_added,tags,status\nA,https://example.com/a,1,,unread\n", "p.csv", "text/csv"
    )
    started = api.post("/v1/imports", json={"fileKey": key, "fileEtag": etag})
    assert started.status_code == 202, started.text
    return str(started.json()["job"]["id"])


def wait_for_import(api: Api, import_id: str) -> str:
    for _ in range(1000):
        if api.get(f"/v1/imports/{import_id}").json()["job"]["status"] == "completed":
            return import_id
        time.sleep(0.01)
    raise AssertionError(f"import {import_id} did not finish")


def build_world(make_api: Callable[[], Api], database: Database) -> tuple[Api, dict[str, str]]:
    """One account with a real card, folder and finished tag operation; another account with
    the same, to prove isolation; the values the cases' placeholders stand for."""
    api, other = make_api(), make_api()
    card = api.create(content="corpus card", tags=["alpha", "beta"])["id"]
    card2 = api.create(content="second card")["id"]
    trashed = api.create(content="trashed card")["id"]
    assert api.post(f"/v1/cards/{trashed}/trash").status_code == 200
    folder = api.post("/v1/folders", json={"name": "Inbox", "color": "red"}).json()["id"]
    api.post("/v1/folders", json={"name": "Second"})
    assert api.post(f"/v1/folders/{folder}/cards", json={"cardIds": [card]}).status_code == 200
    api.create(content="renamed card", tags=["gamma"])
    operation = api.post("/v1/tags/rename", json={"from": "gamma", "to": "delta"}).json()["id"]
    foreign_card = other.create(content="foreign card", tags=["foreign"])["id"]
    other.create(content="foreign card 2", tags=["foreign"])
    foreign_folder = other.post("/v1/folders", json={"name": "Foreign"}).json()["id"]
    foreign_operation = other.post("/v1/tags/rename", json={"from": "foreign", "to": "abroad"}).json()["id"]
    wait_for_tag_operation(api, operation)
    wait_for_tag_operation(other, foreign_operation)
    export = wait_for_export(api, api.post("/v1/exports").json()["job"]["id"])
    foreign_export = wait_for_export(other, other.post("/v1/exports").json()["job"]["id"])
    export_worker.expire_exports()  # the ended exports' items go now, not by a sweep mid-corpus
    imported = wait_for_import(api, start_import(api))
    foreign_import = wait_for_import(other, start_import(other))
    # Keys of the account besides the one the corpus runs with (which no case may revoke): one
    # to name in paths, one revoked, and two narrow ones, used once here so that the corpus's
    # requests find their lastUsedAt fresh and change nothing.
    key_id = api.post("/v1/api-keys", json={"name": "spare"}).json()["apiKey"]["id"]
    revoked_key_id = api.post("/v1/api-keys", json={}).json()["apiKey"]["id"]
    assert api.request("DELETE", f"/v1/api-keys/{revoked_key_id}").status_code == 204
    read_key = api.post("/v1/api-keys", json={"scopes": ["read"]}).json()["key"]
    keys_only_key = api.post("/v1/api-keys", json={"scopes": ["keys"]}).json()["key"]
    assert Api(api.client, read_key, api.account_id).get("/v1/cards").status_code == 200
    assert Api(api.client, keys_only_key, api.account_id).get("/v1/api-keys").status_code == 200
    foreign_key_id = other.get("/v1/api-keys").json()["items"][0]["id"]
    # Webhooks told of nothing the corpus does (an export failing), each with a delivery that
    # has ended, made here so nothing is sent while the corpus runs.
    hook_body = VALID_BODIES["createWebhook"]
    webhook = api.post("/v1/webhooks", json=hook_body).json()["webhook"]["id"]
    foreign_webhook = other.post("/v1/webhooks", json=hook_body).json()["webhook"]["id"]
    with database.transaction() as session:
        delivery = webhook_events.ping(
            session, endpoints.get(session, account_id=api.account_id, webhook_id=webhook)
        )
        delivery.status, delivery.next_attempt_at = "failed", None
        session.flush()
        delivery_id = delivery.id
    shared = api.post("/v1/shares", json={"folderId": folder}).json()["id"]
    foreign_share = other.post("/v1/shares", json={"folderId": foreign_folder}).json()["id"]
    subscribed = api.post("/v1/subscriptions", json={"url": "https://feeds.example.com/a.xml"}).json()["id"]
    foreign_subscription = other.post(
        "/v1/subscriptions", json={"url": "https://feeds.example.com/b.xml"}
    ).json()["id"]
    with database.transaction() as session:  # never polled while the corpus runs
        session.execute(update(Subscription).values(next_poll_at=2**62))
    full = make_api()  # at every cap (the settings' MAX_CARDS and MAX_FOLDERS, twenty webhooks)
    for number in range(MAX_FOLDERS):
        assert full.post("/v1/folders", json={"name": f"Full {number}"}).status_code == 201
    for _ in range(endpoints.MAX_WEBHOOKS):
        assert full.post("/v1/webhooks", json=hook_body).status_code == 201
    with database.transaction() as session:
        session.execute(update(Account).where(Account.id == full.account_id).values(cards_held=MAX_CARDS))
    annotation = api.post(f"/v1/cards/{card}/annotations", json={"quote": "card", "note": "n"}).json()["id"]
    foreign_annotation = other.post(f"/v1/cards/{foreign_card}/annotations", json={"note": "n"}).json()["id"]
    key = api.key
    world = {
        "annotationId": annotation,
        "foreignAnnotation": foreign_annotation,
        "annotationUnderscores": "_" * len(annotation),
        "annotationUpper": annotation.upper(),
        "cardId": card,
        "card2": card2,
        "trashed": trashed,
        "folderId": folder,
        "operationId": operation,
        "foreignCard": foreign_card,
        "foreignFolder": foreign_folder,
        "foreignOperation": foreign_operation,
        "exportId": export,
        "foreignExport": foreign_export,
        "exportUnderscores": "_" * len(export),
        "exportUpper": export.upper(),
        "importId": imported,
        "foreignImport": foreign_import,
        "importUnderscores": "_" * len(imported),
        "importUpper": imported.upper(),
        "cardUnderscores": "_" * len(card),
        "folderUnderscores": "_" * len(folder),
        "operationUnderscores": "_" * len(operation),
        "cardUpper": card.upper(),
        "folderUpper": folder.upper(),
        "operationUpper": operation.upper(),
        "cardsCursor": api.get("/v1/cards", params={"limit": 1}).json()["pageInfo"]["nextCursor"],
        "foreignCursor": other.get("/v1/cards", params={"limit": 1}).json()["pageInfo"]["nextCursor"],
        "foreignChangesCursor": other.get("/v1/changes", params={"cursor": "latest"}).json()["pageInfo"][
            "nextCursor"
        ],
        "key": key,
        "badKey": key[:-1] + ("A" if key[-1] != "A" else "B"),
        "foreignKey": other.key,
        "webhookId": webhook,
        "foreignWebhook": foreign_webhook,
        "webhookUnderscores": "_" * len(webhook),
        "webhookUpper": webhook.upper(),
        "deliveryId": delivery_id,
        "shareId": shared,
        "subscriptionId": subscribed,
        "foreignSubscription": foreign_subscription,
        "subscriptionUnderscores": "_" * len(subscribed),
        "subscriptionUpper": subscribed.upper(),
        "foreignShare": foreign_share,
        "shareUnderscores": "_" * len(shared),
        "shareUpper": shared.upper(),
        "keyId": key_id,
        "revokedKeyId": revoked_key_id,
        "foreignApiKey": foreign_key_id,
        "apikeyUnderscores": "_" * len(key_id),
        "apikeyUpper": key_id.upper(),
        "readKey": read_key,
        "keysOnlyKey": keys_only_key,
        "fullKey": full.key,
    }
    return api, world


def settled_snapshot(database: Database) -> dict[str, list[tuple[Any, ...]]]:
    """The snapshot once the embedded worker has taken up what is queued (earlier tests leave
    messages; StubBroker.join cannot tell, as a test that took one off by hand leaves it
    unfinished) and two snapshots in a row agree."""
    queues = getattr(worker_broker.broker, "queues", {})
    deadline = time.monotonic() + 10
    while any(queue.qsize() for queue in queues.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    previous = snapshot(database)
    while time.monotonic() < deadline:
        time.sleep(0.05)
        current = snapshot(database)
        if current == previous:
            return current
        previous = current
    raise AssertionError("the database kept changing before the corpus ran")


def changes(before: dict[str, list[tuple[Any, ...]]], after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """A few changed rows of each table that changed."""
    found = []
    for name in before:
        kept, had = set(after[name]), set(before[name])
        gone = [row for row in before[name] if row not in kept]
        new = [row for row in after[name] if row not in had]
        if gone or new:
            found.append(f"table {name} changed: -{gone[:3]!r} +{new[:3]!r}"[:1000])
    return found


PLACEHOLDER = re.compile(r"\{([A-Za-z0-9]+)\}")
RAW_PLACEHOLDER = re.compile(rb"\{([A-Za-z0-9]+)\}")


def fill(value: str, world: dict[str, str]) -> str:
    """The value with each placeholder of the world replaced, in one pass."""
    return PLACEHOLDER.sub(lambda m: world.get(m[1], m[0]), value)


def fill_raw(value: bytes, world: dict[str, str]) -> bytes:
    return RAW_PLACEHOLDER.sub(lambda m: world.get(m[1].decode(), m[0].decode()).encode(), value)


def send(api: Api, case: Case, world: dict[str, str]) -> Any:
    headers = [("Authorization", f"Bearer {world['key']}")] if case.auth else []
    body: Any = None if case.body is None else fill_raw(case.body, world)
    sized = {**world, "length": str(len(body or b""))}
    headers += [(name, fill(value, sized)) for name, value in case.headers]
    if case.chunked and body is not None:
        body = iter([body[i : i + 1024 * 1024] for i in range(0, len(body), 1024 * 1024)])
    url = fill(case.path, world) + (f"?{fill(case.query, world)}" if case.query else "")
    return api.client.request(case.method, url, headers=headers, content=body, follow_redirects=False)


def problems(case: Case, response: Any) -> list[str]:
    found = []
    if response.status_code >= 500:
        found.append("a server error")
    if response.status_code != case.status:
        found.append(f"status {response.status_code}, expected {case.status}")
    if response.headers.get("content-type") != "application/json":
        found.append(f"content-type {response.headers.get('content-type')!r}")
        return found
    try:
        body = response.json()
    except ValueError:
        return [*found, "a body that is not JSON"]
    if not isinstance(body, dict) or set(body) != ERROR_KEYS:
        found.append(f"keys {sorted(body) if isinstance(body, dict) else type(body).__name__}")
        return found
    if body["code"] != case.code:
        found.append(f"code {body['code']}, expected {case.code}")
    if not body["error"]:
        found.append("no error message")
    if body["requestId"] is None or body["requestId"] != response.headers.get("x-request-id"):
        found.append("requestId differs from X-Request-Id")
    return found


@pytest.fixture
def settings(tmp_path: Path, database: Database) -> Settings:
    """The corpus sends refreshCard hundreds of refusals, each counted against its limits (six
    cards a minute by default): here they are off."""
    env = {
        "CARDVAULT_RATE_LIMIT_REFRESH": "off",
        "CARDVAULT_RATE_LIMIT_REFRESH_CARD": "off",
        "CARDVAULT_RATE_LIMIT_CAPTION_CHANGES": "off",
        "CARDVAULT_RATE_LIMIT_WEBHOOK_SENDS": "off",
        "CARDVAULT_MAX_CARDS": str(MAX_CARDS),
        "CARDVAULT_MAX_FOLDERS": str(MAX_FOLDERS),
    }
    return Settings.from_env({**app_env(tmp_path, database), **env})


def test_every_malformed_request_is_refused_and_changes_nothing(
    make_api: Callable[[], Api], database: Database
) -> None:
    api, world = build_world(make_api, database)
    before = settled_snapshot(database)
    failures = []
    for case in corpus():
        response = send(api, case, world)
        found = problems(case, response)
        if found:
            failures.append(f"{case.id}: {'; '.join(found)}: {response.text[:200]!r}")
    changed = changes(before, snapshot(database))
    report = "\n".join(failures + changed)
    assert not failures and not changed, f"{len(failures)} cases failed:\n{report}"


# --- hostile search input that is not an error ---------------------------------------------


# Each search: the parameter, its value, and the cards it must answer (by name).
Q_MAX = next(  # q's maxLength in the spec
    p["schema"]["maxLength"] for p in SPEC["paths"]["/cards"]["get"]["parameters"] if p["name"] == "q"
)
EVERY_CARD = {"alpha", "beta", "gamma"}
SEARCHES: list[tuple[str, str, set[str]]] = [
    ("q", "%", EVERY_CARD),  # no letter or digit: filters nothing (the spec)
    ("q", "_", EVERY_CARD),
    ("q", "*", EVERY_CARD),
    ("q", "\\", EVERY_CARD),
    ("q", "%port", set()),  # words match from their start, never inside
    ("q", "rep%", {"alpha"}),
    ("q", "r_port", set()),
    ("q", "al_ha", set()),
    ("q", "' OR 1=1 --", set()),
    ("q", "' OR ''='", EVERY_CARD),  # OR with no term beside it is left out: nothing to find
    ("q", "'; DROP TABLE cards; --", set()),
    ("q", "alpha' --", {"alpha"}),
    ("q", '"alpha', {"alpha"}),
    ("q", '"alpha report"', {"alpha"}),
    ("q", '"report alpha"', set()),  # a phrase: side by side, in order
    ("q", "alpha*", {"alpha"}),
    ("q", "alpha OR beta", {"alpha", "beta"}),
    ("q", "alpha | beta", set()),
    ("q", "alpha & beta", set()),
    ("q", "alpha AND beta", set()),
    ("q", "and", {"gamma"}),
    ("q", "NOT alpha", {"alpha"}),  # "not" is a stop word: left out, never an operator
    ("q", "-alpha", {"beta", "gamma"}),
    ("q", "alpha -report", set()),
    ("q", "!alpha", {"alpha"}),
    ("q", "alpha <-> report", {"alpha"}),
    ("q", "alpha <2> report", set()),
    ("q", "NEAR(alpha report)", set()),
    ("q", "alpha NEAR report", {"alpha"}),  # "near" too
    ("q", "content:alpha", set()),
    ("q", "alpha:*", {"alpha"}),
    ("q", "alpha:A", set()),  # no qualifier: "alpha" then a word beginning with "a", side by side
    ("q", "^alpha", {"alpha"}),
    ("q", "(alpha)", {"alpha"}),
    ("q", "{alpha}", {"alpha"}),
    ("q", "alpha\\", {"alpha"}),
    ("q", "100%", {"alpha"}),
    ("q", "x*y", {"gamma"}),
    ("q", "o'reilly", {"gamma"}),
    ("q", "home_office", {"beta"}),
    ("q", "\ufffd", EVERY_CARD),
    ("q", "OR OR OR", EVERY_CARD),
    ("q", "- -- ---", EVERY_CARD),
    ("q", '""', EVERY_CARD),
    ("q", '-""', EVERY_CARD),
    ("q", '"', EVERY_CARD),
    ("q", "final OR gamma", {"beta", "gamma"}),
    ("q", "note:final", set()),  # no qualifier: the words "note" and "final", side by side
    ("q", "tag:", set()),  # a qualifier without a value: the word "tag"
    ("q", "-tag:", EVERY_CARD),
    ("q", "tag:work", {"alpha"}),
    ("q", "TAG:WORK", {"alpha"}),
    ("q", "-tag:work", {"beta", "gamma"}),
    ("q", "tag:100%", {"alpha"}),
    ("q", "tag:%", set()),
    ("q", "tag:wor", set()),  # a whole tag, not a beginning
    ("q", 'tag:"x*y"', {"gamma"}),
    ("q", "tag:" + "x" * 200, set()),  # no tag can be that long: nothing, not an error
    ("q", "type:text", EVERY_CARD),
    ("q", "-type:text", set()),
    ("q", "type:text type:link", set()),  # a contradiction: an empty page
    ("q", "has:notes", {"beta"}),
    ("q", "-has:notes", {"alpha", "gamma"}),
    ("q", "is:favorite", set()),
    ("q", "folder:%", set()),
    ("q", "folder:' OR 1=1 --", set()),
    ("q", "site:example.com", set()),
    ("q", "after:1970-01-01", EVERY_CARD),
    ("q", "before:1970-01-01", set()),
    # q at the spec's maxLength (1,024 characters; one more is refused by the corpus above)
    ("q", ("alpha " + "% " * 600)[:Q_MAX], {"alpha"}),
    ("q", ("alpah repotr " * 80).ljust(Q_MAX)[:Q_MAX], {"alpha"}),  # typos of "alpha report"
    ("q", " ".join(f"zq{n:04d}" for n in range(200))[:Q_MAX], set()),  # words past the 48th ignored
    ("q", ('"' + "alpha report " * 80)[:Q_MAX], set()),  # a phrase: its first 48 words
    ("q", ("OR " * 341).ljust(Q_MAX), EVERY_CARD),
    ("q", ("-alpha " * 146).ljust(Q_MAX), {"beta", "gamma"}),
    ("q", ("and " * 300)[:Q_MAX], {"gamma"}),  # a stop word alone must match
    ("tag", "%", set()),
    ("tag", "_", set()),
    ("tag", "w%", set()),
    ("tag", "wor_", set()),
    ("tag", "%work%", set()),
    ("tag", "work", {"alpha"}),
    ("tag", "WORK", {"alpha"}),
    ("tag", "100%", {"alpha"}),
    ("tag", "100_", set()),
    ("tag", "1%", set()),
    ("tag", "home_office", {"beta"}),
    ("tag", "HOME_OFFICE", {"beta"}),
    ("tag", "home%office", set()),
    ("tag", "homexoffice", set()),
    ("tag", "o'reilly", {"gamma"}),
    ("tag", "O'Reilly", {"gamma"}),
    ("tag", "x*y", {"gamma"}),
    ("tag", "x*", set()),
    ("tag", "*", set()),
    ("tag", "' OR 1=1 --", set()),
    ("tag", "' OR '1'='1", set()),
    ("tag", "work' --", set()),
    ("tag", "\\", set()),
    ("tag", "[a-z]*", set()),
    ("tag", "alpha OR work", set()),
    ("tag", "work | home_office", set()),
    ("tag", "\ufffd", set()),
]
# Bytes that are not UTF-8 decode to U+FFFD: a value like any other.
RAW_SEARCHES = [
    ("q=%FF", EVERY_CARD),
    ("q=%ED%A0%80", EVERY_CARD),
    ("q=%C0%AF", EVERY_CARD),
    ("tag=%FF", set()),
]


def test_wildcards_and_operators_in_search_match_words_only(api: Api) -> None:
    """LIKE wildcards, SQL and full-text operators in `q` and `tag` are plain text: 200, and the
    cards the word rules name (in the newest order a card matches `q` when each of its words
    begins a word of the card, by relevance cards holding some follow; `tag` is one whole tag
    ignoring case), never everything."""
    cards = {
        api.create(content="alpha report", tags=["work", "100%"])["id"]: "alpha",
        api.create(content="beta plan", notes="final draft", tags=["home_office"])["id"]: "beta",
        api.create(content="gamma and delta", tags=["o'reilly", "x*y"])["id"]: "gamma",
    }
    searches = [(f"{name}={quote(value, safe='')}", expected) for name, value, expected in SEARCHES]
    failures = []
    for query, expected in searches + RAW_SEARCHES:
        response = api.get(f"/v1/cards?{query}&include=total&sort=newest")
        if response.status_code != 200:
            failures.append(f"{query}: {response.status_code} {response.text[:200]}")
            continue
        body = response.json()
        found = {cards[item["id"]] for item in body["items"]}
        if found != expected or body["total"] != len(expected):
            failures.append(
                f"{query}: found {sorted(found)} (total {body['total']}), expected {sorted(expected)}"
            )
    assert not failures, "\n".join(failures)
