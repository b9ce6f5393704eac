"""The account's search vocabulary on a real database (SQLite and PostgreSQL): its counts follow
cards made, edited and purged (savepoints and rollbacks included, concurrent writers never
deadlocking), and a query word finds its other forms and what its typo meant."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from sqlalchemy import delete, event, select, text, update
from sqlalchemy.exc import IntegrityError

from cardvault.domain.cards import editing, trash
from cardvault.domain.db import Database
from cardvault.domain.models import Account, Card, Folder, SearchWord
from cardvault.domain.search import vocabulary
from cardvault.domain.search.index import index_card
from cardvault.domain.search.stopwords import STOP_WORDS
from cardvault.domain.search.vocabulary import MAX_STEMS, MAX_TYPOS, Forms


def _add(database: Database, account_id: str, content: str, **fields: object) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, content=content, **fields).card.id  # type: ignore[arg-type]


def _counts(database: Database, account_id: str) -> dict[str, int]:
    with database.transaction(write=False) as session:
        rows = session.execute(
            select(SearchWord.word, SearchWord.cards).where(
                SearchWord.account_id == account_id, SearchWord.cards != 0
            )
        )
        return {word: int(cards) for word, cards in rows}


def _lengths(database: Database, account_id: str) -> list[int]:
    with database.transaction(write=False) as session:
        return list(
            session.scalars(select(Card.search_words).where(Card.account_id == account_id).order_by(Card.pk))
        )


def _forms(database: Database, account_id: str, *words: str, typos: bool = True) -> dict[str, Forms]:
    with database.transaction(write=False) as session:
        return vocabulary.forms(session, account_id, list(words), typos=list(words) if typos else [])


def test_counts_follow_cards_made_edited_and_purged(database: Database, account_id: str) -> None:
    first = _add(database, account_id, "Kubernetes tuning for Postgres", notes="postgres notes")
    second = _add(database, account_id, "tuning the kernel")
    assert _counts(database, account_id) == {
        "kubernetes": 1,
        "tuning": 2,
        "postgres": 1,
        "notes": 1,
        "kernel": 1,
    }  # "for" and "the" are stop words, "postgres" is counted once for its card
    assert _lengths(database, account_id) == [5, 3]  # distinct indexed words, stop words included
    with database.transaction() as session:
        editing.update_card(session, account_id=account_id, card_id=second, content="kernel panic")
    assert _counts(database, account_id) == {
        "kubernetes": 1,
        "tuning": 1,
        "postgres": 1,
        "notes": 1,
        "kernel": 1,
        "panic": 1,
    }
    assert _lengths(database, account_id) == [5, 2]
    with database.transaction() as session:
        trash.move_to_trash(session, account_id=account_id, card_id=first)
    assert _counts(database, account_id)["kubernetes"] == 1  # Trash is still counted
    with database.transaction() as session:
        trash.delete_forever(session, account_id=account_id, card_id=first)
    assert _counts(database, account_id) == {"kernel": 1, "panic": 1}
    with database.transaction() as session:
        trash.move_to_trash(session, account_id=account_id, card_id=second)
        editing.add_card(session, account_id=account_id, content="panic again")
    with database.transaction() as session:
        assert trash.empty_trash(session, account_id=account_id) == 1
    assert _counts(database, account_id) == {"panic": 1, "again": 1}


def test_the_expired_purge_takes_each_cards_words_from_its_own_account(
    database: Database, new_account: Callable[[], str]
) -> None:
    one, two = new_account(), new_account()
    gone = [_add(database, one, "shared words"), _add(database, two, "shared tokens")]
    _add(database, two, "shared")
    with database.transaction() as session:
        for account_id, card_id in zip((one, two), gone, strict=True):
            trash.move_to_trash(session, account_id=account_id, card_id=card_id)
        session.execute(update(Card).where(Card.id.in_(gone)).values(deleted_at=1))
    with database.transaction() as session:
        trash.purge_expired(session, retention_ms=1)
    assert _counts(database, one) == {}
    assert _counts(database, two) == {"shared": 1}


def test_an_account_deleted_takes_its_vocabulary(database: Database, new_account: Callable[[], str]) -> None:
    doomed = new_account()
    _add(database, doomed, "transient kubernetes words")
    with database.transaction() as session:
        session.execute(delete(Account).where(Account.id == doomed))
    with database.transaction(write=False) as session:
        assert session.scalar(select(SearchWord.word).where(SearchWord.account_id == doomed)) is None
    if database.dialect == "sqlite":  # and its trigram rows
        with database.transaction(write=False) as session:
            left = session.scalar(
                text("SELECT count(*) FROM search_word_grams WHERE account_id = :a"), {"a": doomed}
            )
        assert left == 0


def test_a_rolled_back_savepoint_forgets_its_words_and_a_rolled_back_transaction_all(
    database: Database, account_id: str
) -> None:
    with database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="outer words")
        with session.begin_nested():
            editing.add_card(session, account_id=account_id, content="inner words")
        try:
            with session.begin_nested():
                editing.add_card(session, account_id=account_id, content="lost words")
                folder = {"account_id": account_id, "name": "Dup", "name_key": "dup", "color": None}
                stamp = {"kind": "user", "created_at": 0, "updated_at": 0}
                session.add(Folder(id=f"fld_a{account_id}", **folder, **stamp))
                session.add(Folder(id=f"fld_b{account_id}", **folder, **stamp))
                session.flush()  # the name is taken: this savepoint rolls back
        except IntegrityError:
            pass
    assert _counts(database, account_id) == {"outer": 1, "inner": 1, "words": 2}
    with pytest.raises(RuntimeError), database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="doomed words")
        raise RuntimeError("rolled back")
    assert _counts(database, account_id) == {"outer": 1, "inner": 1, "words": 2}


def test_concurrent_writers_of_one_account_never_deadlock_and_count_exactly(
    database: Database, account_id: str
) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite runs one writer at a time")
    words = [f"shared{i}" for i in range(600)]
    # The cards' words written straight (editing a card queues its ai stage, and a card made
    # counts into its account's row: either keeps two writers of an account apart).
    owned = {seed: [_add(database, account_id, "blank") for _ in range(2)] for seed in (1, 2)}
    last: dict[str, list[str]] = {}
    failures: list[BaseException] = []
    together = threading.Barrier(2, timeout=30)

    def writer(seed: int) -> None:
        shuffled = random.Random(seed)
        try:
            for _ in range(10):
                with database.transaction() as session:
                    for card_id in owned[seed]:  # each card its own words, in its own order
                        last[card_id] = shuffled.sample(words, 400)
                        card = editing.get_card(
                            session, account_id=account_id, card_id=card_id, for_update=True
                        )
                        card.content = " ".join(last[card_id])
                        session.flush()
                        index_card(session, card)
                    together.wait()  # both commit at once: their vocabulary writes overlap
        except BaseException as exc:
            together.abort()
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in owned]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [exc for exc in failures if not isinstance(exc, threading.BrokenBarrierError)] == []
    expected: dict[str, int] = {}
    for picked in last.values():
        for word in picked:
            expected[word] = expected.get(word, 0) + 1
    assert _counts(database, account_id) == expected


def test_a_word_finds_its_other_forms_most_cards_first(database: Database, account_id: str) -> None:
    _add(database, account_id, "tax return")
    _add(database, account_id, "tax office")
    _add(database, account_id, "tuned engine, tune it")
    _add(database, account_id, "tuned again")
    found = _forms(database, account_id, "taxes", "tuning", "tax")
    assert found["taxes"] == Forms(0, (("tax", 2),), ())  # not held, and no typo of it either
    assert found["tuning"].cards == 0 and found["tuning"].stems == (("tuned", 2), ("tune", 1))
    assert found["tax"] == Forms(2, (), ())  # held: no typos sought


def test_a_typo_finds_the_words_it_meant_within_its_allowance(database: Database, account_id: str) -> None:
    _add(database, account_id, "kubernetes postgres cluster")
    _add(database, account_id, "postgres replica code")
    _add(database, account_id, "hello")
    found = _forms(database, account_id, "kubernets", "postgers", "gostgres", "cdoe", "cluster", "clustre")
    assert found["kubernets"].typos == (("kubernetes", 1),)
    assert found["postgers"].typos == (("postgres", 2),)  # a swap of neighbours
    assert found["gostgres"].typos == ()  # never the first letter
    assert found["cdoe"].typos == ()  # under 5 letters: no typo
    assert found["cluster"] == Forms(1, (), ())  # a word held has no typos
    assert found["clustre"].typos == (("cluster", 1),)
    # A swap in the middle of a five-letter word leaves 2 of its 10 trigrams: still a candidate.
    assert _forms(database, account_id, "hlelo")["hlelo"].typos == (("hello", 1),)
    assert _forms(database, account_id, "kubernets", typos=False)["kubernets"].typos == ()
    assert _forms(database, account_id, "kubernetis")["kubernetis"].typos == (("kubernetes", 1),)  # 2 edits


def test_a_stop_word_is_not_counted_nor_looked_up(database: Database, account_id: str) -> None:
    _add(database, account_id, "how does which work")
    assert _counts(database, account_id) == {"work": 1}
    assert {"how", "what", "why", "which", "who", "when", "where", "i", "do", "does"} <= STOP_WORDS
    assert _forms(database, account_id, "which", "where")["which"] == Forms(0)


def test_lookups_are_bounded_fewest_edits_then_most_cards_first(database: Database, account_id: str) -> None:
    group = (
        "connect connects connected connection connections connective connectives connectivity connectively"
    )
    forms = group.split()  # all of them "connect" to Snowball's English, as "connecting" is
    for n in range(len(forms)):
        _add(database, account_id, " ".join(forms[: len(forms) - n]))  # forms[0] in 9 cards, ...
    near = [f"marble{letter}" for letter in "abcdefghijkl"]  # each one edit from "marblex"
    _add(database, account_id, " ".join(near))
    _add(database, account_id, "marblez marblezz")
    _add(database, account_id, "marblez")
    found = _forms(database, account_id, "connecting", "marblex")
    assert found["connecting"].stems == tuple((word, 9 - n) for n, word in enumerate(forms[:MAX_STEMS]))
    typos = found["marblex"].typos
    assert len(typos) == MAX_TYPOS and typos[0] == ("marblez", 2)  # one edit, two cards
    assert [word for word, _ in typos[1:]] == near[: MAX_TYPOS - 1]  # one edit, one card each


def test_languages_pick_their_snowball_stemmer_and_english_otherwise() -> None:
    assert vocabulary.algorithm("de") == "german" and vocabulary.algorithm("pt-BR") == "portuguese"
    assert vocabulary.algorithm("French") == "french"
    assert vocabulary.algorithm(None) == vocabulary.algorithm("xx") == "english"
    assert vocabulary.stem("taxes") == "tax" and vocabulary.stem("tuning") == vocabulary.stem("tuned")
    assert vocabulary.stem("laufen", "de") == "lauf"


def test_the_distance_counts_swaps_as_one_edit_and_stops_past_its_limit() -> None:
    assert vocabulary.distance("postgers", "postgres", 1) == 1
    assert vocabulary.distance("kubernets", "kubernetes", 2) == 1
    assert vocabulary.distance("abcdef", "badcfe", 2) == 3  # three swaps: past the limit
    assert vocabulary.distance("same", "same", 0) == 0
    assert [vocabulary.allowance(w) for w in ("four", "fives", "eightchr", "ninechars")] == [0, 1, 1, 2]


def test_one_lookup_of_many_words_sends_two_statements_on_postgresql(
    database: Database, account_id: str
) -> None:
    if database.dialect != "postgresql":
        pytest.skip("SQLite runs in the process: a statement a word")
    _add(database, account_id, "kubernetes postgres clusters")
    words = ["kubernets", "postgers", "cluster", "nothing", "elsewhere", "another", "missing", "words"]
    sent: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        found = _forms(database, account_id, *words)
    finally:
        event.remove(database.engine, "before_cursor_execute", count)
    assert found["kubernets"].typos == (("kubernetes", 1),) and found["cluster"].stems == (("clusters", 1),)
    assert len([s for s in sent if "search_words" in s]) == 2
