"""The one representation of a card: the Card, list item and ExtendedCard shapes the spec
declares, field for field, for cards made by the domain; and which picture and which file each
URL signs."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7

from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.adapters.limiter import Limiter
from cardvault.domain.cards import editing, reading
from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.pipeline import processing
from cardvault.handlers import card_json
from cardvault.handlers.http import runtime
from cardvault.settings import Settings
from cardvault.spec import spec_document

SPEC_URI = "urn:cardvault-spec"
Render = Callable[..., Any]


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schemas as JSON Schema: ``nullable`` as a null type, references absolute."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if str(node.get("$ref", "")).startswith("#"):
        node["$ref"] = SPEC_URI + node["$ref"]
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    return node


SPEC = _json_schema(spec_document()[1])
SCHEMAS = SPEC["components"]["schemas"]
REGISTRY: Registry[Any] = Registry().with_resource(SPEC_URI, DRAFT7.create_resource(SPEC))


def assert_fits(schema: str, value: dict[str, Any]) -> None:
    """The value is valid by the spec's schema of this name."""
    validator = Draft7Validator({"$ref": f"{SPEC_URI}#/components/schemas/{schema}"}, registry=REGISTRY)
    assert [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(value)] == []


@pytest.fixture
def store(tmp_path: Path, settings: Settings) -> LocalDiskStore:
    return LocalDiskStore(tmp_path / "blobs", secret_key=settings.secret_key, public_url=settings.public_url)


@pytest.fixture
def render(settings: Settings, database: Database, store: LocalDiskStore) -> Render:
    """Call a function as a handler would, with the app's runtime bound (in a context of its own,
    so no other test sees it)."""
    bound = runtime.Runtime(
        settings=settings,
        db=database,
        limiter=Limiter("memory://"),
        store=store,
        passwords=runtime.passwords_from_settings(settings),
    )
    context = contextvars.copy_context()
    context.run(runtime.bind, bound)
    return lambda function, *args: context.run(function, *args)


def _added(database: Database, account_id: str, **fields: Any) -> Card:
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, **fields).card
        processing.queue(session, card)
        return card


def _view(database: Database, account_id: str, card_id: str) -> reading.CardView:
    with database.transaction(write=False) as session:
        return reading.get_card_view(session, account_id=account_id, card_id=card_id)


def _signed(store: LocalDiskStore, url: str | None) -> dict[str, Any]:
    """What a file URL signs: the object's key (k), file name (f), type (t), attachment (a)."""
    assert url is not None and url.startswith("https://app.cardvault.test/files/")
    return store.download_claims(url.rsplit("/", 1)[1])


def test_a_text_card_carries_every_card_field_and_nothing_of_a_file(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="Hello", notes="n", tags=["Work", "b"])
    shown = render(card_json.card_json, _view(database, account_id, card.id))
    assert_fits("Card", shown)
    assert set(shown) == set(SCHEMAS["Card"]["required"])
    assert shown["appUrl"] == f"https://app.cardvault.test/cards/{card.id}"
    assert (shown["type"], shown["content"], shown["notes"], shown["tags"]) == (
        "text",
        "Hello",
        "n",
        ["Work", "b"],
    )
    assert shown["createdAt"] == shown["updatedAt"] == card.created_at
    file_fields = [k for k in shown if k.startswith("file") or (k.endswith("Url") and k != "appUrl")]
    assert {shown[k] for k in file_fields} == {None}


def test_a_list_item_carries_the_groups_include_names(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="https://example.com/a", notes="n")
    view = _view(database, account_id, card.id)
    bare = render(card_json.list_item_json, view, set())
    assert set(bare) == set(SCHEMAS["CardListItem"]["required"])
    with database.transaction(write=False) as session:
        stages = card_json.stages_for_list(session, [view], {"processing"})[view.pk]
    full = render(card_json.list_item_json, view, {"content", "metadata", "processing"}, stages)
    assert_fits("CardListItem", full)
    assert set(full) - set(bare) == {
        "content", "notes", "aiSummary",  # content
        "metadataTitle", "metadataDescription", "linkPreviewImageUrl", "filePreview",  # metadata
        "processingStatus",
    }  # fmt: skip
    status = full["processingStatus"]
    assert status["state"] == "pending" and [s["name"] for s in status["stages"]] == [
        "linkMetadata",
        "linkPreview",
        "capture",
        "ocr",
        "ai",
    ]
    assert render(card_json.list_item_json, view, {"content"})["content"] == "https://example.com/a"


def test_a_card_with_nothing_to_process_lists_no_processing_status(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="#ff0000 #00ff00")
    view = _view(database, account_id, card.id)
    with database.transaction(write=False) as session:
        stages = card_json.stages_for_list(session, [view], {"processing"})
    assert (
        render(card_json.list_item_json, view, {"processing"}, stages.get(view.pk))["processingStatus"]
        is None
    )


def test_a_link_shows_its_large_picture_as_its_preview_and_the_compact_one_as_thumbnail(
    database: Database, account_id: str, render: Render, store: LocalDiskStore
) -> None:
    card = _added(database, account_id, content="https://example.com/a")
    view = _view(database, account_id, card.id)._replace(
        compact_object="r/compact", thumbnail_object="r/large", placeholder_object="r/tiny"
    )
    shown = render(card_json.card_json, view)
    assert_fits("Card", shown)
    assert _signed(store, shown["compactUrl"]) | {"e": 0} == {
        "k": "r/compact", "f": "compact.webp", "t": "image/webp", "a": False, "e": 0,
    }  # fmt: skip
    assert _signed(store, shown["placeholderUrl"])["k"] == "r/tiny"
    assert _signed(store, shown["linkPreviewImageUrl"])["k"] == "r/large"
    assert _signed(store, shown["thumbnailUrl"])["k"] == "r/compact"
    assert _signed(store, shown["detailUrl"])["k"] == "r/large"


def test_a_link_without_an_image_of_its_own_stands_by_its_screenshot(
    database: Database, account_id: str, render: Render, store: LocalDiskStore
) -> None:
    card = _added(database, account_id, content="https://example.com/a")
    view = _view(database, account_id, card.id)
    shown = render(card_json.card_json, view)
    assert [shown[f] for f in ("screenshotUrl", "detailUrl", "compactUrl", "placeholderUrl")] == [None] * 4
    captured = view._replace(
        screenshot_object="s/full", screenshot_compact_object="s/256", screenshot_placeholder_object="s/48"
    )
    shown = render(card_json.card_json, captured)
    assert_fits("Card", shown)
    assert _signed(store, shown["screenshotUrl"]) | {"e": 0} == {
        "k": "s/full", "f": "screenshot.webp", "t": "image/webp", "a": False, "e": 0,
    }  # fmt: skip
    assert _signed(store, shown["detailUrl"])["k"] == "s/full"
    assert _signed(store, shown["compactUrl"])["k"] == "s/256"
    assert _signed(store, shown["thumbnailUrl"])["k"] == "s/256"
    assert _signed(store, shown["placeholderUrl"])["k"] == "s/48"
    assert shown["linkPreviewImageUrl"] is None
    # The page's own image, once it has one, stands first; the screenshot stays its own field.
    shown = render(
        card_json.card_json,
        captured._replace(compact_object="r/256", placeholder_object="r/48", thumbnail_object="r/large"),
    )
    fields = ("compactUrl", "placeholderUrl", "detailUrl", "screenshotUrl")
    assert [_signed(store, shown[f])["k"] for f in fields] == ["r/256", "r/48", "r/large", "s/full"]


@pytest.mark.parametrize("kind", ["image", "video", "document"])
def test_a_file_card_shows_its_large_picture_as_its_detail(
    kind: str, database: Database, account_id: str, render: Render, store: LocalDiskStore
) -> None:
    card = _added(database, account_id, content="x")
    view = _view(database, account_id, card.id)._replace(type=kind, compact_object="r/compact")
    assert render(card_json.card_json, view)["detailUrl"] is None
    shown = render(card_json.card_json, view._replace(thumbnail_object="r/large"))
    assert _signed(store, shown["detailUrl"])["k"] == "r/large"


@pytest.mark.parametrize("kind", ["video", "document"])
def test_a_video_or_document_stands_for_itself_with_its_large_picture(
    kind: str, database: Database, account_id: str, render: Render, store: LocalDiskStore
) -> None:
    card = _added(database, account_id, content="x")
    view = _view(database, account_id, card.id)._replace(type=kind, compact_object="r/compact")
    assert _signed(store, render(card_json.card_json, view)["thumbnailUrl"])["k"] == "r/compact"
    shown = render(card_json.card_json, view._replace(thumbnail_object="r/large"))
    assert _signed(store, shown["thumbnailUrl"])["k"] == "r/large"
    assert shown["linkPreviewImageUrl"] is None  # a link's field alone


@pytest.mark.parametrize(
    ("mime_type", "attachment"),
    [("text/html", True), ("image/svg+xml", True), ("image/png", False), ("video/mp4", False), (None, True)],
)
def test_a_file_a_browser_could_run_is_signed_as_an_attachment(
    mime_type: str | None,
    attachment: bool,
    database: Database,
    account_id: str,
    render: Render,
    store: LocalDiskStore,
) -> None:
    card = _added(database, account_id, content="x")
    view = _view(database, account_id, card.id)._replace(file_object="f/key", mime_type=mime_type)
    signed = _signed(store, render(card_json.card_json, view)["fileUrl"])
    assert (signed["k"], signed["f"], signed["a"]) == ("f/key", "file", attachment)
    assert signed["t"] == (mime_type or "application/octet-stream")


def test_a_file_preview_names_every_field_null_where_the_kind_has_none(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="x")
    view = _view(database, account_id, card.id)._replace(file_preview={"kind": "pdf", "pageCount": 3})
    preview = render(card_json.card_json, view)["filePreview"]
    assert preview["kind"] == "pdf" and preview["pageCount"] == 3
    assert set(preview) == set(SCHEMAS["FilePreview"]["required"])
    assert {v for k, v in preview.items() if k not in ("kind", "pageCount")} == {None}


def test_the_extended_card_carries_every_field_of_its_schema(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="https://example.com/a")
    with database.transaction(write=False) as session:
        shown = render(
            card_json.extended, session, editing.get_card(session, account_id=account_id, card_id=card.id)
        )
    assert_fits("ExtendedCard", shown)
    assert set(shown) == set(SCHEMAS["ExtendedCard"]["required"])
    assert (shown["isDeleted"], shown["isArchived"], shown["metadataStatus"]) == (False, False, "pending")
    assert shown["processingStatus"]["state"] == "pending" and shown["linkFacts"] == []


def test_a_palette_shows_the_colours_its_content_names(
    database: Database, account_id: str, render: Render
) -> None:
    card = _added(database, account_id, content="#ff0000 red #00F")
    with database.transaction(write=False) as session:
        shown = render(
            card_json.extended, session, editing.get_card(session, account_id=account_id, card_id=card.id)
        )
    assert shown["type"] == "palette" and shown["processingStatus"] is None
    assert shown["colors"] == [{"hex": "#ff0000", "name": "red"}, {"hex": "#0000ff", "name": "blue"}]
