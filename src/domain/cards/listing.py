"""Listing an account's cards: filters, q's search and qualifiers, the three sorts, cursors,
and the total, each statement built once per shape and read through cardvault.domain.cards.reading."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import BigInteger, Integer, Select, bindparam, func, select, text, tuple_
from sqlalchemy.orm import Session, aliased

from cardvault.domain import processing
from cardvault.domain.cards import ranking
from cardvault.domain.cards.filters import CardFilter as CardFilter  # (re-exported: callers list with it)
from cardvault.domain.cards.filters import Resolved, resolve
from cardvault.domain.cards.reading import CardView, view_query, views
from cardvault.domain.cards.urls import url_key
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import InvalidCursor, InvalidInput
from cardvault.domain.models import Card, CardTag, FolderCard
from cardvault.domain.search import matching, planning
from cardvault.domain.search.planning import Plan
from cardvault.domain.search.query import Query, Text

TOTAL_CAP = 10_000  # a requested total is counted up to this many cards


@dataclasses.dataclass(frozen=True)
class CardPage:
    """One page of a listing; ``total`` only when asked for, counted up to TOTAL_CAP."""

    cards: list[CardView]
    next_cursor: str | None
    total: int | None = None
    total_capped: bool = False
    query: Query = dataclasses.field(default_factory=Query)  # what q asked, with its words' forms
    plan: Plan | None = None  # the plan of q's search (when it has words to find)
    explained: dict[int, ranking.Explanation] | None = None  # by card pk, where ranked here


Position = tuple[Any, Any]  # the columns a listing is ordered by: a moment, then a card pk


class _Shape(NamedTuple):
    """What a listing statement's SQL depends on; the values go in as parameters, so each shape
    is built and compiled once (building a statement per request, and SQLAlchemy's cache key
    for it, cost a fifteenth of a list request's CPU)."""

    dialect: str
    view: bool  # the cards' columns (a page), or their position only (a count)
    sort: str
    in_trash: bool
    archived: str
    folder: bool
    tag: bool
    card_type: bool
    favorited: bool | None
    created_after: bool
    created_before: bool
    search: matching.Shape
    after: bool
    processing_state: str | None = None
    url: bool = False
    tier: int | None = None  # a relevance tier (cardvault.domain.search.matching.TIERS)
    probed: bool = False  # SQLite: the search's one term tested card by card (matching._found)


@functools.lru_cache(maxsize=1024)
def _statement(shape: _Shape) -> Select[Any]:
    """The listing statement of a shape, in list order.

    A tag or folder filter joins the tag or folder rows, which carry their card's createdAt, and
    the list is ordered by those columns: the planner then reads the tag's or folder's cards in
    list order from its index and stops after a page. (Ordered by the card's own columns, it
    misjudged the join and fetched and sorted every card of the tag.) A card can carry a tag
    twice (as a tag and as an AI tag), so a tag filter can repeat it."""
    query = view_query(shape.dialect) if shape.view else select(Card.pk)
    query = query.where(
        Card.account_id == bindparam("account_id"),
        Card.deleted_at.is_not(None) if shape.in_trash else Card.deleted_at.is_(None),
    )
    # Trash is ordered by when cards went there; everything else by when they were created.
    position: Position = (Card.deleted_at, Card.pk) if shape.in_trash else (Card.created_at, Card.pk)
    if shape.archived != "include":
        query = query.where(
            Card.archived_at.is_(None) if shape.archived == "exclude" else Card.archived_at.is_not(None)
        )
    if shape.folder:
        # The folder's cards are all of its account's, so another account's folder finds none.
        rows = aliased(FolderCard)
        query = query.join(rows, (rows.card_pk == Card.pk) & (rows.folder_id == bindparam("folder")))
        position = position if shape.in_trash else (rows.card_created_at, rows.card_pk)
    if shape.tag:
        tags = aliased(CardTag)
        query = query.join(
            tags,
            (tags.card_pk == Card.pk)
            & (tags.account_id == bindparam("account_id"))
            & (tags.name_key == bindparam("tag_key")),
        )
        position = position if shape.in_trash else (tags.card_created_at, tags.card_pk)
    if shape.card_type:
        query = query.where(Card.type == bindparam("card_type"))
    if shape.url:
        query = query.where(Card.url_key == bindparam("url_key"))
    if shape.favorited is not None:
        query = query.where(Card.is_favorited.is_(shape.favorited))
    # On the ordering column (the same value where a tag or folder row carries it), so the
    # bounds narrow the index range the page is read from.
    created = Card.created_at if shape.in_trash else position[0]
    if shape.created_after:
        query = query.where(created > bindparam("created_after"))
    if shape.created_before:
        query = query.where(created < bindparam("created_before"))
    if shape.search != _NO_SEARCH:
        query = query.where(matching.condition(shape.dialect, shape.search, shape.tier, probed=shape.probed))
    if shape.processing_state is not None:
        query = query.where(processing.in_state(shape.processing_state))
    if not shape.view:
        query = query.add_columns(*position)
    moment, pk = position
    newest = shape.sort != "oldest"  # relevance reads each tier newest first
    if shape.after:
        here, boundary = (
            tuple_(moment, pk),
            tuple_(bindparam("after_moment", type_=BigInteger), bindparam("after_pk", type_=BigInteger)),
        )
        query = query.where(here < boundary if newest else here > boundary)
    if newest:
        return query.order_by(moment.desc(), pk.desc())
    return query.order_by(moment.asc(), pk.asc())


@functools.lru_cache(maxsize=1024)
def _page_statement(shape: _Shape) -> Select[Any]:
    """A page of a listing: ``limit`` cards' views, in list order.

    SQLite with a search: the page's cards are chosen first and only theirs are read (it
    computes a view's columns, tags and folders included, for every match before sorting them:
    a word 10,000 cards hold cost 82 ms a page at 100,000 cards)."""
    limit = bindparam("limit", type_=Integer)
    if shape.dialect != "sqlite" or shape.search == _NO_SEARCH:
        return _statement(shape).limit(limit)
    chosen = _statement(shape._replace(view=False)).limit(limit).subquery()
    moment = Card.deleted_at if shape.in_trash else Card.created_at
    page = view_query(shape.dialect).where(Card.pk.in_(select(chosen.c.pk)))
    if shape.sort == "oldest":
        return page.order_by(moment.asc(), Card.pk.asc())
    return page.order_by(moment.desc(), Card.pk.desc())


@functools.lru_cache(maxsize=1024)
def _first_statement(shape: _Shape, cap: int) -> Select[Any]:
    """The first ``cap`` matches in list order, each once (pk first)."""
    return _statement(shape).distinct().limit(cap)


@functools.lru_cache(maxsize=1024)
def _count_statement(shape: _Shape) -> Select[Any]:
    return select(func.count()).select_from(_first_statement(shape, TOTAL_CAP + 1).subquery())


_NO_SEARCH = matching.shape(Query())
# SQLite: a term at least this share of the account's cards hold is tested card by card as
# they are read in list order (matching._found): a word a third of 100,000 cards hold, 76 -> 19
# ms for 50 of its cards; a rare one stays read from its matches.
PROBED = 1 / 20
AS_WRITTEN = 8  # terms past which PostgreSQL plans a search's joins in the order written
_AS_WRITTEN = text("SET LOCAL join_collapse_limit = 1")  # (8 by default: the same bound)


def searched(session: Session, account_id: str, filters: CardFilter) -> tuple[Resolved, Plan | None]:
    """The listing the filters ask for, its q's terms with their words' other forms (and the plan
    of its search, when q has words to find)."""
    listing = resolve(filters)
    if not listing.query.has_words:
        return listing, None
    plan = planning.plan(session, account_id, listing.query)
    # The statements hold the terms rarest first (the plan keeps q's order), so that the first
    # one tried narrows the most; a long q is planned in that order as written (PostgreSQL's
    # search over dozens of semi-joins costs more than running them: 48 rare words 211 -> 61
    # ms, 48 misspellings 2.5 s -> 44 ms at a million cards).
    order = sorted(range(len(plan.terms)), key=lambda i: (-plan.terms[i].begun_weight, i))
    rarest_first = tuple(plan.query.required[i] for i in order)
    if len(order) > AS_WRITTEN and session.get_bind().dialect.name == "postgresql":
        session.execute(_AS_WRITTEN)
    return dataclasses.replace(listing, query=dataclasses.replace(plan.query, required=rarest_first)), plan


def _listing(
    dialect: str,
    account_id: str,
    filters: CardFilter,
    listing: Resolved,
    *,
    view: bool,
    after: list[int | str] | None = None,
    tier: int | None = None,
    common: bool = False,
) -> tuple[_Shape, dict[str, Any]]:
    """The statement of a listing (of one relevance tier, when given) and the values of its
    parameters; ``common``: its one term is held by at least a PROBED share of the cards."""
    key = None if filters.url is None else url_key(filters.url)
    if filters.url is not None and key is None:
        problem = {"location": "query", "field": "url", "message": "is not an http or https URL with a host"}
        raise InvalidInput(
            "The url filter is not an http or https URL with a host.", details={"fields": [problem]}
        )
    shape = _Shape(
        dialect=dialect,
        view=view,
        sort=listing.sort,
        in_trash=filters.in_trash,
        archived=listing.archived,
        folder=filters.folder is not None,
        tag=listing.tag_key is not None,
        card_type=listing.card_type is not None,
        favorited=filters.favorited,
        created_after=listing.created_after is not None,
        created_before=listing.created_before is not None,
        search=matching.shape(listing.query),
        after=after is not None,
        processing_state=filters.processing_state,
        url=key is not None,
        tier=tier,
        probed=common and dialect == "sqlite" and len(listing.query.required) == 1,
    )
    values: dict[str, Any] = {
        "url_key": key,
        "account_id": account_id,
        "folder": filters.folder,
        "tag_key": listing.tag_key,
        "card_type": listing.card_type,
        "created_after": listing.created_after,
        "created_before": listing.created_before,
        **matching.parameters(dialect, listing.query),
    }
    if after is not None:
        values["after_moment"], values["after_pk"] = after
    return shape, values


def first_matches(
    session: Session, account_id: str, filters: CardFilter
) -> tuple[Select[Any], dict[str, Any]]:
    """The first TOTAL_CAP cards holding every term in list order (``pk`` and their position),
    and the values of the statement's parameters: what a total and facets count."""
    listing, _ = searched(session, account_id, filters)
    shape, values = _listing(session.get_bind().dialect.name, account_id, filters, listing, view=False)
    return _first_statement(shape, TOTAL_CAP), values


def _scope(account_id: str, filters: CardFilter) -> str:
    """The query a cursor belongs to: the account, the sort and every filter."""
    described = json.dumps([account_id, dataclasses.asdict(filters)], sort_keys=True)
    return hashlib.sha256(described.encode()).hexdigest()


def count_cards(
    session: Session, *, account_id: str, filters: CardFilter, listing: Resolved | None = None
) -> tuple[int, bool]:
    """Count the cards holding every term up to TOTAL_CAP, in list order (so the cost follows the
    page's plan, not a scan of the table); say whether there are more. ``listing``: the filters
    as ``searched`` made them, when the caller has it."""
    if listing is None:
        listing, _ = searched(session, account_id, filters)
    shape, values = _listing(session.get_bind().dialect.name, account_id, filters, listing, view=False)
    found = session.connection().execute(_count_statement(shape), values).scalar() or 0
    return min(found, TOTAL_CAP), found > TOTAL_CAP


def list_query(
    session: Session, *, account_id: str, filters: CardFilter, tier: int | None = None
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement reading a listing's first page (of one relevance tier, when given) and its
    parameters, all but ``limit``."""
    listing, _ = searched(session, account_id, filters)
    dialect = session.get_bind().dialect.name
    shape, values = _listing(dialect, account_id, filters, listing, view=True, tier=tier)
    return _page_statement(shape), values


def list_cards(
    session: Session,
    *,
    account_id: str,
    secret: str,
    filters: CardFilter,
    limit: int = 50,
    cursor: str | None = None,
    with_total: bool = False,
    explain: bool = False,
) -> CardPage:
    """Return one page of the account's cards matching the filters, in the chosen order, and
    with ``with_total`` how many match (in the same snapshot, when the session has one); with
    ``explain``, what placed each card (``explained``, when q has words to find).

    By relevance, when at most ranking.FEW cards hold every term, the ranking is made in one
    read (cardvault.domain.cards.ranking), cards holding some of the terms after them; when
    more do, the tiers (cardvault.domain.search.matching.TIERS) are read one after the other,
    each newest first, until the page is full, and the cursor holds the tier it stopped in."""
    scope = _scope(account_id, filters)
    listing, plan = searched(session, account_id, filters)
    relevance = listing.sort == "relevance"
    sizes = (3, 5) if relevance else (2,)  # a tier's position or a ranking's key; a moment's
    position = None if cursor is None else decode_cursor(secret, cursor, scope=scope, size=sizes)
    dialect = session.get_bind().dialect.name
    if relevance:
        assert plan is not None  # relevance is the order of a q with words to find
        common = plan.terms[0].cards >= plan.cards * PROBED
        shape, values = _listing(dialect, account_id, filters, listing, view=False, common=common)
        first = session.connection().execute(_first_statement(shape, ranking.FEW + 1), values).all()
        if len(first) <= ranking.FEW:
            caller = (account_id, secret)
            ranked = _ranked_page(session, caller, filters, listing, plan, first, limit, position)
            return ranked if with_total else dataclasses.replace(ranked, total=None)
        if position is not None and len(position) == 5:  # of a ranking, when fewer held every term
            if not position[0]:  # past them all: the cards holding some follow only a few
                return CardPage([], None, query=listing.query, plan=plan)
            position = [position[1], *position[3:]]  # the tier's position
    # A tag filter can repeat a card (once per kind of tag): read enough rows for limit + 1 cards.
    repeats = 2 if listing.tag_key is not None else 1
    found: dict[int, tuple[int | None, CardView]] = {}
    tiers: tuple[int | None, ...] = (None,)
    after = position
    if relevance:
        possible = matching.tiers(matching.shape(listing.query))
        start = 0 if position is None else _tier_index(possible, position[0])
        tiers, after = possible[start:], None if position is None else position[1:]
    for tier in tiers:
        shape, values = _listing(dialect, account_id, filters, listing, view=True, after=after, tier=tier)
        statement = _page_statement(shape)
        values["limit"] = (limit + 1 - len(found)) * repeats
        for view in views(session, statement, values):
            found.setdefault(view.pk, (tier, view))
        after = None  # the next tier is read from its start
        if len(found) > limit:
            break
    cards = [view for _, view in found.values()][: limit + 1]
    next_cursor = None
    if len(cards) > limit:
        cards = cards[:limit]
        tier, last = found[cards[-1].pk]
        at = last.deleted_at if filters.in_trash else last.created_at
        moment: list[int | str] = [at or 0, last.pk]
        if relevance and tier is not None:
            moment = [tier, *moment]
        next_cursor = encode_cursor(secret, scope=scope, position=moment)
    explained = None
    if explain and plan is not None:
        explained = ranking.explain(session, plan, [card.pk for card in cards])
    page = CardPage(cards, next_cursor, query=listing.query, plan=plan, explained=explained)
    if not with_total:
        return page
    total, capped = count_cards(session, account_id=account_id, filters=filters, listing=listing)
    return dataclasses.replace(page, total=total, total_capped=capped)


def _ranked_page(
    session: Session,
    caller: tuple[str, str],  # the account and the cursors' secret
    filters: CardFilter,
    listing: Resolved,
    plan: Plan,
    first: Sequence[Sequence[Any]],
    limit: int,
    position: list[int | str] | None,
) -> CardPage:
    """A page by relevance when few cards hold every term: those, then cards holding some of
    them (ranking.ranked); the total is every card the ranking holds."""
    account_id, secret = caller
    dialect = session.get_bind().dialect.name
    strict = [i for i, term in enumerate(plan.terms) if term.strict]

    def read(term: tuple[Text, ...] | None, holding: int) -> Sequence[Sequence[Any]]:
        """The first ranking.WINDOW cards holding the term (if any) and every phrase, in list order."""
        kept = tuple(plan.query.required[i] for i in strict) + (() if term is None else (term,))
        alone = dataclasses.replace(listing, query=dataclasses.replace(listing.query, required=kept))
        common = holding >= plan.cards * PROBED
        shape, values = _listing(dialect, account_id, filters, alone, view=False, common=common)
        return session.connection().execute(_first_statement(shape, ranking.WINDOW), values).all()

    page = ranking.ranked(session, account_id, plan, first, read, limit, position)
    cards = [view for _, view, _ in page.cards][:limit]
    next_cursor = None
    if len(page.cards) > limit:
        key = page.cards[limit - 1][0]
        next_cursor = encode_cursor(secret, scope=_scope(account_id, filters), position=list(key))
    explained = {view.pk: explanation for _, view, explanation in page.cards}
    query = listing.query
    return CardPage(cards, next_cursor, page.total, False, query=query, plan=plan, explained=explained)


def _tier_index(possible: tuple[int, ...], tier: object) -> int:
    """Where a cursor's tier stands among the query's (a cursor is signed: only ours come here)."""
    if tier not in possible:
        raise InvalidCursor("The cursor is not valid.")
    return possible.index(tier)
