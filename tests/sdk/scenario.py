"""A client team's first day, written against the Python SDK that openapi-python-client
generates from openapi/cardvault.yaml (package `cardvault_client`, made by the SDK tier into a
temporary directory): every operation, through the generated client only, and the typed error
bodies; and its assistant's, through the official MCP SDK's client at /mcp. Type-checked with
mypy by the tier, so a weaker generated type fails the build.

    python scenario.py BASE_URL API_KEY
"""

from __future__ import annotations

import base64
import io
import json
import sys
import time
import zipfile
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
import httpx2
from cardvault_client import AuthenticatedClient, Client
from cardvault_client.api.annotations import (
    create_annotation,
    delete_annotation,
    get_annotation,
    list_annotations,
    list_card_annotations,
    update_annotation,
)
from cardvault_client.api.bulk import bulk_cards
from cardvault_client.api.cards import (
    archive_card,
    create_card,
    create_card_captions_upload,
    create_card_thumbnail_upload,
    delete_card,
    delete_card_captions,
    get_card,
    get_extended_card,
    list_cards,
    mark_card_done,
    refresh_card,
    replace_card_captions,
    replace_card_thumbnail,
    reset_card_thumbnail,
    restore_card,
    set_card_favorite,
    trash_card,
    unarchive_card,
    update_card,
)
from cardvault_client.api.changes import list_changes
from cardvault_client.api.exports import cancel_export, get_export, get_latest_export, start_export
from cardvault_client.api.folders import (
    add_folder_cards,
    create_folder,
    delete_folder,
    get_folder,
    list_folders,
    remove_folder_cards,
    update_folder,
)
from cardvault_client.api.imports import cancel_import, get_import, list_imports, start_import
from cardvault_client.api.keys import create_api_key, list_api_keys, revoke_api_key
from cardvault_client.api.shares import create_share, delete_share, get_share, list_shares, update_share
from cardvault_client.api.subscriptions import (
    create_subscription,
    delete_subscription,
    get_subscription,
    list_subscriptions,
    update_subscription,
)
from cardvault_client.api.system import get_health, get_readiness
from cardvault_client.api.tags import delete_tag, get_tag_operation, list_tags, merge_tag, rename_tag
from cardvault_client.api.trash import empty_trash, list_trash
from cardvault_client.api.uploads import create_upload
from cardvault_client.api.webhooks import (
    create_webhook,
    delete_webhook,
    get_webhook,
    list_webhook_deliveries,
    list_webhooks,
    retry_webhook_delivery,
    rotate_webhook_secret,
    test_webhook,
    update_webhook,
)
from cardvault_client.models import (
    Annotation,
    AnnotationColor,
    AnnotationCreate,
    AnnotationList,
    AnnotationPage,
    AnnotationUpdate,
    ApiError,
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ArchivedFilter,
    CaptionsFormat,
    CaptionsReplace,
    Card,
    CardBulkItem,
    CardBulkOperation,
    CardBulkRequest,
    CardBulkResult,
    CardCreate,
    CardCreated,
    CardIdList,
    CardListInclude,
    CardListSort,
    CardPage,
    CardType,
    CardUpdate,
    ChangeAction,
    ChangePage,
    ChangeType,
    ChangeTypeFilter,
    DoneAs,
    DoneCard,
    EmptyTrashResult,
    ErrorDetails,
    ExportJob,
    ExportStatus,
    ExtendedCard,
    FavoriteUpdate,
    Folder,
    FolderCardsResult,
    FolderColor,
    FolderCreate,
    FolderPage,
    FolderUpdate,
    Health,
    HealthStatus,
    Highlights,
    ImportFormat,
    ImportStart,
    ImportStatus,
    LatestExport,
    ProcessingStageName,
    ProcessingState,
    ProcessingStatus,
    Readiness,
    ReadinessCheckStatus,
    ReadinessStatus,
    RefreshQueued,
    RefreshQueuedStatus,
    Scope,
    Share,
    ShareCreate,
    ShareCreated,
    SharePage,
    ShareUpdate,
    Subscription,
    SubscriptionCreate,
    SubscriptionPage,
    SubscriptionUpdate,
    TagDelete,
    TagMerge,
    TagOperation,
    TagOperationStatus,
    TagPage,
    TagRename,
    ThumbnailReplace,
    UploadCreate,
    UploadTicket,
    Webhook,
    WebhookCreate,
    WebhookCreated,
    WebhookDelivery,
    WebhookDeliveryPage,
    WebhookDeliveryStatus,
    WebhookDisabledReason,
    WebhookEventFilter,
    WebhookList,
    WebhookUpdate,
)
from cardvault_client.types import UNSET, Response, Unset
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

# One small file of each kind a card can hold (the card's type comes from these bytes).
FILES = {
    CardType.IMAGE: (
        "pixel.png",
        "image/png",
        base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
        ),
    ),
    CardType.VIDEO: (
        "clip.mp4",
        "video/mp4",
        b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + bytes(40),
    ),
    CardType.AUDIO: ("song.mp3", "audio/mpeg", b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(40)),
    CardType.DOCUMENT: ("paper.pdf", "application/pdf", b"%PDF-1.4\n%%EOF\n"),
}

T = TypeVar("T")


def ok(result: T | ApiError | None) -> T:
    """The parsed success body; any error body fails the scenario with its code."""
    assert result is not None, "no body"
    assert not isinstance(result, ApiError), f"{result.code}: {result.error}"
    return result


def refused(response: Response[Any], status: int, code: str) -> ApiError:
    """The typed error body of a refused call, with its status and code checked."""
    assert response.status_code == status, (response.status_code, response.content)
    error = response.parsed
    assert isinstance(error, ApiError), error
    assert error.code == code, (error.code, error.error)
    assert isinstance(error.request_id, str) and error.retry_at is None
    return error


def created(client: AuthenticatedClient, body: CardCreate) -> Card:
    answer = ok(create_card.sync(client=client, body=body))
    assert isinstance(answer, CardCreated) and answer.card_id == answer.card.id
    return answer.card


def uploaded(client: AuthenticatedClient, kind: CardType) -> Card:
    """A file card, as a client makes one: an upload URL, a PUT of the bytes, then the card."""
    name, mime_type, data = FILES[kind]
    ticket = ok(
        create_upload.sync(
            client=client, body=UploadCreate(file_name=name, file_size=len(data), mime_type=mime_type)
        )
    )
    assert isinstance(ticket, UploadTicket) and ticket.method.value == "PUT"
    stored = httpx.put(ticket.upload_url, content=data, headers=ticket.headers.to_dict())
    assert stored.status_code == 200, stored.text
    card = created(client, CardCreate(file_key=ticket.file_key, file_etag=stored.headers["ETag"]))
    assert card.file_name == name and card.file_size == len(data) and card.mime_type == mime_type
    assert isinstance(card.file_url, str) and httpx.get(card.file_url).content == data
    return card


def replaced_image(client: AuthenticatedClient, link: Card) -> None:
    """A link card's image replaced by an uploaded one, then reset."""
    name, mime_type, data = FILES[CardType.IMAGE]
    ticket = ok(
        create_card_thumbnail_upload.sync(
            link.id,
            client=client,
            body=UploadCreate(file_name=name, file_size=len(data), mime_type=mime_type),
        )
    )
    assert isinstance(ticket, UploadTicket)
    assert httpx.put(ticket.upload_url, content=data, headers=ticket.headers.to_dict()).status_code == 200
    card = ok(
        replace_card_thumbnail.sync(link.id, client=client, body=ThumbnailReplace(file_key=ticket.file_key))
    )
    assert isinstance(card, ExtendedCard) and card.thumbnail_overridden is True
    assert isinstance(card.link_preview_image_url, str) and isinstance(card.compact_url, str)
    reset = ok(reset_card_thumbnail.sync(link.id, client=client))
    assert reset.thumbnail_overridden is False and reset.link_preview_image_url is None


def captioned(client: AuthenticatedClient, audio: Card) -> None:
    """A caption file attached to an audio card, then removed."""
    data = b"WEBVTT\n\n00:00.000 --> 00:01.000\nHello there.\n"
    ticket = ok(
        create_card_captions_upload.sync(
            audio.id,
            client=client,
            body=UploadCreate(file_name="song.vtt", file_size=len(data), mime_type="text/vtt"),
        )
    )
    assert isinstance(ticket, UploadTicket)
    assert httpx.put(ticket.upload_url, content=data, headers=ticket.headers.to_dict()).status_code == 200
    card = ok(
        replace_card_captions.sync(audio.id, client=client, body=CaptionsReplace(file_key=ticket.file_key))
    )
    assert isinstance(card, ExtendedCard) and card.captions_file is not None
    assert card.captions_file.format_ == CaptionsFormat.VTT and card.captions_file.cue_count == 1
    assert httpx.get(card.captions_file.url).content == data
    removed = ok(delete_card_captions.sync(audio.id, client=client))
    assert removed.captions_file is None


def finished(client: AuthenticatedClient, operation: TagOperation) -> TagOperation:
    """Poll a tag operation until it stops running."""
    deadline = time.monotonic() + 60
    while operation.status == TagOperationStatus.RUNNING:
        assert time.monotonic() < deadline, "the tag operation did not finish"
        time.sleep(0.05)
        operation = ok(get_tag_operation.sync(operation.id, client=client))
    assert operation.status == TagOperationStatus.COMPLETED, operation.error
    return operation


def exported(client: AuthenticatedClient) -> None:
    """An export of the account, polled until ready, downloaded and checked; then the weekly rule."""
    latest = ok(get_latest_export.sync(client=client))
    assert isinstance(latest, LatestExport) and latest.can_start is True and latest.job is None
    job = ok(start_export.sync(client=client)).job
    deadline = time.monotonic() + 60
    while job.status in (ExportStatus.PENDING, ExportStatus.RUNNING):
        assert time.monotonic() < deadline, "the export did not finish"
        time.sleep(0.1)
        polled = ok(get_latest_export.sync(client=client)).job
        assert isinstance(polled, ExportJob)
        job = polled
    assert job.status == ExportStatus.READY and isinstance(job.download_url, str)
    assert ok(get_export.sync(job.id, client=client)).job.card_count == job.card_count
    archive = zipfile.ZipFile(io.BytesIO(httpx.get(job.download_url).content))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["counts"]["cards"] == job.card_count and archive.testzip() is None
    refused(cancel_export.sync_detailed(job.id, client=client), 409, "EXPORT_FINISHED")
    again = start_export.sync_detailed(client=client)
    assert again.status_code == 429 and isinstance(again.parsed, ApiError)
    assert again.parsed.code == "RATE_LIMITED" and again.parsed.retry_at == job.expires_at


BOOKMARKS = (
    b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
    b'<DT><H3 ADD_DATE="1700000000">Imported</H3>\n<DL><p>\n'
    b'<DT><A HREF="https://example.com/imported" ADD_DATE="1700000000" TAGS="from-browser">'
    b"Imported page</A>\n"
    b'<DT><A HREF="javascript:alert(1)">Not a page</A>\n'
    b"</DL><p>\n</DL><p>\n"
)


def imported(client: AuthenticatedClient) -> None:
    """A browser's bookmark file imported: uploaded, started, polled, listed; its report."""
    ticket = ok(
        create_upload.sync(
            client=client,
            body=UploadCreate(file_name="bookmarks.html", file_size=len(BOOKMARKS), mime_type="text/html"),
        )
    )
    stored = httpx.put(ticket.upload_url, content=BOOKMARKS, headers=ticket.headers.to_dict())
    assert stored.status_code == 200, stored.text
    job = ok(
        start_import.sync(
            client=client, body=ImportStart(file_key=ticket.file_key, file_etag=stored.headers["ETag"])
        )
    ).job
    assert job.format_ == ImportFormat.NETSCAPE
    deadline = time.monotonic() + 60
    while job.status in (ImportStatus.PENDING, ImportStatus.RUNNING):
        assert time.monotonic() < deadline, "the import did not finish"
        time.sleep(0.05)
        job = ok(get_import.sync(job.id, client=client)).job
    assert (job.status, job.found, job.created, job.failed) == (ImportStatus.COMPLETED, 2, 1, 1)
    assert job.failures[0].entry == "bookmark 2" and "javascript:" in job.failures[0].reason
    assert [listed.id for listed in ok(list_imports.sync(client=client)).items] == [job.id]
    refused(cancel_import.sync_detailed(job.id, client=client), 409, "IMPORT_FINISHED")
    page = ok(list_cards.sync(client=client, url_query="https://example.com/imported"))
    assert [card.tags for card in page.items] == [["from-browser"]]


def walk(page_after: Callable[[str | Unset], CardPage | ApiError | None]) -> list[str]:
    """The ids of every card of a listing, page by page through `nextCursor`."""
    ids: list[str] = []
    cursor: str | Unset = UNSET
    while True:
        page = ok(page_after(cursor))
        ids.extend(item.id for item in page.items)
        assert page.page_info.has_more == (page.page_info.next_cursor is not None)
        if page.page_info.next_cursor is None:
            return ids
        cursor = page.page_info.next_cursor


def cards_and_lists(client: AuthenticatedClient) -> dict[str, Card]:
    made = {
        "text": created(
            client, CardCreate(content="# Plans\n\n- ship the SDK", tags=["Work", "sdk"], notes="n")
        ),
        "link": created(client, CardCreate(content="https://example.com/articles/42", tags=["reading"])),
        "quote": created(
            client, CardCreate(content='"Simplicity is prerequisite for reliability." — Edsger Dijkstra')
        ),
        "palette": created(client, CardCreate(content="#ff0000, #00ff00 rebeccapurple")),
    }
    for kind in (CardType.IMAGE, CardType.VIDEO, CardType.AUDIO, CardType.DOCUMENT):
        made[kind.value] = uploaded(client, kind)
    for name, card in made.items():
        assert card.type_.value == name, (name, card.type_)
        assert isinstance(card.tags, list) and card.folder_ids == []
    assert made["link"].url == "https://example.com/articles/42"

    everything = walk(lambda cursor: list_cards.sync(client=client, limit=3, cursor=cursor))
    assert sorted(everything) == sorted(card.id for card in made.values())
    assert everything == walk(lambda cursor: list_cards.sync(client=client, limit=100, cursor=cursor))
    tagged = walk(lambda cursor: list_cards.sync(client=client, tag=["work"], cursor=cursor))
    assert tagged == [made["text"].id]
    links = walk(lambda cursor: list_cards.sync(client=client, type_=[CardType.LINK], cursor=cursor))
    assert links == [made["link"].id]
    # A repeated type is any of them; a repeated tag every one.
    either = [CardType.LINK, CardType.QUOTE]
    both = walk(lambda cursor: list_cards.sync(client=client, type_=either, cursor=cursor))
    assert sorted(both) == sorted([made["link"].id, made["quote"].id])
    assert walk(lambda cursor: list_cards.sync(client=client, tag=["work", "none"], cursor=cursor)) == []
    # "Already saved?", as a browser extension asks it, in another spelling of the page's URL
    # (the generator names the url parameter url_query: its request code has a url of its own).
    spelling = "HTTPS://Example.com:443/articles/42?utm_source=sdk#top"
    assert walk(lambda cursor: list_cards.sync(client=client, url_query=spelling, cursor=cursor)) == [
        made["link"].id
    ]
    assert walk(lambda cursor: list_cards.sync(client=client, q="simplicity", cursor=cursor)) == [
        made["quote"].id
    ]
    first = made["text"].created_at
    around = walk(
        lambda cursor: list_cards.sync(
            client=client, created_after=first - 1, created_before=first + 1, cursor=cursor
        )
    )
    assert made["text"].id in around
    # Search with a qualifier, and why each card matched: offsets into a fragment, not markup.
    searched = ok(
        list_cards.sync(
            client=client, q="simplicity type:quote -tag:work", include=[CardListInclude.HIGHLIGHTS]
        )
    )
    assert [item.id for item in searched.items] == [made["quote"].id]
    highlights = searched.items[0].highlights
    assert isinstance(highlights, Highlights) and highlights.title == []
    (match,) = highlights.content[0].matches
    assert highlights.content[0].text[match.start : match.end] == "Simplicity"
    oldest = walk(lambda cursor: list_cards.sync(client=client, sort=CardListSort.OLDEST, cursor=cursor))
    assert oldest == everything[::-1]
    extras = [CardListInclude.CONTENT, CardListInclude.TOTAL]
    with_content = ok(list_cards.sync(client=client, include=extras, limit=100))
    assert with_content.total == len(made) and with_content.total_capped is False
    assert all(isinstance(item.content, str) for item in with_content.items)

    card = ok(get_card.sync(made["text"].id, client=client))
    assert card.notes == "n" and card.tags == ["Work", "sdk"]
    # Conditional requests: the ETag read, 304 for it, 412 for a stale If-Match, then the write.
    etag = get_card.sync_detailed(card.id, client=client).headers["ETag"]
    assert get_card.sync_detailed(card.id, client=client, if_none_match=etag).status_code == 304
    stale = refused(
        update_card.sync_detailed(card.id, client=client, body=CardUpdate(notes="stale"), if_match='"0"'),
        412,
        "PRECONDITION_FAILED",
    )
    assert isinstance(stale.details, ErrorDetails) and stale.details.etag == etag
    update = CardUpdate(content="# Plans v2", tags=["Work"])
    written = update_card.sync_detailed(card.id, client=client, body=update, if_match=etag)
    card = ok(written.parsed)
    assert card.content == "# Plans v2" and card.tags == ["Work"] and written.headers["ETag"] != etag
    card = ok(set_card_favorite.sync(card.id, client=client, body=FavoriteUpdate(is_favorited=True)))
    assert card.is_favorited is True
    assert walk(lambda cursor: list_cards.sync(client=client, favorited=True, cursor=cursor)) == [card.id]
    extended = ok(get_extended_card.sync(card.id, client=client))
    assert isinstance(extended, ExtendedCard) and extended.is_favorited and not extended.is_archived
    assert isinstance(extended.processing_status, ProcessingStatus) and extended.link_facts == []
    assert [stage.name for stage in extended.processing_status.stages] == [ProcessingStageName.AI]
    assert extended.colors == [] and extended.ai_engine is None
    assert extended.file_duration is None and extended.video_scrub is None
    done = ok(mark_card_done.sync(made["link"].id, client=client))
    assert isinstance(done, DoneCard) and isinstance(done.completed_at, int) and done.is_hidden is False
    assert done.done_as in DoneAs  # the tests' servers read no page: "done", with no category
    queued = ok(refresh_card.sync(made["link"].id, client=client))
    assert isinstance(queued, RefreshQueued) and queued.card_id == made["link"].id
    assert queued.status == RefreshQueuedStatus.QUEUED and isinstance(queued.requested_at, int)
    unsettled = list_cards.sync(client=client, processing_state=ProcessingState.FAILED)
    assert isinstance(unsettled, CardPage) and made["link"].id not in [c.id for c in unsettled.items]
    made["text"] = card
    return made


def tags(client: AuthenticatedClient, made: dict[str, Card]) -> None:
    page = ok(list_tags.sync(client=client))
    assert isinstance(page, TagPage) and {tag.name for tag in page.items} == {"Work", "reading"}
    finished(client, ok(rename_tag.sync(client=client, body=TagRename(from_="work", to="Job"))))
    finished(client, ok(merge_tag.sync(client=client, body=TagMerge(from_="reading", into="Job"))))
    assert ok(get_card.sync(made["link"].id, client=client)).tags == ["Job"]
    operation = finished(client, ok(delete_tag.sync(client=client, body=TagDelete(tag="job"))))
    assert operation.changed == 2
    assert ok(list_tags.sync(client=client)).items == []


def folders(client: AuthenticatedClient, made: dict[str, Card]) -> None:
    folder = ok(
        create_folder.sync(client=client, body=FolderCreate(name="Reading list", color=FolderColor.BLUE))
    )
    assert isinstance(folder, Folder) and folder.color == FolderColor.BLUE and folder.card_count == 0
    ids = [made["link"].id, made["quote"].id, "crd_missing"]
    result = ok(add_folder_cards.sync(folder.id, client=client, body=CardIdList(card_ids=ids)))
    assert isinstance(result, FolderCardsResult)
    assert sorted(result.updated_ids) == sorted(ids[:2]) and result.failed_ids == ["crd_missing"]
    in_folder = walk(lambda cursor: list_cards.sync(client=client, folder=[folder.id], cursor=cursor))
    assert in_folder == [made["quote"].id, made["link"].id]
    folder = ok(update_folder.sync(folder.id, client=client, body=FolderUpdate(name="Later", color=None)))
    assert folder.name == "Later" and folder.color is None
    assert ok(get_folder.sync(folder.id, client=client)).card_count == 2
    ok(remove_folder_cards.sync(folder.id, client=client, body=CardIdList(card_ids=[made["quote"].id])))
    page = ok(list_folders.sync(client=client))
    assert isinstance(page, FolderPage) and [(f.id, f.card_count) for f in page.items] == [(folder.id, 1)]
    assert delete_folder.sync_detailed(folder.id, client=client).status_code == 204
    assert ok(get_card.sync(made["link"].id, client=client)).folder_ids == []


def annotated(client: AuthenticatedClient) -> None:
    text = created(client, CardCreate(content="High water comes twice a day; low water twice too."))
    body = AnnotationCreate(
        quote="twice", prefix="low water ", note="Check the tables.", color=AnnotationColor.YELLOW
    )
    made = ok(create_annotation.sync(text.id, client=client, body=body))
    assert isinstance(made, Annotation) and made.position is not None
    assert made.position.start == text.content.rindex("twice") and made.color == AnnotationColor.YELLOW
    note = ok(create_annotation.sync(text.id, client=client, body=AnnotationCreate(note="Whole card.")))
    listed = ok(list_card_annotations.sync(text.id, client=client))
    assert isinstance(listed, AnnotationList) and [a.id for a in listed.items] == [made.id, note.id]
    page = ok(list_annotations.sync(client=client, card_id=text.id, color=AnnotationColor.YELLOW))
    assert isinstance(page, AnnotationPage) and [a.id for a in page.items] == [made.id]
    changed = ok(update_annotation.sync(made.id, client=client, body=AnnotationUpdate(note=None, color=None)))
    assert changed.note is None and changed.color is None
    assert ok(get_annotation.sync(made.id, client=client)).quote == "twice"
    missing = create_annotation.sync_detailed(
        text.id, client=client, body=AnnotationCreate(quote="spring tide")
    )
    refused(missing, 400, "QUOTE_NOT_FOUND")
    assert delete_annotation.sync_detailed(note.id, client=client).status_code == 204


def shares_and_feeds(client: AuthenticatedClient, base_url: str, made: dict[str, Card]) -> None:
    """A smart folder shared by link (its page and feeds opened without credentials), and a
    feed followed; the changes feed, asked for them by name, gives the shares' and the
    subscription's tombstones (and never a share's token)."""
    start = ok(list_changes.sync(client=client, cursor="latest")).page_info.next_cursor
    smart = ok(create_folder.sync(client=client, body=FolderCreate(name="Smart links", query="type:link")))
    assert smart.kind.value == "smart" and smart.query == "type:link" and smart.card_count >= 1
    refused(
        add_folder_cards.sync_detailed(smart.id, client=client, body=CardIdList(card_ids=[made["quote"].id])),
        409,
        "SMART_FOLDER",
    )
    shared = ok(create_share.sync(client=client, body=ShareCreate(folder_id=smart.id, title="Links")))
    assert isinstance(shared, ShareCreated) and shared.folder_id == smart.id and not shared.include_notes
    origin = base_url.removesuffix("/v1")
    with httpx.Client(base_url=origin) as anyone:  # no credentials
        for link in (shared.url, shared.feed_url, shared.json_feed_url):
            assert anyone.get(urlsplit(link).path).status_code == 200
    card_share = ok(create_share.sync(client=client, body=ShareCreate(card_id=made["quote"].id)))
    changed = ok(update_share.sync(card_share.id, client=client, body=ShareUpdate(include_notes=True)))
    assert isinstance(changed, Share) and changed.include_notes and changed.card_id == made["quote"].id
    assert ok(get_share.sync(shared.id, client=client)).title == "Links"
    page = ok(list_shares.sync(client=client))
    assert isinstance(page, SharePage) and [s.id for s in page.items][:2] == [card_share.id, shared.id]
    for share_id in (shared.id, card_share.id):
        assert delete_share.sync_detailed(share_id, client=client).status_code == 204
    refused(get_share.sync_detailed(shared.id, client=client), 404, "NOT_FOUND")
    followed = ok(
        create_subscription.sync(
            client=client, body=SubscriptionCreate(url="https://feeds.example.com/sdk.xml", tags=["feeds"])
        )
    )
    assert isinstance(followed, Subscription) and followed.entries_saved == 0 and followed.tags == ["feeds"]
    again = ok(update_subscription.sync(followed.id, client=client, body=SubscriptionUpdate(tags=[])))
    assert again.tags == [] and ok(get_subscription.sync(followed.id, client=client)).id == followed.id
    listed = ok(list_subscriptions.sync(client=client))
    assert isinstance(listed, SubscriptionPage) and followed.id in [s.id for s in listed.items]
    assert delete_subscription.sync_detailed(followed.id, client=client).status_code == 204
    named = [ChangeTypeFilter.SHARE, ChangeTypeFilter.SUBSCRIPTION]
    told = ok(list_changes.sync(client=client, cursor=start, types=named))
    assert {(c.type_, c.id, c.action) for c in told.items} == {
        (ChangeType.SHARE, shared.id, ChangeAction.DELETE),
        (ChangeType.SHARE, card_share.id, ChangeAction.DELETE),
        (ChangeType.SUBSCRIPTION, followed.id, ChangeAction.DELETE),
    }
    assert all(c.share is None and c.subscription is None for c in told.items)
    assert delete_folder.sync_detailed(smart.id, client=client).status_code == 204


def trash_and_archive(client: AuthenticatedClient, made: dict[str, Card]) -> None:
    archived = ok(archive_card.sync(made["palette"].id, client=client))
    assert (
        isinstance(archived, ExtendedCard) and archived.is_archived and isinstance(archived.archived_at, int)
    )
    assert made["palette"].id not in walk(lambda cursor: list_cards.sync(client=client, cursor=cursor))
    only = walk(lambda cursor: list_cards.sync(client=client, archived=ArchivedFilter.ONLY, cursor=cursor))
    assert only == [made["palette"].id]
    assert ok(unarchive_card.sync(made["palette"].id, client=client)).archived_at is None

    for name in ("image", "video", "audio"):
        moved = ok(trash_card.sync(made[name].id, client=client))
        assert moved.is_deleted is True
    page = ok(list_trash.sync(client=client))
    assert len(page.items) == 3 and all(isinstance(item.purge_at, int) for item in page.items)
    assert ok(restore_card.sync(made["image"].id, client=client)).is_deleted is False
    assert delete_card.sync_detailed(made["video"].id, client=client).status_code == 204
    emptied = ok(empty_trash.sync(client=client))
    assert isinstance(emptied, EmptyTrashResult) and emptied.deleted_count == 1


def synced(client: AuthenticatedClient) -> None:
    """A client keeping a copy of the account: the whole feed replayed into a dictionary holds
    exactly the cards a full listing finds (Trash and archive included), each as it is now."""
    copy: dict[str, ExtendedCard] = {}
    cursor: str | Unset = UNSET
    while True:
        page = ok(list_changes.sync(client=client, cursor=cursor, limit=7))
        assert isinstance(page, ChangePage) and isinstance(page.page_info.next_cursor, str)
        for change in page.items:
            if change.type_ != ChangeType.CARD:
                continue
            if change.action == ChangeAction.UPSERT:
                assert isinstance(change.card, ExtendedCard) and change.card.id == change.id
                copy[change.id] = change.card
            else:
                assert change.card is None
                copy.pop(change.id, None)
        cursor = page.page_info.next_cursor
        if not page.page_info.has_more:
            break
    listed = walk(
        lambda cursor: list_cards.sync(client=client, archived=ArchivedFilter.INCLUDE, cursor=cursor)
    )
    in_trash = [item.id for item in ok(list_trash.sync(client=client)).items]
    assert sorted(copy) == sorted(listed + in_trash)
    for card_id in listed[:3]:
        assert copy[card_id].content == ok(get_extended_card.sync(card_id, client=client)).content
    latest = ok(list_changes.sync(client=client, cursor="latest"))
    assert latest.items == [] and latest.page_info.has_more is False
    made_up = list_changes.sync_detailed(client=client, cursor="WzBd.AAAAAAAAAAAAAAAAAAAAAA")
    refused(made_up, 400, "INVALID_CURSOR")


def webhooks(client: AuthenticatedClient) -> None:
    """An endpoint made, pinged, listed with its deliveries, rotated, disabled and deleted."""
    body = WebhookCreate(url="https://hooks.example.com/cardvault", events=[WebhookEventFilter.CARD_CREATED])
    made = ok(create_webhook.sync(client=client, body=body))
    assert isinstance(made, WebhookCreated) and made.secret.startswith("whsec_")
    hook = made.webhook
    assert isinstance(hook, Webhook) and hook.enabled and hook.events == [WebhookEventFilter.CARD_CREATED]
    assert hook.disabled_reason is None
    listed = ok(list_webhooks.sync(client=client))
    assert isinstance(listed, WebhookList) and [w.id for w in listed.items] == [hook.id]
    ping = ok(test_webhook.sync(hook.id, client=client))
    assert isinstance(ping, WebhookDelivery) and ping.event == "ping" and ping.sequence is None
    page = ok(list_webhook_deliveries.sync(hook.id, client=client))
    assert isinstance(page, WebhookDeliveryPage) and page.items[0].id == ping.id
    assert page.items[0].status in (WebhookDeliveryStatus.PENDING, WebhookDeliveryStatus.FAILED)
    again = ok(retry_webhook_delivery.sync(hook.id, ping.id, client=client))
    assert again.id == ping.id and again.status == WebhookDeliveryStatus.PENDING
    rotated = ok(rotate_webhook_secret.sync(hook.id, client=client))
    assert rotated.secret != made.secret and isinstance(rotated.webhook.previous_secret_expires_at, int)
    named = [WebhookEventFilter.SHARE_CREATED, WebhookEventFilter.SUBSCRIPTION_DELETED]
    narrowed = ok(update_webhook.sync(hook.id, client=client, body=WebhookUpdate(events=named)))
    assert narrowed.events == named
    every = WebhookUpdate(enabled=False, events=[WebhookEventFilter.ALL_EVENTS])
    off = ok(update_webhook.sync(hook.id, client=client, body=every))
    assert off.enabled is False and off.disabled_reason == WebhookDisabledReason.USER
    assert off.events == [WebhookEventFilter.ALL_EVENTS] and WebhookEventFilter.ALL_EVENTS.value == "*"
    assert ok(get_webhook.sync(hook.id, client=client)).disabled_at == off.disabled_at
    error = refused(
        retry_webhook_delivery.sync_detailed(hook.id, ping.id, client=client), 409, "WEBHOOK_DISABLED"
    )
    assert error.details is not None and error.details.reason == "USER"
    assert delete_webhook.sync_detailed(hook.id, client=client).status_code == 204
    refused(get_webhook.sync_detailed(hook.id, client=client), 404, "NOT_FOUND")


def errors(client: AuthenticatedClient, base_url: str, made: dict[str, Card]) -> None:
    error = refused(list_cards.sync_detailed(client=client, cursor="not-a-cursor"), 400, "INVALID_CURSOR")
    assert error.details is None
    error = refused(create_card.sync_detailed(client=client, body=CardCreate(tags=[" "])), 400, "INVALID_TAG")
    assert error.details is not None and error.details.tag == " "
    refused(get_card.sync_detailed("crd_missing", client=client), 404, "NOT_FOUND")
    anonymous = AuthenticatedClient(base_url=base_url, token="cvk_notakey")
    refused(get_card.sync_detailed(made["text"].id, client=anonymous), 401, "INVALID_API_KEY")
    refused(delete_card.sync_detailed(made["text"].id, client=client), 409, "CARD_NOT_IN_TRASH")
    ok(create_folder.sync(client=client, body=FolderCreate(name="Twice")))
    error = refused(
        create_folder.sync_detailed(client=client, body=FolderCreate(name="twice")), 409, "FOLDER_EXISTS"
    )
    assert error.details is not None and error.details.name == "twice"
    # A retry with the same Idempotency-Key gets the first answer back, not a second card.
    retried = create_card.sync_detailed(
        client=client, body=CardCreate(content="once"), idempotency_key="sdk-1"
    )
    again = create_card.sync_detailed(client=client, body=CardCreate(content="once"), idempotency_key="sdk-1")
    assert retried.status_code == again.status_code == 200 and again.content == retried.content
    assert again.headers["Idempotent-Replayed"] == "true" and "RateLimit-Policy" in retried.headers
    reused = create_card.sync_detailed(
        client=client, body=CardCreate(content="twice"), idempotency_key="sdk-1"
    )
    refused(reused, 422, "IDEMPOTENCY_KEY_REUSED")
    once = ok(retried.parsed)
    assert isinstance(once, CardCreated) and once.card.type_ == CardType.TEXT


def api_keys(client: AuthenticatedClient, base_url: str) -> None:
    """A read-only key made, used, refused a write, listed and revoked."""
    made = ok(create_api_key.sync(client=client, body=ApiKeyCreate(name="SDK reader", scopes=[Scope.READ])))
    assert isinstance(made, ApiKeyCreated) and made.key.startswith("cvk_")
    assert made.api_key.scopes == [Scope.READ] and made.api_key.last_chars == made.key[-4:]
    assert made.api_key.name == "SDK reader" and made.api_key.last_used_at is None
    with AuthenticatedClient(base_url=base_url, token=made.key) as reader:
        assert isinstance(list_cards.sync(client=reader), CardPage)
        denied = create_card.sync_detailed(client=reader, body=CardCreate(content="not mine to write"))
        error = refused(denied, 403, "INSUFFICIENT_SCOPE")
        assert error.details is not None and error.details.scope == Scope.WRITE
        assert error.details.held_scopes == [Scope.READ]
    listed = ok(list_api_keys.sync(client=client))
    assert isinstance(listed, ApiKeyList) and listed.items[0].id == made.api_key.id
    assert isinstance(listed.items[0].last_used_at, int) and made.key not in str(listed.to_dict())
    assert revoke_api_key.sync_detailed(made.api_key.id, client=client).status_code == 204
    refused(revoke_api_key.sync_detailed(made.api_key.id, client=client), 404, "NOT_FOUND")
    assert made.api_key.id not in [item.id for item in ok(list_api_keys.sync(client=client)).items]


def bulk(client: AuthenticatedClient) -> None:
    """Many cards at once: made, tagged (one id missing), trashed atomically (refused as a
    whole), then trashed and deleted; each item answers alone."""

    def run(operation: CardBulkOperation, items: list[CardBulkItem], atomic: bool = False) -> list[int]:
        body = CardBulkRequest(operation=operation, items=items, atomic=atomic)
        result = ok(bulk_cards.sync(client=client, body=body))
        assert isinstance(result, CardBulkResult)
        assert [r.index for r in result.results] == list(range(len(items)))
        return [r.status for r in result.results]

    body = CardBulkRequest(
        operation=CardBulkOperation.CREATE,
        items=[CardBulkItem(content=f"bulk {i}", tags=["bulk"]) for i in range(3)],
    )
    made = ok(bulk_cards.sync(client=client, body=body))
    assert isinstance(made, CardBulkResult) and all(isinstance(r.card, Card) for r in made.results)
    ids = [r.card_id for r in made.results if isinstance(r.card_id, str)]
    assert len(ids) == 3
    tag = [CardBulkItem(card_id=card_id, tags=["more"]) for card_id in [*ids, "crd_missing"]]
    assert run(CardBulkOperation.TAG, tag) == [200, 200, 200, 404]
    both = walk(lambda cursor: list_cards.sync(client=client, tag=["bulk", "more"], cursor=cursor))
    assert sorted(both) == sorted(ids)
    trash = [CardBulkItem(card_id=card_id) for card_id in [*ids, "crd_missing"]]
    assert run(CardBulkOperation.TRASH, trash, atomic=True) == [424, 424, 424, 404]
    assert run(CardBulkOperation.TRASH, trash[:3]) == [200, 200, 200]
    assert run(CardBulkOperation.DELETE, trash[:3]) == [204, 204, 204]
    assert walk(lambda cursor: list_cards.sync(client=client, tag=["bulk"], cursor=cursor)) == []


async def _assistant(mcp_url: str, key: str, card_id: str) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"listCards", "getExtendedCard", "createCard", "search", "fetch"} <= names, names
        fetched = await session.call_tool("fetch", {"id": card_id})
        assert not fetched.is_error and fetched.structured_content["id"] == card_id, fetched.content
        extended = await session.call_tool("getExtendedCard", {"cardId": card_id})
        assert extended.structured_content["id"] == card_id
        refused_call = await session.call_tool("listCards", {"limit": 0})
        assert refused_call.is_error and refused_call.structured_content["code"] == "INVALID_INPUT"


def assistant(base_url: str, key: str, made: dict[str, Card]) -> None:
    """The MCP part: the same account's cards as tools, through the official SDK's client."""
    card = next(iter(made.values()))
    anyio.run(_assistant, base_url.removesuffix("/v1") + "/mcp", key, card.id)


def main(base_url: str, key: str) -> None:
    health = ok(get_health.sync(client=Client(base_url=base_url)))
    assert isinstance(health, Health) and health.status == HealthStatus.OK
    ready = ok(get_readiness.sync(client=Client(base_url=base_url)))
    assert isinstance(ready, Readiness) and ready.status == ReadinessStatus.READY
    assert {check.name.value for check in ready.checks} >= {"database", "storage"}
    assert all(check.status == ReadinessCheckStatus.OK and check.latency_ms >= 0 for check in ready.checks)
    with AuthenticatedClient(base_url=base_url, token=key, raise_on_unexpected_status=True) as client:
        made = cards_and_lists(client)
        assistant(base_url, key, made)
        replaced_image(client, made["link"])
        captioned(client, made["audio"])
        tags(client, made)
        folders(client, made)
        annotated(client)
        shares_and_feeds(client, base_url, made)
        trash_and_archive(client, made)
        exported(client)
        imported(client)
        synced(client)
        webhooks(client)
        errors(client, base_url, made)
        api_keys(client, base_url)
        bulk(client)
    print("scenario passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
