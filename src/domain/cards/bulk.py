"""Bulk card operations: one operation applied to up to MAX_ITEMS cards in one transaction,
each item through the single operation's own domain function, in a savepoint of its own, so
that an item that fails changes nothing and the others stand (docs/bulk.md). Creates, tags and
untags without ``ifMatch`` are stored together instead (``_TOGETHER``): each item checked alone,
then all the others' cards written with one statement of each kind; what only that store can
refuse sends the batch one by one.

An item of an existing card may name the card's version (``ifMatch``, the If-Match of its
single operation): checked with the card locked, after whatever that operation locks before
its card (the lock order in cardvault.domain.db), so the check and the change are one step.

``apply`` never commits (the caller's transaction does, once, for every item): so a request
cut short leaves every applied item or none. With ``atomic``, one failed item undoes them all
(the whole batch runs in one more savepoint, rolled back)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy.orm import Session

from cardvault.domain import folders, versions
from cardvault.domain.cards import editing, trash
from cardvault.domain.db import lock_tags
from cardvault.domain.errors import CardVaultError, Conflict, InvalidInput, NotApplied, NotFound
from cardvault.domain.models import Card
from cardvault.domain.names import tag_key
from cardvault.domain.pipeline.processing import Written
from cardvault.domain.tags import counts
from cardvault.domain.tags.names import clean_tags
from cardvault.domain.tags.rows import replace_tags

MAX_ITEMS = 100  # items a request takes (the spec's CardBulkRequest)
MAX_TAGS = 100  # tags a card carries (the spec's TagList)

# Each operation's item fields past cardId (createCard's body for create, and so on).
_NEW_CARD = {"cardType", "content", "notes", "tags", "url", "source", "fileName", "fileSize", "mimeType"}
FIELDS: Mapping[str, frozenset[str]] = {
    "create": frozenset(_NEW_CARD),
    "update": frozenset({"cardId", "content", "notes", "tags", "url"}),
    "favorite": frozenset({"cardId", "isFavorited"}),
    "tag": frozenset({"cardId", "tags"}),
    "untag": frozenset({"cardId", "tags"}),
    **{name: frozenset({"cardId"}) for name in ("trash", "restore", "archive", "unarchive", "delete")},
    "addToFolder": frozenset({"cardId", "folderId"}),
    "removeFromFolder": frozenset({"cardId", "folderId"}),
}
CONDITION = "ifMatch"  # an item's If-Match, given to ``apply`` parsed (``conditions``)
_REQUIRED: Mapping[str, frozenset[str]] = {
    "create": frozenset(),
    "update": frozenset({"cardId"}),
    "favorite": frozenset({"cardId", "isFavorited"}),
    "tag": frozenset({"cardId", "tags"}),
    "untag": frozenset({"cardId", "tags"}),
    "addToFolder": frozenset({"cardId", "folderId"}),
    "removeFromFolder": frozenset({"cardId", "folderId"}),
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one item did: the card it left (None after delete, or when it failed), what it
    wrote (its stages to send after the commit), or the error it failed with."""

    index: int
    card_id: str | None
    card: Card | None = None
    written: Written | None = None
    error: CardVaultError | None = None
    deleted: bool = False


@dataclasses.dataclass(frozen=True)
class Batch:
    """A request's outcomes; ``applied``: whether its successful items stand."""

    outcomes: list[Outcome]
    applied: bool


Apply = Callable[[Session, str, Mapping[str, Any], int | None], tuple[Card | None, Written | None]]


def apply(
    session: Session,
    *,
    account_id: str,
    operation: str,
    items: Sequence[Mapping[str, Any]],
    atomic: bool = False,
    max_cards: int | None = None,
    conditions: Sequence[versions.Condition | None] = (),
) -> Batch:
    """Apply ``operation`` to each item in order, each in a savepoint (an item that fails is
    rolled back alone); with ``atomic`` and any item failed, roll back every item, and answer
    each successful one with NotApplied. ``conditions``: each item's ``ifMatch``, parsed (None,
    or left out: unconditional); the item's own ``ifMatch`` field is then not read."""
    if operation not in FIELDS:
        raise InvalidInput(f"No such bulk operation: {operation}.")
    if not 1 <= len(items) <= MAX_ITEMS:
        raise InvalidInput(f"A bulk request takes 1 to {MAX_ITEMS} items.")
    outer = session.begin_nested() if atomic else None
    together = _TOGETHER.get(operation) if not any(c is not None for c in conditions) else None
    outcomes = together(session, account_id, items, max_cards) if together is not None else None
    if outcomes is None:
        outcomes = _one_by_one(session, account_id, operation, items, conditions, max_cards)
    failed = [outcome.index for outcome in outcomes if outcome.error is not None]
    if outer is None:
        return Batch(outcomes, applied=True)
    if not failed:
        outer.commit()
        return Batch(outcomes, applied=True)
    outer.rollback()
    undone = NotApplied(failed)
    return Batch(
        [
            o if o.error is not None else Outcome(o.index, _kept_id(operation, o), error=undone)
            for o in outcomes
        ],
        applied=False,
    )


def _one_by_one(
    session: Session,
    account_id: str,
    operation: str,
    items: Sequence[Mapping[str, Any]],
    conditions: Sequence[versions.Condition | None],
    max_cards: int | None,
) -> list[Outcome]:
    """Each item through its single operation's domain function, in a savepoint of its own."""
    run = _OPERATIONS[operation]
    _lock_ahead(session, account_id, operation, items)
    outcomes = []
    for index, item in enumerate(items):
        card_id = item.get("cardId") if operation != "create" else None  # a failed create has none
        condition = conditions[index] if index < len(conditions) else None
        savepoint = session.begin_nested()
        try:
            _check_fields(operation, item)
            if condition is not None:
                _require(session, operation, account_id, item, condition)
            card, written = run(session, account_id, item, max_cards)
            savepoint.commit()
        except CardVaultError as exc:
            savepoint.rollback()
            outcomes.append(Outcome(index, card_id, error=exc))
            continue
        made = card.id if card is not None else card_id
        outcomes.append(Outcome(index, made, card, written, deleted=operation == "delete"))
    return outcomes


def _lock_ahead(
    session: Session, account_id: str, operation: str, items: Sequence[Mapping[str, Any]]
) -> None:
    """Take, before any item, every lock the items will take, in the lock order of
    cardvault.domain.db (their folders in id order, the account's tag lock, shared, their
    cards in pk order), so that items taking theirs in item order wait for no one: two
    requests naming the same cards in another order cannot deadlock."""
    if operation == "create":
        return
    if operation in ("addToFolder", "removeFromFolder"):
        named = sorted({item["folderId"] for item in items if isinstance(item.get("folderId"), str)})
        folders.lock_folders(session, account_id=account_id, folder_ids=named)
    lock_tags(session, account_id=account_id)
    ids = [item["cardId"] for item in items if isinstance(item.get("cardId"), str)]
    editing.lock_cards(session, account_id=account_id, card_ids=ids)


def _create_together(
    session: Session, account_id: str, items: Sequence[Mapping[str, Any]], max_cards: int | None
) -> list[Outcome] | None:
    """Every create at once: each item checked alone (``editing.new_card`` refuses what it is
    given without the database), then the cards of the others stored together
    (``editing.store_cards``: one statement of each kind for all). What is refused in the
    store (the account's cap on cards) fails the batch's savepoint: None, and the items go one
    by one, so each answers as its createCard would."""
    outcomes: list[Outcome | None] = [None] * len(items)
    made: list[tuple[int, Card]] = []
    for index, item in enumerate(items):
        try:
            _check_fields("create", item)
            given = {_snake(key): value for key, value in item.items()}
            made.append((index, editing.new_card(account_id=account_id, **cast(editing.NewCard, given))))
        except CardVaultError as exc:
            outcomes[index] = Outcome(index, None, error=exc)
    if not made:
        return [outcome for outcome in outcomes if outcome is not None]
    savepoint = session.begin_nested()
    try:
        written = editing.store_cards(
            session, [card for _, card in made], account_id=account_id, max_cards=max_cards, queued=True
        )
        savepoint.commit()
    except CardVaultError:
        savepoint.rollback()
        return None
    for (index, card), one in zip(made, written, strict=True):
        outcomes[index] = Outcome(index, card.id, card, one)
    return [outcome for outcome in outcomes if outcome is not None]


def _retag_together(adding: bool) -> Together:
    """Every tag (``adding``) or untag at once: the cards locked in one statement (in pk order,
    after the account's tag lock), each item's new tags worked out in order (an item over
    MAX_TAGS fails alone, changing nothing), then the changed cards stored together
    (``editing.store_tags``). Items naming no card of the account answer as their updateCard
    would, one by one."""

    def run(
        session: Session, account_id: str, items: Sequence[Mapping[str, Any]], _max: int | None
    ) -> list[Outcome] | None:
        lock_tags(session, account_id=account_id)  # before the cards (the lock order in cardvault.domain.db)
        ids = [item["cardId"] for item in items if isinstance(item.get("cardId"), str)]
        held = editing.lock_cards(session, account_id=account_id, card_ids=ids)
        before = {card.pk: counts.card_tally(card) for card in held.values()}
        tags_before = {card.pk: list(card.tags) for card in held.values()}
        outcomes = []
        for index, item in enumerate(items):
            try:
                _check_fields("tag" if adding else "untag", item)
                named: str = item["cardId"]
                card = held.get(named)
                if card is None:  # no card of the account: its NotFound, word for word
                    editing.get_card(session, account_id=account_id, card_id=named)
                    raise AssertionError(f"card {named} of the account was not locked")
                replace_tags(card, "user", _new_tags(card, item["tags"], adding))
            except CardVaultError as exc:
                outcomes.append(Outcome(index, item.get("cardId"), error=exc))
                continue
            outcomes.append(Outcome(index, card.id, card, Written(card)))
        changed = [card for card in held.values() if card.tags != tags_before[card.pk]]
        editing.store_tags(session, account_id=account_id, cards=changed, before=before)
        return outcomes

    return run


def _new_tags(card: Card, given: Sequence[str], adding: bool) -> list[str]:
    """The card's tags with the given ones added or taken away (ignoring case)."""
    clean = clean_tags(given)
    if not adding:
        gone = {tag_key(tag) for tag in clean}
        return [tag for tag in card.tags if tag_key(tag) not in gone]
    tags = clean_tags([*card.tags, *clean])
    if len(tags) > MAX_TAGS:
        problem = {"location": "body", "field": "tags", "message": f"would pass {MAX_TAGS} tags"}
        raise InvalidInput(f"A card carries at most {MAX_TAGS} tags.", details={"fields": [problem]})
    return tags


def _require(
    session: Session,
    operation: str,
    account_id: str,
    item: Mapping[str, Any],
    condition: versions.Condition,
) -> None:
    """Check the item's If-Match against its card, locked until the transaction ends, taking
    first what the operation locks before its card: the folder for a folder's operations,
    else the account's tag lock (shared)."""
    if operation in ("addToFolder", "removeFromFolder"):
        folders.get_folder(session, account_id=account_id, folder_id=item["folderId"], for_update=True)
    else:
        lock_tags(session, account_id=account_id)
    versions.require(
        session,
        Card,
        account_id=account_id,
        row_id=item["cardId"],
        condition=condition,
    )


def _kept_id(operation: str, outcome: Outcome) -> str | None:
    """The id an undone item still answers with: none for a card whose creation was undone."""
    return None if operation == "create" else outcome.card_id


def _check_fields(operation: str, item: Mapping[str, Any]) -> None:
    """Refuse a field the operation does not take, or one it needs left out (its single
    operation's body would have been refused so: 400 INVALID_INPUT)."""
    taken = FIELDS[operation] | ({CONDITION} if operation != "create" else set())
    extra = sorted(set(item) - taken)
    missing = sorted(_REQUIRED.get(operation, frozenset({"cardId"})) - set(item))
    problems = [
        {"location": "body", "field": name, "message": f"is not taken by {operation}"} for name in extra
    ]
    problems += [{"location": "body", "field": name, "message": "is required"} for name in missing]
    if problems:
        raise InvalidInput(f"The item does not fit the {operation} operation.", details={"fields": problems})


def _create(session: Session, account_id: str, item: Mapping[str, Any], max_cards: int | None) -> Any:
    given = {_snake(key): value for key, value in item.items()}
    written = editing.add_card(
        session, account_id=account_id, max_cards=max_cards, queued=True, **cast(editing.NewCard, given)
    )
    return written.card, written


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _update(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
    notes = {"notes": item["notes"]} if "notes" in item else {}
    fields = {name: item.get(name) for name in ("content", "tags", "url")}
    written = editing.edit_card(session, account_id=account_id, card_id=item["cardId"], **fields, **notes)
    return written.card, written


def _retag(adding: bool) -> Apply:
    """Add the item's tags to the card's (``adding``), or take them from it, ignoring case."""

    def run(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
        lock_tags(session, account_id=account_id)  # before the card (the lock order in cardvault.domain.db)
        card = editing.get_card(session, account_id=account_id, card_id=item["cardId"], for_update=True)
        tags = _new_tags(card, item["tags"], adding)
        written = editing.edit_card(session, account_id=account_id, card_id=card.id, tags=tags)
        return written.card, written

    return run


def _card_only(change: Callable[..., Card], **fixed: Any) -> Apply:
    def run(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
        return change(session, account_id=account_id, card_id=item["cardId"], **fixed), None

    return run


def _favorite(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
    card_id, favorited = item["cardId"], item["isFavorited"]
    return editing.set_favorite(session, account_id=account_id, card_id=card_id, is_favorited=favorited), None


def _delete(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
    trash.delete_forever(session, account_id=account_id, card_id=item["cardId"])
    return None, None


def _in_folder(adding: bool) -> Apply:
    """Put the card in the folder or take it out, as addFolderCards and removeFolderCards do
    for one id; a card they would list in failedIds is missing here, one in folderLimitIds a
    conflict."""

    def run(session: Session, account_id: str, item: Mapping[str, Any], _max: int | None) -> Any:
        change = folders.add_cards if adding else folders.remove_cards
        card_id = item["cardId"]
        result = change(session, account_id=account_id, folder_id=item["folderId"], card_ids=[card_id])
        if result.failed:
            where = "outside Trash" if adding else "in this folder"
            raise NotFound(f"No card of this account {where} has this id.")
        if result.limited:
            raise Conflict("The folder holds as many cards as it may, or the card is in as many folders.")
        return editing.get_card(session, account_id=account_id, card_id=card_id), None

    return run


# Operations whose items run together when none names a version (ifMatch): a function of the
# items that answers their outcomes, or None to run them one by one.
Together = Callable[[Session, str, Sequence[Mapping[str, Any]], int | None], list[Outcome] | None]
_TOGETHER: Mapping[str, Together] = {
    "create": _create_together,
    "tag": _retag_together(adding=True),
    "untag": _retag_together(adding=False),
}

_OPERATIONS: Mapping[str, Apply] = {
    "create": _create,
    "update": _update,
    "favorite": _favorite,
    "tag": _retag(adding=True),
    "untag": _retag(adding=False),
    "trash": _card_only(trash.move_to_trash),
    "restore": _card_only(trash.restore),
    "archive": _card_only(editing.set_archived, is_archived=True),
    "unarchive": _card_only(editing.set_archived, is_archived=False),
    "delete": _delete,
    "addToFolder": _in_folder(adding=True),
    "removeFromFolder": _in_folder(adding=False),
}
