"""Share links: a card or a folder (a smart one included) that anyone holding its link can read.

The link's token is a credential (cardvault.domain.auth.credentials: ``cvh_``, 178 random bits
and a checksum); only its SHA-256 is stored, so the link is shown once, when the share is made.
A share reads as missing (NotFound) the moment it is deleted, its card goes to Trash, or its
folder is deleted (the row goes with the folder or the card); past ``expires_at`` it answers
ShareExpired. What it shows is chosen here (``SharedCard``): never notes unless the share says
so, never processing state, folders or anything else of the account."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, String, bindparam, func, select, true
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials
from cardvault.domain.cards import listing
from cardvault.domain.cards.reading import CardView, get_card_view
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import CardInTrash, InvalidInput, NotFound, ShareExpired
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card, Folder, FolderCard, Share, get_owned

TOKEN_PREFIX = credentials.SHARE
_UNSET = object()


@dataclasses.dataclass(frozen=True)
class Target:
    """What a share shows: its card's id or its folder's id (one of them)."""

    card_id: str | None
    folder_id: str | None


def target_of(session: Session, share: Share) -> Target:
    if share.card_pk is not None:
        card_id = session.scalar(select(Card.id).where(Card.pk == share.card_pk))
        return Target(card_id, None)
    return Target(None, share.folder_id)


def _check_expiry(expires_at: int | None) -> None:
    if expires_at is not None and expires_at <= now_ms():
        problem = {"location": "body", "field": "expiresAt", "message": "is not in the future"}
        raise InvalidInput("expiresAt must be in the future.", details={"fields": [problem]})


def create_share(
    session: Session,
    *,
    account_id: str,
    card_id: str | None = None,
    folder_id: str | None = None,
    title: str | None = None,
    include_notes: bool = False,
    expires_at: int | None = None,
) -> tuple[Share, str]:
    """Share one of the account's cards (outside Trash) or folders; the share and its token
    (shown this once). Another account's card or folder answers NotFound."""
    _check_expiry(expires_at)
    card_pk = None
    if card_id is not None:
        card = get_owned(session, Card, row_id=card_id, account_id=account_id)
        if card.deleted_at is not None:
            raise CardInTrash("The card is in Trash; restore it to share it.")
        card_pk = card.pk
    else:
        assert folder_id is not None  # the spec asks for one of them
        get_owned(session, Folder, row_id=folder_id, account_id=account_id)
    token = credentials.new_secret(TOKEN_PREFIX)
    now = now_ms()
    share = Share(
        id=new_id("shr"),
        account_id=account_id,
        card_pk=card_pk,
        folder_id=None if card_pk is not None else folder_id,
        token_hash=credentials.digest(token),
        title=title.strip() if title and title.strip() else None,
        include_notes=include_notes,
        expires_at=expires_at,
        created_at=now,
        updated_at=now,
    )
    session.add(share)
    session.flush()
    return share, token


def get_share(session: Session, *, account_id: str, share_id: str, for_update: bool = False) -> Share:
    """The account's share, or NotFound (also for another account's)."""
    return get_owned(session, Share, row_id=share_id, account_id=account_id, for_update=for_update)


def update_share(
    session: Session,
    *,
    account_id: str,
    share_id: str,
    title: str | object | None = _UNSET,
    include_notes: bool | None = None,
    expires_at: int | object | None = _UNSET,
) -> Share:
    """Change what is given (``title=None`` clears the title, ``expires_at=None`` the expiry)."""
    share = get_share(session, account_id=account_id, share_id=share_id, for_update=True)
    if title is not _UNSET:
        share.title = title.strip() if isinstance(title, str) and title.strip() else None
    if include_notes is not None:
        share.include_notes = include_notes
    if expires_at is not _UNSET:
        _check_expiry(expires_at if isinstance(expires_at, int) else None)
        share.expires_at = expires_at if isinstance(expires_at, int) else None
    share.updated_at = max(now_ms(), share.updated_at + 1)
    session.flush()
    return share


def delete_share(session: Session, *, account_id: str, share_id: str) -> None:
    """Revoke the share: its link answers 404 from the moment this commits."""
    session.delete(get_share(session, account_id=account_id, share_id=share_id, for_update=True))
    session.flush()


def open_share(session: Session, *, token: str) -> Share:
    """The live share a token opens: NotFound for a malformed, unknown or revoked token, a card
    in Trash or a deleted folder; ShareExpired past its expiry."""
    if not credentials.is_well_formed(token, TOKEN_PREFIX):
        raise NotFound("No such share.")
    share = session.scalar(select(Share).where(Share.token_hash == credentials.digest(token)))
    if share is None:
        raise NotFound("No such share.")
    if share.card_pk is not None:
        deleted = session.scalar(select(Card.deleted_at).where(Card.pk == share.card_pk))
        if deleted is not None:
            raise NotFound("No such share.")
    if share.expires_at is not None and share.expires_at <= now_ms():
        raise ShareExpired("This share has expired.")
    return share


@dataclasses.dataclass(frozen=True)
class Shared:
    """A page of what a share shows, newest first."""

    cards: list[CardView]
    next_cursor: str | None
    heading: str  # the share's title, else its folder's name, else the card's own title


def _folder_filter(session: Session, share: Share) -> listing.CardFilter:
    folder = session.get(Folder, share.folder_id)
    if folder is None:  # deleted in the meantime (the share goes with it)
        raise NotFound("No such share.")
    if folder.kind == "smart":
        return listing.CardFilter(q=folder.query or "", sort="newest")
    return listing.CardFilter(folders=(folder.id,), sort="newest")


def shared_cards(
    session: Session, share: Share, *, secret: str, limit: int, cursor: str | None = None
) -> Shared:
    """One page of the share's cards (a card share: its one card)."""
    if share.card_pk is not None:
        card_id = session.scalar(select(Card.id).where(Card.pk == share.card_pk))
        if card_id is None:
            raise NotFound("No such share.")
        view = get_card_view(session, account_id=share.account_id, card_id=card_id)
        return Shared([view], None, share.title or shown_title(view))
    filters = _folder_filter(session, share)
    folder = session.get(Folder, share.folder_id)
    page = listing.list_cards(
        session,
        account_id=share.account_id,
        secret=_cursor_secret(secret, share),
        filters=filters,
        limit=limit,
        cursor=cursor,
    )
    return Shared(page.cards, page.next_cursor, share.title or (folder.name if folder else "Shared cards"))


def _cursor_secret(secret: str, share: Share) -> str:
    """Cursors of one share's pages are of no use on another's."""
    return hashlib.sha256(f"{secret}:share:{share.id}".encode()).hexdigest()


def shared_card(session: Session, share: Share, card_id: str) -> CardView:
    """One card the share shows (for its picture or its file), or NotFound."""
    view = get_card_view(session, account_id=share.account_id, card_id=card_id)
    if view.deleted_at is not None:
        raise NotFound("No such card in this share.")
    if share.card_pk is not None:
        if view.pk != share.card_pk:
            raise NotFound("No such card in this share.")
        return view
    filters = _folder_filter(session, share)
    if filters.folders:
        held = session.scalar(
            select(FolderCard.card_pk).where(
                FolderCard.folder_id == filters.folders[0], FolderCard.card_pk == view.pk
            )
        )
        if held is None:
            raise NotFound("No such card in this share.")
        return view
    if not _smart_match(session, share.account_id, filters, view):
        raise NotFound("No such card in this share.")
    return view


def _smart_match(session: Session, account_id: str, filters: listing.CardFilter, view: CardView) -> bool:
    """Whether the card matches the smart folder's query now."""
    statement, values = listing.first_matches(session, account_id, filters)
    pks = {row[0] for row in session.connection().execute(statement, values)}
    return view.pk in pks


def version_of(session: Session, share: Share, shown: int) -> tuple[int, str, int]:
    """What the share's feed ETag and Last-Modified are made of: the latest change of the
    ``shown`` newest cards a feed holds, which cards they are (a digest of them), and the
    share's and its folder's own changes. Cheap: the first ``shown`` matches in list order
    (an index's), never every card."""
    if share.card_pk is not None:
        updated = session.scalar(select(Card.updated_at).where(Card.pk == share.card_pk)) or 0
        return max(updated, share.updated_at), str(share.card_pk), share.updated_at
    folder = session.get(Folder, share.folder_id)
    if folder is None:
        raise NotFound("No such share.")
    filters = _folder_filter(session, share)
    if filters.folders:  # a manual folder: its newest cards, read along its index
        rows = session.execute(
            select(Card.pk, Card.updated_at)
            .join(FolderCard, FolderCard.card_pk == Card.pk)
            .where(FolderCard.folder_id == folder.id, Card.deleted_at.is_(None), Card.archived_at.is_(None))
            .order_by(FolderCard.card_created_at.desc(), FolderCard.card_pk.desc())
            .limit(shown)
        ).all()
        pks, latest = [pk for pk, _ in rows], max((at for _, at in rows), default=None)
    else:
        statement, values = listing.first_matches(session, share.account_id, filters, shown)
        pks = [row[0] for row in session.connection().execute(statement, values)]
        latest = session.scalar(select(func.max(Card.updated_at)).where(Card.pk.in_(pks))) if pks else None
    changed = max(latest or 0, share.updated_at, folder.updated_at)
    held = hashlib.sha256(",".join(map(str, pks)).encode()).hexdigest()[:16]
    return changed, held, folder.version


@dataclasses.dataclass(frozen=True)
class FeedVersion:
    """What a feed's validators are made of (version_of's three), with the share's own part."""

    id: str  # the share's
    created_at: int
    updated_at: int
    include_notes: bool
    changed: int
    held: str
    version: int
    # A smart folder's share: its version (the listing's statements) is left to
    # smart_feed_version, once the share's rate limit has counted the request.
    smart: bool = False


def _feed_version_statement() -> Any:
    """The statement of feed_version, built once (its parameters: ``digest`` and ``shown``)."""
    digest, shown = bindparam("digest", type_=String), bindparam("shown", type_=Integer)
    folder_of = select(Share.folder_id).where(Share.token_hash == digest).scalar_subquery()
    newest = (
        select(Card.pk, Card.updated_at, FolderCard.card_created_at, FolderCard.card_pk.label("order_pk"))
        .join(FolderCard, FolderCard.card_pk == Card.pk)
        .where(FolderCard.folder_id == folder_of, Card.deleted_at.is_(None), Card.archived_at.is_(None))
        .order_by(FolderCard.card_created_at.desc(), FolderCard.card_pk.desc())
        .limit(shown)
        .subquery()
    )
    shared_card = select(Card.deleted_at, Card.updated_at).where(Card.pk == Share.card_pk)
    return (
        select(
            Share.id,
            Share.card_pk,
            Share.expires_at,
            Share.created_at,
            Share.updated_at,
            Share.include_notes,
            Folder.kind,
            Folder.updated_at,
            Folder.version,
            shared_card.with_only_columns(Card.deleted_at).scalar_subquery(),
            shared_card.with_only_columns(Card.updated_at).scalar_subquery(),
            newest.c.pk,
            newest.c.updated_at,
        )
        .outerjoin(Folder, Folder.id == Share.folder_id)
        .outerjoin(newest, true())
        .where(Share.token_hash == digest)
        .order_by(newest.c.card_created_at.desc(), newest.c.order_pk.desc())
    )


_FEED_VERSION = _feed_version_statement()


def feed_version(session: Session, *, token: str, shown: int) -> FeedVersion:
    """open_share and version_of for a feed reader's poll, in one statement for the share of a
    card or of a manual folder: the share, its card's or its folder's state, and the ``shown``
    newest cards of the folder (a bounded walk of one index). A smart folder's comes back
    ``smart``, its version left to smart_feed_version. Raises as open_share does, and NotFound
    for a deleted folder."""
    if not credentials.is_well_formed(token, TOKEN_PREFIX):
        raise NotFound("No such share.")
    values = {"digest": credentials.digest(token), "shown": shown}
    rows = session.connection().execute(_FEED_VERSION, values).all()
    if not rows:
        raise NotFound("No such share.")
    share_id, card_pk, expires_at, created_at, updated_at, include_notes = rows[0][:6]
    kind, folder_updated, folder_version, card_deleted, card_updated = rows[0][6:11]
    if card_deleted is not None:
        raise NotFound("No such share.")
    if expires_at is not None and expires_at <= now_ms():
        raise ShareExpired("This share has expired.")
    if card_pk is not None:
        changed, held, version = max(card_updated or 0, updated_at), str(card_pk), updated_at
    elif kind is None:  # deleted in the meantime (the share goes with it)
        raise NotFound("No such share.")
    elif kind == "smart":
        return FeedVersion(share_id, created_at, updated_at, include_notes, 0, "", 0, smart=True)
    else:
        pks = [row[11] for row in rows if row[11] is not None]
        latest = max((row[12] for row in rows if row[11] is not None), default=0)
        changed = max(latest, updated_at, folder_updated)
        held, version = hashlib.sha256(",".join(map(str, pks)).encode()).hexdigest()[:16], folder_version
    return FeedVersion(share_id, created_at, updated_at, include_notes, changed, held, version)


def smart_feed_version(session: Session, found: FeedVersion, *, token: str, shown: int) -> FeedVersion:
    """A smart folder's share's FeedVersion made whole: version_of, by the listing."""
    if not found.smart:
        return found
    changed, held, version = version_of(session, open_share(session, token=token), shown)
    return dataclasses.replace(found, changed=changed, held=held, version=version, smart=False)


def shown_title(view: CardView | Any) -> str:
    """A card's title as a share shows it: its page's title, its file's name, its link's host,
    or its text's first line."""
    meta: dict[str, Any] = view.link_meta or {}
    for value in (view.metadata_title, meta.get("title"), view.file_name):
        if isinstance(value, str) and value.strip():
            return _shortened(value.strip())
    if view.type == "link" and view.url:
        return _shortened(view.url)
    lines: Sequence[str] = (view.content or "").strip().splitlines()
    if lines:
        return _shortened(lines[0].lstrip("# ").strip() or lines[0])
    return f"{view.type.capitalize()} card"


def _shortened(title: str) -> str:
    return title if len(title) <= 120 else title[:119] + "…"
