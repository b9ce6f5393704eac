"""Card rules on a real database (SQLite and PostgreSQL)."""

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.domain.cards import editing
from cardvault.domain.cards import listing as listings
from cardvault.domain.cards.listing import CardFilter
from cardvault.domain.db import Database
from cardvault.domain.errors import (
    ContentTooLarge,
    InvalidCursor,
    InvalidTag,
    NotFound,
    TypeMismatch,
    UploadNotFound,
)
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error

SECRET = "k" * 40


def add(database: Database, account_id: str, **fields: object) -> editing.Card:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, **fields).card  # type: ignore[arg-type]


def page_of(
    database: Database, account_id: str, limit: int = 50, cursor: str | None = None, **filters: object
) -> listings.CardPage:
    with database.transaction(write=False) as session:
        return listings.list_cards(
            session,
            account_id=account_id,
            secret=SECRET,
            filters=CardFilter(**filters),
            limit=limit,
            cursor=cursor,  # type: ignore[arg-type]
            with_total=True,
        )


class TestAddCard:
    def test_keeps_content_byte_for_byte(self, database: Database, account_id: str) -> None:
        content = "  # Title\r\n\n\tcafe\u0301 \u00a0 trailing  \n\n"
        card = add(database, account_id, content=content)
        with database.transaction(write=False) as session:
            assert editing.get_card(session, account_id=account_id, card_id=card.id).content == content

    def test_accepts_exactly_512_kib_and_refuses_one_byte_more(
        self, database: Database, account_id: str
    ) -> None:
        add(database, account_id, content="é" * (256 * 1024))
        with pytest.raises(ContentTooLarge) as caught:
            add(database, account_id, content="é" * (256 * 1024) + "x")
        assert caught.value.details == {"limitBytes": 524288, "actualBytes": 524289}

    def test_a_url_content_makes_a_link_with_its_url(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content=" https://example.com/a \n")
        assert (card.type, card.url, card.content) == (
            "link",
            "https://example.com/a",
            " https://example.com/a \n",
        )

    def test_an_explicit_type_wins(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="https://example.com", card_type="text")
        assert (card.type, card.url) == ("text", None)

    def test_tags_are_cleaned_and_deduplicated(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, tags=[" Work ", "work", "Home"])
        assert card.tags == ["Work", "Home"] and card.ai_tags == []

    def test_a_bad_tag_fails_and_creates_nothing(self, database: Database, account_id: str) -> None:
        with pytest.raises(InvalidTag):
            add(database, account_id, content="x", tags=["ok", " "])
        assert page_of(database, account_id).total == 0

    def test_an_unknown_file_key_is_refused(
        self, database: Database, account_id: str, tmp_path: Path
    ) -> None:
        store = LocalDiskStore(tmp_path, secret_key="k" * 48, public_url="http://127.0.0.1:9")
        for file_key in ("uploads/nope", "upl_" + "a" * 26):
            with database.transaction(write=False) as session, pytest.raises(UploadNotFound):
                editing.check_file(
                    session, store, account_id=account_id, file_key=file_key, file_etag='"x"',
                    card_type=None, content=None,
                )  # fmt: skip
        assert page_of(database, account_id).total == 0


class TestGetCard:
    def test_another_accounts_card_is_not_found(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        card = add(database, owner, content="mine")
        with database.transaction(write=False) as session, pytest.raises(NotFound):
            editing.get_card(session, account_id=other, card_id=card.id)


class TestUpdateCard:
    def test_sets_only_the_given_fields(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="a", notes="n", tags=["x"])
        with database.transaction() as session:
            updated = editing.update_card(session, account_id=account_id, card_id=card.id, tags=["y", "Y"])
        assert (updated.content, updated.notes, updated.tags) == ("a", "n", ["y"])

    def test_null_notes_clear_them(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, notes="n")
        with database.transaction() as session:
            assert (
                editing.update_card(session, account_id=account_id, card_id=card.id, notes=None).notes is None
            )

    def test_recasing_a_tag_keeps_one_tag(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, tags=["work", "home"])
        with database.transaction() as session:
            updated = editing.update_card(
                session, account_id=account_id, card_id=card.id, tags=["Home", "WORK"]
            )
        assert updated.tags == ["Home", "WORK"]

    def test_updated_at_moves_only_when_something_changes(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="a")
        with database.transaction() as session:
            same = editing.update_card(session, account_id=account_id, card_id=card.id, content="a")
        assert same.updated_at == card.updated_at
        with database.transaction() as session:
            changed = editing.update_card(session, account_id=account_id, card_id=card.id, content="b")
        assert changed.updated_at >= card.updated_at and changed.content == "b"

    def test_a_too_large_content_changes_nothing(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="a", tags=["t"])
        with database.transaction() as session, pytest.raises(ContentTooLarge):
            editing.update_card(
                session, account_id=account_id, card_id=card.id, tags=["u"], content="x" * 524289
            )
        with database.transaction(write=False) as session:
            again = editing.get_card(session, account_id=account_id, card_id=card.id)
        assert (again.content, again.tags) == ("a", ["t"])


class TestMarkDone:
    def test_keeps_the_first_completion_time(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, url="https://example.com")
        with database.transaction() as session:
            first = editing.mark_done(session, account_id=account_id, card_id=card.id).completed_at
        with database.transaction() as session:
            second = editing.mark_done(session, account_id=account_id, card_id=card.id).completed_at
        assert first is not None and first == second

    def test_refuses_a_card_that_is_not_a_link(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="text")
        with database.transaction() as session, pytest.raises(TypeMismatch):
            editing.mark_done(session, account_id=account_id, card_id=card.id)


class TestListCards:
    def test_pages_through_every_card_once_in_order(self, database: Database, account_id: str) -> None:
        made = [add(database, account_id, content=f"c{i}").id for i in range(7)]
        for sort, expected in (("newest", made[::-1]), ("oldest", made)):
            seen, cursor = [], None
            while True:
                page = page_of(database, account_id, limit=3, cursor=cursor, sort=sort)
                seen += [c.id for c in page.cards]
                assert page.total == 7
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert seen == expected

    def test_a_cursor_is_bound_to_its_filters_and_account(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        for i in range(3):
            add(database, owner, content=f"c{i}")
        cursor = page_of(database, owner, limit=1).next_cursor
        assert cursor is not None
        other_filters = ((owner, {"sort": "oldest"}), (owner, {"card_types": ("text",)}), (other, {}))
        for account, filters in other_filters:
            with pytest.raises(InvalidCursor):
                page_of(database, account, limit=1, cursor=cursor, **filters)
        tampered = ("B" if cursor[0] != "B" else "C") + cursor[1:]
        with pytest.raises(InvalidCursor):
            page_of(database, owner, cursor=tampered)

    def test_filters_by_type_favorite_and_time(self, database: Database, account_id: str) -> None:
        link = add(database, account_id, url="https://example.com")
        text = add(database, account_id, content="hello")
        with database.transaction() as session:
            editing.set_favorite(session, account_id=account_id, card_id=text.id, is_favorited=True)
        assert [c.id for c in page_of(database, account_id, card_types=("link",)).cards] == [link.id]
        assert [c.id for c in page_of(database, account_id, favorited=True).cards] == [text.id]
        assert [c.id for c in page_of(database, account_id, favorited=False).cards] == [link.id]
        assert page_of(database, account_id, created_after=text.created_at).total == 0
        assert page_of(database, account_id, created_before=link.created_at).total == 0
        assert page_of(database, account_id, created_after=link.created_at - 1).total == 2

    def test_ai_tags_move_updated_at_only_when_they_change(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="x")
        for tags, moves in ((["a"], True), (["A"], True), (["A"], False)):
            with database.transaction() as session:
                editing.get_card(session, account_id=account_id, card_id=card.id).updated_at = 1
                after = editing.set_ai_tags(session, account_id=account_id, card_id=card.id, tags=tags)
                assert (after.ai_tags, after.updated_at > 1) == (tags, moves)

    def test_tag_filter_ignores_case_and_covers_ai_tags(self, database: Database, account_id: str) -> None:
        tagged = add(database, account_id, tags=["Reading"])
        ai = add(database, account_id)
        with database.transaction() as session:
            editing.set_ai_tags(session, account_id=account_id, card_id=ai.id, tags=["reading"])
        assert {c.id for c in page_of(database, account_id, tags=(" READING ",)).cards} == {tagged.id, ai.id}

    def test_search_matches_every_word_as_a_prefix_ignoring_case(
        self, database: Database, account_id: str
    ) -> None:
        a = add(database, account_id, content="The Quick brown fox", notes="Jumps")
        b = add(database, account_id, content="quiet", tags=["Foxtrot"])
        add(database, account_id, content="nothing here")
        assert {c.id for c in page_of(database, account_id, q="QUI").cards} == {a.id, b.id}
        assert {c.id for c in page_of(database, account_id, q="qui fox").cards} == {a.id, b.id}
        assert {c.id for c in page_of(database, account_id, q="jump quick").cards} == {a.id}
        assert page_of(database, account_id, q="absent").total == 0
        assert page_of(database, account_id, q="!!!").total == 3

    def test_search_sees_edits_and_other_accounts_never_match(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        card = add(database, owner, content="alpha")
        add(database, other, content="alpha")
        with database.transaction() as session:
            editing.update_card(
                session, account_id=owner, card_id=card.id, content="beta", url="https://zulu.example"
            )
        assert page_of(database, owner, q="alpha").total == 0
        assert [c.id for c in page_of(database, owner, q="beta zulu").cards] == [card.id]

    def test_search_treats_query_syntax_as_words(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content='C++ AND NOT "x" y* NEAR(a b) café')
        for q in ['"', "NOT", "y*", "NEAR(", "a:b & !c | d", "CAFÉ", "'); DROP TABLE cards; --"]:
            page = page_of(database, account_id, q=q)
            assert page.total in (0, 1)
        assert page_of(database, account_id, q="near café").cards[0].id == card.id

    def test_search_ignores_accents_and_keeps_words_with_marks_whole(
        self, database: Database, account_id: str
    ) -> None:
        card = add(database, account_id, content="İstanbul nights at the Café; नमस्ते", tags=["Ωμέγα"])
        for q in ("istanbul", "CAFE", "café", "नमस्ते", "ωμεγα", "x" * 150):
            expected = [] if q.startswith("x") else [card.id]
            assert [c.id for c in page_of(database, account_id, q=q).cards] == expected, q

    def test_search_finds_long_words_by_prefix(self, database: Database, account_id: str) -> None:
        card = add(database, account_id, content="a" * 150)
        assert [c.id for c in page_of(database, account_id, q="a" * 120).cards] == [card.id]


# Defects found in review, each pinned by the behaviour that was wrong.
def test_concurrent_done_keeps_the_first_completion_time(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        card_id = editing.add_card(session, account_id=account_id, url="https://example.com").card.id
    results: list[int | None] = []
    barrier = threading.Barrier(8)

    def done() -> None:
        barrier.wait()
        with database.transaction() as session:
            results.append(editing.mark_done(session, account_id=account_id, card_id=card_id).completed_at)

    run_together(done, 8)
    assert len(set(results)) == 1 and results[0] is not None


def test_concurrent_tag_edits_of_one_card_all_succeed(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        card_id = editing.add_card(session, account_id=account_id, tags=["a"]).card.id
    errors: list[Exception] = []
    barrier = threading.Barrier(8)
    counter = iter(range(8))

    def edit() -> None:
        n = next(counter)
        barrier.wait()
        try:
            with database.transaction() as session:
                editing.update_card(session, account_id=account_id, card_id=card_id, tags=["a", f"b{n}"])
        except Exception as exc:
            errors.append(exc)

    run_together(edit, 8)
    assert errors == []
    with database.transaction(write=False) as session:
        tags = editing.get_card(session, account_id=account_id, card_id=card_id).tags
    assert tags[0] == "a" and len(tags) == 2


def run_together(target: Callable[[], None], count: int) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_done_on_a_card_in_trash_is_409_whatever_its_type(api: Api) -> None:
    card = api.create(content="plain text")
    api.post(f"/v1/cards/{card['id']}/trash")
    assert_error(api.post(f"/v1/cards/{card['id']}/done"), 409, "CARD_IN_TRASH")
