"""Listing an account's cards: filters, q's search and qualifiers, the three sorts, cursors,
and the total, each statement built once per shape and read through cardvault.domain.cards.reading."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, text
from sqlalchemy.orm import Session

from cardvault.domain import folders
from cardvault.domain.cards import ranking, smart
from cardvault.domain.cards.filters import CardFilter as CardFilter  # (re-exported: callers list with it)
from cardvault.domain.cards.filters import Resolved, resolve
from cardvault.domain.cards.reading import CardView, views
from cardvault.domain.cards.shapes import TOTAL_CAP, Shape, count_statement, first_statement, page_statement
from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import InvalidCursor, InvalidInput
from cardvault.domain.models import Folder
from cardvault.domain.search import matching, planning
from cardvault.domain.search.planning import Plan
from cardvault.domain.search.query import Query, Text
from cardvault.domain.urls import url_key


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
) -> tuple[Shape, dict[str, Any]]:
    """The statement of a listing (of one relevance tier, when given) and the values of its
    parameters; ``common``: its one term is held by at least a PROBED share of the cards."""
    key = None if filters.url is None else url_key(filters.url)
    if filters.url is not None and key is None:
        problem = {"location": "query", "field": "url", "message": "is not an http or https URL with a host"}
        raise InvalidInput(
            "The url filter is not an http or https URL with a host.", details={"fields": [problem]}
        )
    shape = Shape(
        dialect=dialect,
        view=view,
        sort=listing.sort,
        in_trash=filters.in_trash,
        archived=listing.archived,
        folder=len(filters.folders),
        tag=listing.tag_key is not None,
        card_type=len(listing.card_types),
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
        **{f"folder{i}": folder for i, folder in enumerate(filters.folders)},
        "tag_key": listing.tag_key,
        **{f"card_type{i}": card_type for i, card_type in enumerate(listing.card_types)},
        "created_after": listing.created_after,
        "created_before": listing.created_before,
        **matching.parameters(dialect, listing.query),
    }
    if after is not None:
        values["after_moment"], values["after_pk"] = after
    return shape, values


def first_matches(
    session: Session, account_id: str, filters: CardFilter, limit: int = TOTAL_CAP
) -> tuple[Select[Any], dict[str, Any]]:
    """The first ``limit`` cards (TOTAL_CAP: what a total and facets count) holding every term
    in list order (``pk`` and their position), and the values of the statement's parameters."""
    filters = smart.expand(session, account_id, filters)
    listing, _ = searched(session, account_id, filters)
    shape, values = _listing(session.get_bind().dialect.name, account_id, filters, listing, view=False)
    return first_statement(shape, limit), values


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
    filters = smart.expand(session, account_id, filters)
    if listing is None:
        listing, _ = searched(session, account_id, filters)
    shape, values = _listing(session.get_bind().dialect.name, account_id, filters, listing, view=False)
    found = session.connection().execute(count_statement(shape), values).scalar() or 0
    return min(found, TOTAL_CAP), found > TOTAL_CAP


def folder_card_counts(session: Session, account_id: str, held: Sequence[Folder]) -> dict[str, int]:
    """Each folder's ``cardCount``: a manual folder's cards outside Trash; a smart folder's
    matches, counted as a listing's ``total`` is (up to TOTAL_CAP)."""
    counts = folders.card_counts(session, [f.id for f in held if f.kind != "smart"])
    for folder in held:
        if folder.kind == "smart":
            filters = CardFilter(q=folder.query or "", sort="newest")
            counts[folder.id] = count_cards(session, account_id=account_id, filters=filters)[0]
    return counts


def list_query(
    session: Session, *, account_id: str, filters: CardFilter, tier: int | None = None
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement reading a listing's first page (of one relevance tier, when given) and its
    parameters, all but ``limit``."""
    filters = smart.expand(session, account_id, filters)
    listing, _ = searched(session, account_id, filters)
    dialect = session.get_bind().dialect.name
    shape, values = _listing(dialect, account_id, filters, listing, view=True, tier=tier)
    return page_statement(shape), values


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
    each newest first, until the page is full, and the cursor holds the tier it stopped in.
    A smart folder it names is its query (cardvault.domain.cards.smart)."""
    filters = smart.expand(session, account_id, filters)
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
        first = session.connection().execute(first_statement(shape, ranking.FEW + 1), values).all()
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
        statement = page_statement(shape)
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
        return session.connection().execute(first_statement(shape, ranking.WINDOW), values).all()

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
