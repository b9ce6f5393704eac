"""Listing cards at scale: one statement per page, filters that read in list order, tag words
in the index, and plans that use the indexes (SQLite and PostgreSQL)."""

from sqlalchemy import insert, text

from cardvault.domain import folders
from cardvault.domain.cards import editing, listing, ranking, trash
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.ids import new_id
from cardvault.domain.models import Card
from tests.conftest import Api
from tests.unit.domain.cards.test_reading import statements as recorded
from tests.unit.handlers.test_cards import assert_error

SECRET = "k" * 40


class TestPage:
    def test_a_page_is_one_statement_and_a_total_one_more(self, database: Database, account_id: str) -> None:
        with database.transaction() as session:
            for i in range(3):
                editing.add_card(session, account_id=account_id, content=f"c{i}", tags=[f"t{i}"])
        for with_total, statements in ((False, 1), (True, 2)):
            stop = recorded(database)
            with database.transaction(write=False, snapshot=with_total) as session:
                page = listing.list_cards(
                    session, account_id=account_id, secret=SECRET, filters=CardFilter(), with_total=with_total
                )
            assert len(stop()) == statements
            assert [c.tags for c in page.cards] == [["t2"], ["t1"], ["t0"]]
            assert page.total == (3 if with_total else None)


class TestTagAndFolderFilters:
    def test_a_card_carrying_a_tag_twice_is_listed_once(self, database: Database, account_id: str) -> None:
        with database.transaction() as session:
            made = [
                editing.add_card(session, account_id=account_id, content=f"c{i}", tags=["Read"]).card
                for i in range(4)
            ]
            for card in made:
                editing.set_ai_tags(session, account_id=account_id, card_id=card.id, tags=["read"])
        pages = _walk(database, account_id, CardFilter(tags=("READ",)), limit=1, with_total=True)
        assert {page.total for page in pages} == {4}
        assert [c.id for page in pages for c in page.cards] == [c.id for c in reversed(made)]

    def test_date_bounds_apply_with_a_tag_or_folder_filter(self, database: Database, account_id: str) -> None:
        with database.transaction() as session:
            made = [
                editing.add_card(session, account_id=account_id, content=f"c{i}", tags=["t"]).card
                for i in range(5)
            ]
            folder = folders.create_folder(session, account_id=account_id, name="F")
        with database.transaction() as session:
            folders.add_cards(
                session, account_id=account_id, folder_id=folder.id, card_ids=[c.id for c in made]
            )
        middle = made[2].created_at
        for by in ({"tags": ("T",)}, {"folders": (folder.id,)}):
            with database.transaction(write=False) as session:
                before = listing.list_cards(
                    session,
                    account_id=account_id,
                    secret=SECRET,
                    filters=CardFilter(created_before=middle, **by),
                )
                after = listing.list_cards(
                    session,
                    account_id=account_id,
                    secret=SECRET,
                    filters=CardFilter(created_after=middle, **by),
                )
            assert {c.id for c in before.cards} == {c.id for c in made if c.created_at < middle}
            assert {c.id for c in after.cards} == {c.id for c in made if c.created_at > middle}

    def test_a_folder_lists_its_cards_in_list_order(self, database: Database, account_id: str) -> None:
        with database.transaction() as session:
            made = [editing.add_card(session, account_id=account_id, content=f"c{i}").card for i in range(3)]
            folder = folders.create_folder(session, account_id=account_id, name="F")
        with database.transaction() as session:  # added newest first: the list still goes by createdAt
            folders.add_cards(
                session, account_id=account_id, folder_id=folder.id, card_ids=[c.id for c in made[::-1]]
            )
        with database.transaction(write=False) as session:
            newest = listing.list_cards(
                session, account_id=account_id, secret=SECRET, filters=CardFilter(folders=(folder.id,))
            )
            oldest = listing.list_cards(
                session,
                account_id=account_id,
                secret=SECRET,
                filters=CardFilter(folders=(folder.id,), sort="oldest"),
            )
        assert [c.id for c in oldest.cards] == [c.id for c in made] == [c.id for c in newest.cards][::-1]


class TestTagSearch:
    def test_a_tag_deleted_with_its_card_is_not_found_in_a_row_reusing_its_place(
        self, database: Database, account_id: str
    ) -> None:
        with database.transaction() as session:
            gone = editing.add_card(session, account_id=account_id, content="x", tags=["zebra"]).card
        with database.transaction() as session:
            trash.move_to_trash(session, account_id=account_id, card_id=gone.id)
        with database.transaction() as session:
            trash.delete_forever(session, account_id=account_id, card_id=gone.id)
        with database.transaction() as session:
            kept = editing.add_card(session, account_id=account_id, content="y", tags=["yak"]).card
        with database.transaction(write=False) as session:
            found = {
                q: [
                    c.id
                    for c in listing.list_cards(
                        session, account_id=account_id, secret=SECRET, filters=CardFilter(q=q)
                    ).cards
                ]
                for q in ("zeb", "ya")
            }
        assert found == {"zeb": [], "ya": [kept.id]}

    def test_tag_words_are_found_through_an_index_not_a_scan(
        self, database: Database, account_id: str
    ) -> None:
        with database.transaction() as session:
            editing.add_card(session, account_id=account_id, content="x", tags=["reading list"])
            plan = _plan(
                session, *listing.list_query(session, account_id=account_id, filters=CardFilter(q="read"))
            )
        if database.dialect == "sqlite":
            assert "SCAN card_tag_search VIRTUAL TABLE" in plan and "SCAN card_tags" not in plan, plan
        else:
            assert "Seq Scan" not in plan and "card_search" in plan, plan

    def test_tag_words_are_still_found_after_vacuum(self, database: Database, account_id: str) -> None:
        # VACUUM may renumber the hidden rowids of card_tags; the tag index is keyed by card.
        with database.transaction() as session:
            made = [
                editing.add_card(session, account_id=account_id, content="x", tags=[f"w{i}x"]).card
                for i in range(6)
            ]
        for card in made[:3]:
            with database.transaction() as session:
                trash.move_to_trash(session, account_id=account_id, card_id=card.id)
            with database.transaction() as session:
                trash.delete_forever(session, account_id=account_id, card_id=card.id)
        if database.dialect == "sqlite":
            raw = database.engine.raw_connection()  # outside any transaction, as VACUUM needs
            try:
                raw.cursor().execute("VACUUM")
            finally:
                raw.close()
        with database.transaction(write=False) as session:
            found = {
                i: [
                    c.id
                    for c in listing.list_cards(
                        session, account_id=account_id, secret=SECRET, filters=CardFilter(q=f"w{i}")
                    ).cards
                ]
                for i in range(6)
            }
        assert found == {i: ([] if i < 3 else [made[i].id]) for i in range(6)}


class TestPlans:
    def test_the_first_page_walks_the_list_index_once_statistics_exist(
        self, database: Database, account_id: str
    ) -> None:
        # A full index on deleted_at made SQLite, after ANALYZE, read every live card through
        # it and sort them in a temporary B-tree (37 ms -> 242 ms at 100k cards).
        rows = [
            {
                "id": new_id("crd"),
                "account_id": account_id,
                "type": "text",
                "content": "",
                "is_favorited": False,
                "created_at": i,
                "updated_at": i,
                "deleted_at": i if i % 50 == 0 else None,
            }
            for i in range(2000)
        ]
        with database.transaction() as session:
            session.execute(insert(Card), rows)
        with database.engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()
        with database.transaction(write=False) as session:
            plan = _plan(session, *listing.list_query(session, account_id=account_id, filters=CardFilter()))
        assert "ix_cards_account_created" in plan and "ix_cards_deleted_at" not in plan, plan
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def _plan(session: object, query: object, values: dict[str, object]) -> str:
    """The plan of a query: EXPLAIN QUERY PLAN on SQLite; on PostgreSQL, EXPLAIN with sequential
    scans made a last resort, so the plan shows whether an index can serve each table at all."""
    bind = session.get_bind()  # type: ignore[attr-defined]
    bound = query.params({**values, "limit": 51})  # type: ignore[attr-defined]
    compiled = bound.compile(bind, compile_kwargs={"literal_binds": True})
    if bind.dialect.name == "sqlite":
        rows = session.execute(text(f"EXPLAIN QUERY PLAN {compiled}")).all()  # type: ignore[attr-defined]
        return "\n".join(str(row[-1]) for row in rows)
    session.execute(text("SET LOCAL enable_seqscan = off"))  # type: ignore[attr-defined]
    rows = session.execute(text(f"EXPLAIN {compiled}")).all()  # type: ignore[attr-defined]
    return "\n".join(row[0] for row in rows)


# Defects found in review, each pinned by the behaviour that was wrong.


def _walk(
    database: Database, account_id: str, filters: CardFilter, *, limit: int, with_total: bool = False
) -> list[listing.CardPage]:
    """Every page of a listing, following its cursors."""
    pages, cursor = [], None
    while True:
        with database.transaction(write=False) as session:
            page = listing.list_cards(
                session,
                account_id=account_id,
                secret=SECRET,
                filters=filters,
                limit=limit,
                cursor=cursor,
                with_total=with_total,
            )
        pages.append(page)
        if (cursor := page.next_cursor) is None:
            return pages


def test_the_type_filter_alone_narrows_the_list(api: Api) -> None:
    quote = api.create(content='"Hi." — Me')
    api.create(content="plain")
    body = api.get("/v1/cards", params={"type": "quote", "include": "total"}).json()
    assert [i["id"] for i in body["items"]] == [quote["id"]] and body["total"] == 1


def test_a_cursor_for_one_type_is_refused_for_another(api: Api) -> None:
    for _ in range(2):
        api.create(content="plain")
    cursor = api.get("/v1/cards", params={"type": "text", "limit": 1}).json()["pageInfo"]["nextCursor"]
    assert_error(api.get("/v1/cards", params={"type": "link", "cursor": cursor}), 400, "INVALID_CURSOR")


def test_relevance_reads_the_tiers_in_turn_when_many_cards_match(database: Database, account_id: str) -> None:
    """Past ranking.FEW matches the tiers are read one after another from the indexes (fewer are
    ranked in one read): the same order, page after page."""
    made = []
    with database.transaction() as session:
        for i in range(ranking.FEW + 60):
            tags = ["kiwi"] if i % 7 == 0 else []
            content = f"Fruit\n{'kiwifruit' if i % 5 == 0 else 'kiwi'} number {i}"
            made.append(
                (i, editing.add_card(session, account_id=account_id, content=content, tags=tags).card.pk)
            )
    newest = [pk for _, pk in reversed(made)]
    index = dict((pk, i) for i, pk in made)
    tiers = [  # tag and whole word; body, whole word; body, a beginning only
        [pk for pk in newest if index[pk] % 7 == 0],
        [pk for pk in newest if index[pk] % 7 and index[pk] % 5],
        [pk for pk in newest if index[pk] % 7 and index[pk] % 5 == 0],
    ]
    seen = [
        card.pk for page in _walk(database, account_id, CardFilter(q="kiwi"), limit=50) for card in page.cards
    ]
    assert seen == [pk for tier in tiers for pk in tier]
