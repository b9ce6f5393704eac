"""The page a card's ``appUrl`` opens: the card as its signed-in owner sees it.

Markdown (text cards) is rendered by markdown-it with raw HTML off: tags a card holds are shown
as text, never parsed; links and images keep only http(s), mailto and relative URLs (its
default link check refuses ``javascript:``, ``vbscript:``, ``file:`` and most ``data:``). The
page's Content-Security-Policy allows no script at all, in case anything got through.

Annotations: each quote placed in a text card's own text is marked in it (``<mark>``: two
private-use characters stand for the tags while markdown-it renders, then become them), and
every annotation is listed under the text with its note."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

import anyio.to_thread
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from cardvault.domain import folders
from cardvault.domain.annotations import records as annotation_records
from cardvault.domain.cards import editing
from cardvault.domain.errors import NotFound
from cardvault.domain.ids import is_well_formed
from cardvault.domain.models import Account, Annotation
from cardvault.handlers import card_json
from cardvault.handlers.http import runtime
from cardvault.handlers.web import pages

# CommonMark with tables and strikethrough; "js-default" turns raw HTML off.
_markdown = MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False})
# markdown-it spends about 50 µs on each "[" (it looks for the link's end): 512 KiB of them
# would hold a thread for 26 s. Past these, a text is shown as plain text (escaped, wrapped).
MAX_MARKDOWN_CHARACTERS = 64 * 1024
MAX_MARKDOWN_BRACKETS = 1000


def render_markdown(text: str) -> Markup:
    """A card's Markdown as safe HTML; a text too long or too bracket-heavy to render cheaply
    is shown as plain text."""
    if len(text) > MAX_MARKDOWN_CHARACTERS or text.count("[") > MAX_MARKDOWN_BRACKETS:
        return Markup('<pre class="plain">') + escape(text) + Markup("</pre>")
    return Markup(_markdown.render(text))  # noqa: S704 - markdown-it escapes; raw HTML off


_OPEN, _CLOSE = "\ue001", "\ue002"  # where a mark opens and closes, while markdown-it renders


def marked(content: str, offset: int, annotations: list[Annotation]) -> str:
    """The content (which starts at ``offset`` of the card's text) with each quote placed in it
    between the two mark characters: a quote within one line, none overlapping another (the
    first placed wins), so each mark closes where it opened."""
    if _OPEN in content or _CLOSE in content:
        return content
    spans: list[tuple[int, int]] = []
    for annotation in annotations:
        if annotation.source != "text" or annotation.start is None or annotation.end is None:
            continue
        start, end = annotation.start - offset, annotation.end - offset
        if start < 0 or end > len(content) or start >= end or "\n" in content[start:end]:
            continue
        if all(end <= s or start >= e for s, e in spans):
            spans.append((start, end))
    for start, end in sorted(spans, reverse=True):
        content = content[:start] + _OPEN + content[start:end] + _CLOSE + content[end:]
    return content


def _with_marks(html: Markup) -> Markup:
    return Markup(str(html).replace(_OPEN, "<mark>").replace(_CLOSE, "</mark>"))  # noqa: S704 - fixed tags


def _swatch(hex_value: str) -> str:
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24">'
        f'<rect width="24" height="24" fill="{hex_value}"/></svg>'
    )
    return "data:image/svg+xml," + quote(svg)


def _page(rt: runtime.Runtime, account_id: str, card_id: str, csrf: str) -> Response:
    """The card's page, read and rendered in a worker thread (a long text takes a while)."""
    with rt.db.transaction(write=False) as session:
        card = card_json.extended(session, editing.get_card(session, account_id=account_id, card_id=card_id))
        folder_names = folders.folder_names(session, account_id=account_id, folder_ids=card["folderIds"])
        account = session.get(Account, account_id)
        annotations = list(annotation_records.of_card(session, account_id=account_id, card_id=card_id))
    heading, content = _heading(card)
    whole = card.get("content") or ""
    if content and whole.endswith(content):
        content = marked(content, len(whole) - len(content), annotations)
    return pages.render(
        "card.html",
        title=heading,
        heading=heading,
        card=card,
        folders=folder_names,
        content_html=_with_marks(render_markdown(content)) if content and content.strip() else None,
        annotations=annotations,
        image_url=card.get("compactUrl") or card.get("linkPreviewImageUrl") or card.get("thumbnailUrl"),
        image_alt=card.get("fileName") or card.get("metadataTitle") or "",
        colors=[(c["hex"], c.get("name") or "", _swatch(c["hex"])) for c in card.get("colors") or []],
        signed_in_as=account.name if account else "",
        csrf=csrf,
    )


_MARKDOWN_HEADING = re.compile(r"#{1,6}[ \t]+(.*)")  # closing #s are stripped after: no backtracking
_TYPE_HEADINGS = {"palette": "Palette", "quote": "Quote"}


def _heading(card: dict[str, Any]) -> tuple[str, str | None]:
    """The page's title, and the text content left to render under it: a text that opens with
    a Markdown heading gives the title (and is rendered without it); other texts are titled by
    their first line."""
    content = card.get("content") if card["type"] in ("text", "quote") else None
    for field in ("metadataTitle", "linkTitle", "fileName"):
        if card.get(field):
            return str(card[field]), content
    if card["type"] in _TYPE_HEADINGS:
        return _TYPE_HEADINGS[card["type"]], content
    if card["type"] == "link" and card.get("url"):
        try:
            return urlsplit(card["url"]).netloc or "Link", content
        except ValueError:  # the API keeps URLs urlsplit cannot read (such as https://[x/)
            return "Link", content
    lines = (content or "").strip().splitlines()
    if not lines:
        return f"{card['type'].capitalize()} card", content
    opening = _MARKDOWN_HEADING.fullmatch(lines[0].strip()[:1000])
    if opening and opening.group(1).rstrip(" \t#"):
        return _shortened(opening.group(1).rstrip(" \t#")), "\n".join(lines[1:])
    return _shortened(lines[0].strip()), content


def _shortened(title: str) -> str:
    return title if len(title) <= 80 else title[:79] + "…"


async def card_page(request: Request) -> Response:
    """GET /cards/{card_id}: the card for its owner; the sign-in page for anyone signed out;
    another account's card answers exactly like a missing one."""
    card_id = request.path_params["card_id"]
    account_id = await pages.signed_in_account(request)
    if account_id is None:
        return pages.redirect("/sign-in?next=" + quote(f"/cards/{card_id}", safe=""))
    csrf, fresh = pages.csrf_token(request)
    rt = runtime.current()
    try:
        if not is_well_formed(card_id):
            raise NotFound("No such card.")
        page = await anyio.to_thread.run_sync(_page, rt, account_id, card_id, csrf)
    except NotFound:
        return pages.with_csrf_cookie(
            pages.render(
                "message.html",
                404,
                title="No such card",
                message="This card does not exist, or it is not in the account you are signed in to.",
                alert=False,
                link=None,
                link_text="",
                signed_in_as=None,
                csrf=csrf,
            ),
            fresh,
        )
    return pages.with_csrf_cookie(page, fresh)
