"""Conditions on Card for a parsed query (cardvault.domain.search.query): its texts through
the full-text index, its qualifiers through the card's columns, and the relevance tiers.

A statement depends on the query's shape only (how many groups, their texts' kinds, which
qualifiers): the words and values go in as parameters, so each shape is built and compiled
once. ``shape`` gives the shape, ``parameters`` the values."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    and_,
    bindparam,
    column,
    exists,
    or_,
    select,
    text,
    true,
)

from cardvault.domain.models import Card, CardTag, Folder, FolderCard
from cardvault.domain.models.pipeline import in_state
from cardvault.domain.names import tag_key
from cardvault.domain.search.query import Qualifier, Query, Text
from cardvault.domain.urls import site_key

# Relevance tiers, best first. Where the groups are found: every one in the card's headline
# (title, notes, tags, AI tags), some there, none there (in the body only); and within each,
# cards holding every group as whole words before cards holding some only as a beginning of
# a word ("git" finds "git" before "github"). A tier is 2 * where + whole.
TIERS = (5, 4, 3, 2, 1, 0)


class Shape(NamedTuple):
    """What the SQL of a query depends on."""

    groups: int  # required groups (each: one of its texts)
    excluded: int
    prefixed: bool  # some text to find ends in a beginning of a word, or is another form of one
    qualifiers: tuple[tuple[int, str, bool], ...]  # (position, key, negated) of each condition


def shape(query: Query) -> Shape:
    conditions = tuple(
        (position, qualifier_key(qualifier), qualifier.negated)
        for position, qualifier in enumerate(query.qualifiers)
        if qualifier.name not in BOUNDS
    )
    prefixed = any(found.prefix or found.form != "typed" for group in query.required for found in group)
    return Shape(len(query.required), len(query.excluded), prefixed, conditions)


def tiers(query: Shape) -> tuple[int, ...]:
    """The relevance tiers a card of this query can be in, best first."""
    return tuple(
        tier
        for tier in TIERS
        if not (tier // 2 == 1 and query.groups == 1) and (tier % 2 == 1 or query.prefixed)
    )


def condition(dialect: str, query: Shape, tier: int | None, *, probed: bool = False) -> ColumnElement[bool]:
    """The whole query's condition on Card (in ``tier``, when given); ``probed``: see _found."""
    qualifiers = [qualifier_condition(*entry) for entry in query.qualifiers]
    return and_(texts_condition(dialect, query, tier, probed=probed), *qualifiers)


def parameters(dialect: str, query: Query) -> dict[str, Any]:
    return {**text_parameters(dialect, query), **qualifier_parameters(query.qualifiers)}


def _fts_text(dialect: str, found: Text) -> str:
    """One text as the index's query language: a word or a phrase, its last word a prefix."""
    if dialect == "sqlite":
        return f'"{" ".join(found.words)}"' + ("*" if found.prefix else "")
    last = len(found.words) - 1
    return " <-> ".join(
        f"'{word}'" + (":*" if found.prefix and i == last else "") for i, word in enumerate(found.words)
    )


def _any_of(dialect: str, texts: tuple[Text, ...]) -> str:
    joined = (" OR " if dialect == "sqlite" else " | ").join(_fts_text(dialect, found) for found in texts)
    return f"({joined})"


# Card pks holding a match of :fts anywhere (texts, tags, AI tags) or in the headline only.
_ANYWHERE = {
    "sqlite": (
        "SELECT rowid AS card_pk FROM card_search WHERE card_search MATCH :fts "
        "UNION ALL SELECT rowid AS card_pk FROM card_tag_search WHERE card_tag_search MATCH :fts"
    ),
    "postgresql": "SELECT card_pk FROM card_search WHERE words @@ CAST(:fts AS tsquery)",
}
_HEADLINE = {
    "sqlite": (
        "SELECT rowid AS card_pk FROM card_search WHERE card_search MATCH :fts_h "
        "UNION ALL SELECT rowid AS card_pk FROM card_tag_search WHERE card_tag_search MATCH :fts"
    ),
    # Part 0 is the body; a partial index holds the other parts' words.
    "postgresql": "SELECT card_pk FROM card_search WHERE part > 0 AND words @@ CAST(:fts AS tsquery)",
}


# The same, of one card (the listing's): what a negation asks, as NOT EXISTS, so that the planner
# probes the card's own rows (NOT IN hashed every match of a common word first).
_OF_CARD = {
    "sqlite": (
        "EXISTS (SELECT 1 FROM card_search WHERE card_search MATCH :fts_h AND rowid = cards.pk) "
        "OR EXISTS (SELECT 1 FROM card_tag_search WHERE card_tag_search MATCH :fts AND rowid = cards.pk)"
    ),
    "postgresql": (
        "EXISTS (SELECT 1 FROM card_search s WHERE s.card_pk = cards.pk AND {part}"
        "s.words @@ CAST(:fts AS tsquery))"
    ),
}


def _absent(dialect: str, name: str, headline: bool) -> ColumnElement[bool]:
    """Cards without a match of the text bound to ``name`` (in the headline only, or anywhere)."""
    statement = _OF_CARD[dialect].replace("{part}", "s.part > 0 AND " if headline else "")
    if dialect == "sqlite" and not headline:
        statement = statement.replace(":fts_h", ":fts")
    statement = statement.replace(":fts_h", f":{name}_h").replace(":fts", f":{name}")
    names = [name, f"{name}_h"] if headline and dialect == "sqlite" else [name]
    absent = text(f"NOT ({statement})").bindparams(*(bindparam(n, type_=String) for n in names))
    return absent  # type: ignore[return-value]  # a clause of SQL text, as and_ and or_ take it


def found_among(dialect: str, name: str, headline: bool) -> str:
    """SQL selecting, among the card pks bound as ``pks``, those with a match of the text bound to
    ``name`` (in the headline only, or anywhere)."""
    if dialect == "sqlite":
        among = "rowid IN (SELECT value FROM json_each(:pks)) AND "
        statement = _HEADLINE["sqlite"] if headline else _ANYWHERE["sqlite"]
        statement = statement.replace("WHERE card_search MATCH", f"WHERE {among}card_search MATCH")
        statement = statement.replace("WHERE card_tag_search MATCH", f"WHERE {among}card_tag_search MATCH")
    else:
        statement = (_HEADLINE if headline else _ANYWHERE)["postgresql"].replace(
            "WHERE ", "WHERE card_pk = ANY(CAST(:pks AS bigint[])) AND "
        )
    return statement.replace(":fts_h", f":{name}_h").replace(":fts", f":{name}")


def _found(dialect: str, name: str, headline: bool, *, probed: bool = False) -> ColumnElement[bool]:
    """Cards with a match of the text bound to ``name``. ``probed`` (SQLite): as a test of each
    card read in list order (``pk + 0`` keeps SQLite from reading the matches' cards by pk and
    sorting them all), for a text so many cards hold that a window of them comes soon."""
    statement = (_HEADLINE if headline else _ANYWHERE)[dialect]
    statement = statement.replace(":fts_h", f":{name}_h").replace(":fts", f":{name}")
    names = [name, f"{name}_h"] if headline and dialect == "sqlite" else [name]
    found = text(statement).bindparams(*(bindparam(n, type_=String) for n in names))
    return (Card.pk + 0 if probed else Card.pk).in_(found.columns(column("card_pk", BigInteger)))


def texts_condition(
    dialect: str, query: Shape, tier: int | None, *, probed: bool = False
) -> ColumnElement[bool]:
    """Every group found and no excluded text, and with ``tier`` the card in that tier."""
    conditions = [_absent(dialect, f"x{i}", headline=False) for i in range(query.excluded)]
    anywhere = [_found(dialect, f"g{i}", headline=False, probed=probed) for i in range(query.groups)]
    if tier is None or not query.groups:
        return and_(true(), *anywhere, *conditions)
    head = [_found(dialect, f"g{i}", headline=True) for i in range(query.groups)]
    where, whole = divmod(tier, 2)
    not_head = [_absent(dialect, f"g{i}", headline=True) for i in range(query.groups)]
    if where == 2:
        placed = [*head]
    elif where == 1:
        placed = [*anywhere, or_(*head), or_(*not_head)]
    else:
        placed = [*anywhere, *not_head]
    if query.prefixed:
        wholly = [_found(dialect, f"g{i}_w", headline=False) for i in range(query.groups)]
        not_wholly = [_absent(dialect, f"g{i}_w", headline=False) for i in range(query.groups)]
        placed += wholly if whole else [or_(*not_wholly)]
    return and_(*placed, *conditions)


def text_parameters(dialect: str, query: Query) -> dict[str, str]:
    values: dict[str, str] = {}
    for i, group in enumerate(query.required):
        values[f"g{i}"] = _any_of(dialect, group)
        # As typed and whole: another form (a stem's or a typo's word) or a beginning ranks below.
        typed = tuple(Text(found.words, prefix=False) for found in group if found.form == "typed")
        values[f"g{i}_w"] = _any_of(dialect, typed)
        # Whole words, as typed or as another form (not only a beginning): what ranking weighs.
        values[f"g{i}_f"] = _any_of(dialect, typed + tuple(found for found in group if found.form != "typed"))
        if dialect == "sqlite":
            values[f"g{i}_h"] = "{headline} : " + _any_of(dialect, group)
    for i, found in enumerate(query.excluded):
        values[f"x{i}"] = _any_of(dialect, (found,))
    for i, (first, second) in enumerate(zip(query.required, query.required[1:], strict=False)):
        values[f"p{i}"] = _near(dialect, first[0], second[0])
    return values


NEAR = 3  # words at most between two terms found near each other (ranking's proximity)


def _near(dialect: str, first: Text, second: Text) -> str:
    """Two texts as typed (each a group's first) with at most NEAR words between them, in
    either order, within one text of a card (SQLite FTS5's NEAR; PostgreSQL's <N>, which
    counts positions: N - 1 words between)."""
    if dialect == "sqlite":
        return f"NEAR({_fts_text(dialect, first)} {_fts_text(dialect, second)}, {NEAR})"
    a, b = f"({_fts_text(dialect, first)})", f"({_fts_text(dialect, second)})"
    return " | ".join(f"({x} <{n}> {y})" for n in range(1, NEAR + 2) for x, y in ((a, b), (b, a)))


# The conditions of ``is:`` and ``has:``, by value (each its own SQL, so part of the shape).
_FLAGS: dict[str, Any] = {
    "is:favorite": lambda: Card.is_favorited.is_(True),
    "is:done": lambda: Card.completed_at.is_not(None),
    "is:archived": lambda: Card.archived_at.is_not(None),
    "is:failed": lambda: in_state("failed"),
    "has:file": lambda: Card.file_object.is_not(None),
    "has:notes": lambda: Card.notes.is_not(None) & (Card.notes != ""),
    "has:annotations": lambda: Card.annotation_count > 0,
}
BOUNDS = ("before", "after")  # merged into the list's createdBefore and createdAfter


def qualifier_key(qualifier: Qualifier) -> str:
    """What a qualifier's SQL depends on: its name, and for is: and has: its value."""
    return f"{qualifier.name}:{qualifier.value}" if qualifier.name in ("is", "has") else qualifier.name


def qualifier_condition(position: int, key: str, negated: bool) -> ColumnElement[bool]:
    """The condition of the qualifier at ``position`` (its value bound as ``qN``)."""
    value: Any = bindparam(f"q{position}")
    condition: ColumnElement[bool]
    if key in _FLAGS:
        condition = _FLAGS[key]()
    elif key == "tag":
        tagged = select(CardTag.card_pk).where(
            CardTag.account_id == bindparam("account_id"), CardTag.name_key == value
        )
        if negated:  # probed per card, not a hash of every card carrying the tag
            return ~exists().where(CardTag.card_pk == Card.pk, CardTag.name_key == value)
        condition = Card.pk.in_(tagged)
    elif key == "type":
        condition = Card.type == value
    elif key == "folder":
        folders = select(Folder.id).where(
            Folder.account_id == bindparam("account_id"),
            (Folder.id == value) | (Folder.name_key == bindparam(f"q{position}_key")),
        )
        if negated:
            return ~exists().where(FolderCard.card_pk == Card.pk, FolderCard.folder_id.in_(folders))
        condition = Card.pk.in_(select(FolderCard.card_pk).where(FolderCard.folder_id.in_(folders)))
    else:  # site: the host and its subdomains, a range of the reversed host names
        inside: ColumnElement[bool] = (Card.url_site >= value) & (
            Card.url_site < bindparam(f"q{position}_end")
        )
        return (Card.url_site.is_(None) | ~inside) if negated else inside
    return ~condition if negated else condition


def qualifier_parameters(qualifiers: tuple[Qualifier, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for position, qualifier in enumerate(qualifiers):
        name, value = qualifier.name, qualifier.value
        if name == "tag":
            values[f"q{position}"] = tag_key(str(value).strip())
        elif name == "folder":
            values[f"q{position}"], values[f"q{position}_key"] = value, tag_key(str(value).strip())
        elif name == "site":
            start = site_key(str(value))
            values[f"q{position}"], values[f"q{position}_end"] = start, start[:-1] + "/"
        elif name == "type":
            values[f"q{position}"] = value
    return values
