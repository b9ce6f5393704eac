"""Reading how a card holds each term from its index text agrees with the index's own queries
(SQLite FTS5: the same words, beginnings, phrases, tags and NEAR)."""

import json

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection

from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from cardvault.domain.search import holding, matching
from cardvault.domain.search.query import Text, parse

CONTENTS = [
    ("Heat transfer in a boundary layer", ["physics"]),
    ("the boundary of heat, later transfer of it", []),
    ("Transferring heat: notes on boundaries", ["heat-sink"]),
    ("e-mail the layer cake recipe", ["cake"]),
    ("nothing to see", ["boundary layer"]),
]
QUERIES = ["heat transfer", "boundar layer", '"boundary layer" cake', "e-mail cake", "transfer heat physics"]


def _found(connection: Connection, values: dict[str, str], name: str, headline: bool) -> set[int]:
    statement = text(matching.found_among("sqlite", name, headline))
    return {row[0] for row in connection.execute(statement, values)}


def test_the_read_text_holds_what_the_index_finds(database: Database, account_id: str) -> None:
    if database.dialect != "sqlite":
        pytest.skip("PostgreSQL tests its own index rows in one statement (cardvault.domain.cards.ranking)")
    with database.transaction() as session:
        pks = [
            editing.add_card(session, account_id=account_id, content=content, tags=tags).card.pk
            for content, tags in CONTENTS
        ]
    for q in QUERIES:
        query = parse(q)
        forms = [(*group, Text(("transferring",), prefix=False, form="stem")) for group in query.required]
        query = query.__class__(tuple(forms), query.excluded, query.qualifiers)
        values = matching.text_parameters("sqlite", query)
        with database.transaction(write=False) as session:
            connection = session.connection()
            held, near = holding.holding(connection, query.required, pks, len(query.required) - 1)

            among = {**values, "pks": json.dumps(pks)}
            for i in range(len(query.required)):
                tests = {"anywhere": (f"g{i}", False), "headline": (f"g{i}", True)}
                tests |= {"typed": (f"g{i}_w", False), "whole": (f"g{i}_f", False)}
                for kind, (name, headline) in tests.items():
                    read = {pk for pk in pks if getattr(held[pk][i], kind)}
                    assert read == _found(connection, among, name, headline), (q, i, kind)
            for i in range(len(query.required) - 1):
                assert {pk for pk in pks if near[pk][i]} == _found(connection, among, f"p{i}", False), (q, i)
