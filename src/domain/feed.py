"""Reading the changes feed (recorded by cardvault.domain.changes): a page of an account's
changes after a cursor, oldest first, and the resources they name as they are now, read in
the same snapshot. Changes and cards are read without the ORM (bench/bench_feed.py): a page
holds up to 200 extended cards."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple, TypeVar

from sqlalchemy import bindparam, literal_column, select
from sqlalchemy.orm import Session

from cardvault.domain.cards.extended import ExtendedView, extended_views
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import CursorExpired, InvalidCursor
from cardvault.domain.models import (
    Annotation,
    Change,
    ChangeCounter,
    ExportJob,
    Folder,
    Share,
    Subscription,
    TagOperation,
)
from cardvault.domain.statements import prepared_rows
from cardvault.domain.tags.operations import TagCount, tags_by_key

_Owned = TypeVar("_Owned", Folder, TagOperation, ExportJob, Annotation, Share, Subscription)
LATEST = "latest"  # the cursor that means "from now on"
# The types a reader that names none is given: those there were before 1.3.0 (a type added
# since reaches only a reader that names it: the spec's Compatibility).
DEFAULT_KINDS = ("card", "folder", "tag", "tagOperation", "export")


class ChangeRow(NamedTuple):
    """A change as the feed shows it."""

    sequence: int
    kind: str
    resource_id: str
    action: str
    changed_at: int


@dataclasses.dataclass(frozen=True)
class ChangePage:
    changes: Sequence[ChangeRow]
    next_cursor: str  # always given: where the next read starts, also after the last change
    has_more: bool


@dataclasses.dataclass(frozen=True)
class Resources:
    """The resources a page's upserts name, by id, as they are now (a missing one is gone)."""

    cards: dict[str, ExtendedView]
    folders: dict[str, Folder]
    tags: dict[str, TagCount]
    tag_operations: dict[str, TagOperation]
    exports: dict[str, ExportJob]
    annotations: dict[str, Annotation]
    shares: dict[str, Share]
    subscriptions: dict[str, Subscription]


# The feed's two reads, built once (so compiled once: cardvault.domain.statements).
_COUNTER = select(ChangeCounter.last_sequence, ChangeCounter.purged_through).where(
    ChangeCounter.account_id == bindparam("account_id")
)
_PAGE = (
    select(
        *(Change.__table__.c[name] for name in ("sequence", "kind", "resource_id", "action", "changed_at"))
    )
    .where(Change.account_id == bindparam("account_id"), Change.sequence > bindparam("after"))
    .order_by(Change.sequence)
    .limit(bindparam("limit"))
)
# The kinds written into the statement (no bound list: the prepared statement takes none).
_PAGE_DEFAULT = _PAGE.where(Change.kind.in_([literal_column(f"'{kind}'") for kind in DEFAULT_KINDS]))


def read(
    session: Session,
    *,
    account_id: str,
    secret: str,
    cursor: str | None,
    limit: int,
    kinds: Sequence[str] = DEFAULT_KINDS,
) -> ChangePage:
    """The account's changes after ``cursor`` (from the oldest kept without one; none, and a
    cursor at the last change, for ``latest``). A cursor before the oldest change kept, or past
    the account's last change (its data restored from an earlier backup), raises
    CursorExpired: changes it should lead to are not there. Only changes of ``kinds`` are
    read; the cursor moves past the others as well."""
    scope = f"changes:{account_id}"
    counter = prepared_rows(session, _COUNTER, {"account_id": account_id})
    last, purged = counter[0] if counter else (0, 0)
    if cursor == LATEST:
        return ChangePage([], encode_cursor(secret, scope=scope, position=[last]), False)
    after = purged
    if cursor is not None:
        (position,) = decode_cursor(secret, cursor, scope=scope, size=1)
        if not isinstance(position, int) or position < 0:
            raise InvalidCursor("The cursor is not valid.")
        if position < purged or position > last:
            raise CursorExpired(
                "Changes after this cursor are no longer kept: list everything again, then "
                "follow the feed from cursor=latest."
            )
        after = position
    values = {"account_id": account_id, "after": after, "limit": limit + 1}
    if set(kinds) == set(DEFAULT_KINDS):
        rows = prepared_rows(session, _PAGE_DEFAULT, values)
    else:
        rows = session.execute(_PAGE.where(Change.kind.in_(list(kinds))), values).all()
    found = [ChangeRow._make(row) for row in rows]
    page = found[:limit]
    # Past the last change read, or (none left of these kinds) the account's last change.
    end = page[-1].sequence if page else max(after, last)
    if len(found) > limit:
        end = page[-1].sequence
    return ChangePage(page, encode_cursor(secret, scope=scope, position=[end]), len(found) > limit)


def resources(session: Session, *, account_id: str, changes: Sequence[ChangeRow | Change]) -> Resources:
    """Read what the page's upserts name, one statement per kind."""
    wanted: dict[str, list[str]] = {}
    for change in changes:
        if change.action == "upsert":
            wanted.setdefault(change.kind, []).append(change.resource_id)

    def rows(model: type[_Owned], kind: str) -> dict[str, _Owned]:  # the few of other kinds
        ids = wanted.get(kind)
        if not ids:
            return {}
        found = session.scalars(select(model).where(model.account_id == account_id, model.id.in_(ids)))
        return {row.id: row for row in found}

    return Resources(
        cards={
            view.card.id: view
            for view in extended_views(session, account_id=account_id, card_ids=wanted.get("card", []))
        },
        folders=rows(Folder, "folder"),
        tags=tags_by_key(session, account_id=account_id, keys=wanted["tag"]) if "tag" in wanted else {},
        tag_operations=rows(TagOperation, "tagOperation"),
        exports=rows(ExportJob, "export"),
        annotations=rows(Annotation, "annotation"),
        shares=rows(Share, "share"),
        subscriptions=rows(Subscription, "subscription"),
    )
