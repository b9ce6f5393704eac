"""Folders: named, coloured groups of cards. A card can be in several folders.

Limits: the account's folders (CARDVAULT_MAX_FOLDERS, given by the caller), 10,000 cards per
folder (cards in Trash count, as they come back on restore), 50 folders per card, 100 card ids
per request (in the spec).
Adding or removing cards is per card: one bad id never fails the others. A folder made with a
``query`` is of kind ``smart``: it holds whatever the query matches now (its listing is
cardvault.domain.cards.smart's), and cards are never put in or taken out of it by hand."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cardvault.domain import changes, versions
from cardvault.domain.clock import now_ms
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import FolderExists, FolderLimitReached, InvalidInput, InvalidQuery, SmartFolder
from cardvault.domain.ids import is_well_formed, new_id
from cardvault.domain.models import Card, Folder, FolderCard, Share, Subscription, get_owned
from cardvault.domain.names import tag_key
from cardvault.domain.search.query import parse

PALETTE = ("red", "orange", "yellow", "green", "teal", "blue", "indigo", "purple", "pink", "brown", "gray")
MAX_CARDS_PER_FOLDER = 10_000
MAX_FOLDERS_PER_CARD = 50
_UNSET = object()


@dataclasses.dataclass(frozen=True)
class Membership:
    """What became of each card id of an add or remove request."""

    updated: list[str]
    failed: list[str]
    limited: list[str]


def _save(session: Session, folder: Folder, **values: object) -> None:
    """Set the values and write them in a savepoint; a taken name becomes FolderExists."""
    try:
        with session.begin_nested():
            for name, value in values.items():
                setattr(folder, name, value)
            session.add(folder)
            session.flush()
    except IntegrityError:
        taken = values.get("name", folder.name)
        raise FolderExists(f"A folder named {taken!r} exists.", details={"name": taken}) from None


def _checked_query(session: Session, account_id: str, query: str) -> str:
    """A smart folder's query as it is kept: parsed as ``q`` is (InvalidQuery for what names
    nothing), naming no other smart folder, and holding something to match."""
    parsed = parse(query)
    if not (parsed.has_words or parsed.qualifiers or parsed.excluded):
        problem = {"location": "body", "field": "query", "message": "holds nothing to match"}
        raise InvalidInput("The query holds nothing to match.", details={"fields": [problem]})
    for qualifier in parsed.qualifiers:
        if qualifier.name != "folder":
            continue
        value = str(qualifier.value)
        smart = session.scalar(
            select(Folder.id).where(
                Folder.account_id == account_id,
                Folder.kind == "smart",
                (Folder.id == value) | (Folder.name_key == tag_key(value)),
            )
        )
        if smart is not None:
            raise InvalidQuery(
                f"folder:{value} is a smart folder; a smart folder's query cannot name one.", position=0
            )
    return query.strip()


def create_folder(
    session: Session,
    *,
    account_id: str,
    name: str,
    color: str | None = None,
    max_folders: int | None = None,
    query: str | None = None,
) -> Folder:
    """Create a folder; its name is unique in the account ignoring case. ``max_folders``: the
    folders the account may hold (FolderLimitReached past it; counted, as an account's folders
    are few, and two racing for the last room may both pass)."""
    if max_folders is not None:
        held = session.scalar(select(func.count()).select_from(Folder).where(Folder.account_id == account_id))
        if (held or 0) >= max_folders:
            raise FolderLimitReached(max_folders)
    now = now_ms()
    name = name.strip()
    folder = Folder(
        id=new_id("fld"),
        account_id=account_id,
        name=name,
        name_key=tag_key(name),
        color=color,
        kind="manual" if query is None else "smart",
        query=None if query is None else _checked_query(session, account_id, query),
        created_at=now,
        updated_at=now,
    )
    session.add(folder)
    _save(session, folder)
    return folder


def get_folder(session: Session, *, account_id: str, folder_id: str, for_update: bool = False) -> Folder:
    """Return the account's folder, or raise NotFound (also for another account's)."""
    return get_owned(session, Folder, row_id=folder_id, account_id=account_id, for_update=for_update)


def update_folder(
    session: Session,
    *,
    account_id: str,
    folder_id: str,
    name: str | None = None,
    color: str | object | None = _UNSET,
    query: str | None = None,
) -> Folder:
    """Rename or recolor a folder (``color=None`` clears the colour), or change a smart
    folder's query (a manual folder has none: InvalidInput)."""
    folder = get_folder(session, account_id=account_id, folder_id=folder_id, for_update=True)
    values: dict[str, object] = {}
    if query is not None:
        if folder.kind != "smart":
            problem = {"location": "body", "field": "query", "message": "only a smart folder has a query"}
            raise InvalidInput("Only a smart folder has a query.", details={"fields": [problem]})
        if (checked := _checked_query(session, account_id, query)) != folder.query:
            values["query"] = checked
    if name is not None and name.strip() != folder.name:
        values.update(name=name.strip(), name_key=tag_key(name.strip()))
    if color is not _UNSET and color != folder.color:
        values["color"] = color
    if values:
        _save(session, folder, **values, updated_at=max(now_ms(), folder.updated_at))
    return folder


def delete_folder(session: Session, *, account_id: str, folder_id: str) -> None:
    """Delete a folder; its cards are kept."""
    folder = get_folder(session, account_id=account_id, folder_id=folder_id, for_update=True)
    # Lock its cards in pk order before the cascade deletes their folder rows (the lock order in
    # cardvault.domain.db), as the Trash purge does from the cards' side.
    held = session.scalars(
        select(Card.id)
        .join(FolderCard, FolderCard.card_pk == Card.pk)
        .where(FolderCard.folder_id == folder.id)
        .order_by(Card.pk)
        .with_for_update(of=Card)
    ).all()
    # The database deletes the folder's shares and takes it from its subscriptions.
    shared = session.scalars(select(Share.id).where(Share.folder_id == folder.id)).all()
    followed = session.scalars(select(Subscription.id).where(Subscription.folder_id == folder.id)).all()
    session.delete(folder)
    changes.note(session, account_id=account_id, kind="card", ids=held)  # their folderIds
    changes.note(session, account_id=account_id, kind="share", ids=shared, action="delete")
    changes.note(session, account_id=account_id, kind="subscription", ids=followed)  # folderId null


def lock_folders(session: Session, *, account_id: str, folder_ids: Sequence[str]) -> None:
    """Lock the account's folders of these ids, in id order (the lock order in cardvault.domain.db)."""
    if folder_ids:
        session.scalars(
            select(Folder.id)
            .where(Folder.account_id == account_id, Folder.id.in_(sorted(set(folder_ids))))
            .order_by(Folder.id)
            .with_for_update()
        ).all()


def card_counts(session: Session, folder_ids: Sequence[str]) -> dict[str, int]:
    """How many cards outside Trash each folder holds."""
    if not folder_ids:
        return {}
    rows = session.execute(
        select(FolderCard.folder_id, func.count())
        .join(Card, Card.pk == FolderCard.card_pk)
        .where(FolderCard.folder_id.in_(folder_ids), Card.deleted_at.is_(None))
        .group_by(FolderCard.folder_id)
    ).all()
    counts = dict.fromkeys(folder_ids, 0)
    counts.update({folder_id: n for folder_id, n in rows})
    return counts


Counted = Callable[[Folder], int]  # a folder's cardCount (a smart folder's: cardvault.domain.cards)


def _manual_count(session: Session) -> Counted:
    return lambda folder: card_counts(session, [folder.id])[folder.id]


def etag(session: Session, folder: Folder, counted: Counted | None = None) -> str:
    """The folder's strong ETag as this transaction leaves it (its version and cardCount,
    cardvault.domain.versions; ``counted``: how its cardCount is counted)."""
    session.flush()  # raises the version of what the transaction changed
    return versions.folder_etag(folder.version, (counted or _manual_count(session))(folder))


def require(
    session: Session,
    *,
    account_id: str,
    folder_id: str,
    condition: versions.Condition | None,
    counted: Counted | None = None,
) -> None:
    """Check an If-Match condition against the folder's ETag, its row locked until the
    transaction ends (PreconditionFailed with the current ETag; NotFound for no such folder)."""
    if condition is not None:
        version = versions.locked_version(session, Folder, account_id=account_id, row_id=folder_id)
        count = (counted or _manual_count(session))(
            get_folder(session, account_id=account_id, folder_id=folder_id)
        )
        versions.check(versions.folder_etag(version, count), condition)


@dataclasses.dataclass(frozen=True)
class FolderPage:
    folders: list[Folder]
    next_cursor: str | None
    total: int


def list_folders(
    session: Session, *, account_id: str, secret: str, limit: int = 100, cursor: str | None = None
) -> FolderPage:
    """The account's folders by name (ignoring case), a page at a time."""
    mine = Folder.account_id == account_id
    total = session.scalar(select(func.count()).select_from(Folder).where(mine)) or 0
    query = select(Folder).where(mine).order_by(Folder.name_key, Folder.id)
    scope = f"folders:{account_id}"
    if cursor is not None:
        # The cursor holds the last folder's sort key and id, so renaming or deleting that
        # folder moves nothing: the next page starts where the last one ended.
        key, folder_id = decode_cursor(secret, cursor, scope=scope, size=2)
        query = query.where((Folder.name_key > key) | ((Folder.name_key == key) & (Folder.id > folder_id)))
    folders = list(session.scalars(query.limit(limit + 1)))
    next_cursor = None
    if len(folders) > limit:
        folders = folders[:limit]
        next_cursor = encode_cursor(secret, scope=scope, position=[folders[-1].name_key, folders[-1].id])
    return FolderPage(folders, next_cursor, total)


def _manual(folder: Folder) -> Folder:
    if folder.kind == "smart":
        raise SmartFolder(
            "A smart folder holds what its query matches: cards are not put in or taken out by hand."
        )
    return folder


def _cards_by_id(session: Session, account_id: str, card_ids: Sequence[str]) -> dict[str, Card]:
    """The account's cards among these ids, locked in pk order; malformed ids name none."""
    cards = session.scalars(
        select(Card)
        .where(Card.account_id == account_id, Card.id.in_([i for i in card_ids if is_well_formed(i)]))
        .order_by(Card.pk)
        .with_for_update()
    )
    return {card.id: card for card in cards}


def add_cards(session: Session, *, account_id: str, folder_id: str, card_ids: Sequence[str]) -> Membership:
    """Put cards in the folder. An id lands in ``failed`` when no card of the account outside
    Trash has it, in ``limited`` when the folder or the card is full, else in ``updated``
    (also when the card already was in the folder)."""
    folder = _manual(get_folder(session, account_id=account_id, folder_id=folder_id, for_update=True))
    cards = _cards_by_id(session, account_id, card_ids)
    present = set(session.scalars(select(FolderCard.card_pk).where(FolderCard.folder_id == folder.id)))
    room = MAX_CARDS_PER_FOLDER - len(present)
    now = now_ms()
    result = Membership([], [], [])
    for card_id in dict.fromkeys(card_ids):
        card = cards.get(card_id)
        if card is None or card.deleted_at is not None:
            result.failed.append(card_id)
        elif card.pk in present:
            result.updated.append(card_id)
        elif room <= 0 or len(card.folder_rows) >= MAX_FOLDERS_PER_CARD:
            result.limited.append(card_id)
        else:
            card.folder_rows.append(
                FolderCard(
                    folder_id=folder.id, card_pk=card.pk, added_at=now, card_created_at=card.created_at
                )
            )
            card.updated_at = max(now, card.updated_at)
            present.add(card.pk)
            room -= 1
            result.updated.append(card_id)
            changes.note(session, account_id=account_id, kind="folder", ids=[folder.id])  # its cardCount
            versions.touch(folder)
    return result


def remove_cards(session: Session, *, account_id: str, folder_id: str, card_ids: Sequence[str]) -> Membership:
    """Take cards out of the folder. An id lands in ``failed`` when no card of the account has
    it or the card is not in the folder, else in ``updated``; the cards themselves are kept."""
    folder = _manual(get_folder(session, account_id=account_id, folder_id=folder_id, for_update=True))
    cards = _cards_by_id(session, account_id, card_ids)
    now = now_ms()
    result = Membership([], [], [])
    for card_id in dict.fromkeys(card_ids):
        card = cards.get(card_id)
        row = next((r for r in card.folder_rows if r.folder_id == folder.id), None) if card else None
        if card is None or row is None:
            result.failed.append(card_id)
            continue
        card.folder_rows.remove(row)
        card.updated_at = max(now, card.updated_at)
        result.updated.append(card_id)
        changes.note(session, account_id=account_id, kind="folder", ids=[folder.id])  # its cardCount
        versions.touch(folder)
    session.flush()
    return result


def folder_names(session: Session, *, account_id: str, folder_ids: Sequence[str]) -> list[str]:
    """The names of the account's folders among these ids, by name."""
    if not folder_ids:
        return []
    return list(
        session.scalars(
            select(Folder.name)
            .where(Folder.account_id == account_id, Folder.id.in_(list(folder_ids)))
            .order_by(Folder.name_key)
        )
    )
