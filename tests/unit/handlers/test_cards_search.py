"""Search through listCards: relevance tiers, phrases, exclusions, OR, qualifiers, highlights
and facets, on both databases, through the HTTP edge."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from cardvault.domain.db import Database
from cardvault.domain.models import Card
from cardvault.domain.search.index import index_card
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def titled(database: Database, card_id: str, title: str | None = None, transcript: str | None = None) -> None:
    """Give a card the title its link's page would (and a transcript), indexed as the pipeline does."""
    with database.transaction() as session:
        card = session.execute(select(Card).where(Card.id == card_id)).scalar_one()
        card.metadata_title, card.ai_transcript = title, transcript
        index_card(session, card)


def found(api: Api, **params: Any) -> list[str]:
    response = api.get("/v1/cards", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def test_relevance_puts_headline_matches_first_each_tier_newest_first(api: Api, database: Database) -> None:
    body_old = api.create(content="Weekly log\nwe ran vacuum on postgres last week")["id"]
    title_card = api.create(content="https://example.com/a", url="https://example.com/a")["id"]
    titled(database, title_card, "Postgres vacuum explained")
    notes_card = api.create(content="checklist", notes="postgres vacuum and analyze")["id"]
    first_line = api.create(content="Postgres vacuum, step by step\n1. analyze")["id"]  # a note's title
    half = api.create(content="Chores\nvacuum the database", tags=["Postgres"])["id"]
    body_new = api.create(content="Reminders\npostgres: remember to vacuum")["id"]
    only = api.create(content="postgres only")["id"]
    # Tiers: both words in the headline, one, none; in a tier the shorter card (BM25), then the
    # newest; a card holding one word only follows those holding both.
    ranked = found(api, q="postgres vacuum")
    assert set(ranked[:3]) == {first_line, notes_card, title_card}
    assert ranked[3:] == [half, body_new, body_old, only] or ranked[3:] == [half, body_old, body_new, only]
    newest = [body_new, half, first_line, notes_card, title_card, body_old]
    assert found(api, q="postgres vacuum", sort="newest") == newest
    assert found(api, q="postgres vacuum", sort="oldest") == newest[::-1]


def test_whole_words_come_before_beginnings_in_each_tier(api: Api, database: Database) -> None:
    whole = api.create(content="https://git-scm.com/", url="https://git-scm.com/")["id"]
    titled(database, whole, "Git rebase")
    beginning = api.create(content="https://github.com/x", url="https://github.com/x")["id"]
    titled(database, beginning, "GitHub rebase tips")
    body_whole = api.create(content="Notes\ngit rebase -i")["id"]
    body_beginning = api.create(content="Notes\ngithub rebase button")["id"]
    assert found(api, q="git rebase") == [whole, beginning, body_whole, body_beginning]
    assert found(api, q='"git" rebase') == [whole, body_whole]


def test_relevance_pages_through_the_tiers_with_cursors(api: Api, database: Database) -> None:
    made = [
        api.create(content=f"Fruit\nkiwi {i}", tags=["kiwi"] if i % 3 == 0 else [])["id"] for i in range(10)
    ]
    expected = [made[i] for i in (9, 6, 3, 0)] + [made[i] for i in (8, 7, 5, 4, 2, 1)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"q": "kiwi", "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/cards", params=params).json()
        seen += [item["id"] for item in page["items"]]
        cursor = page["pageInfo"]["nextCursor"]
        if cursor is None:
            break
    assert seen == expected
    # A cursor of the relevance order is refused under another sort.
    first = api.get("/v1/cards", params={"q": "kiwi", "limit": 3}).json()["pageInfo"]["nextCursor"]
    assert_error(
        api.get("/v1/cards", params={"q": "kiwi", "sort": "newest", "cursor": first}), 400, "INVALID_CURSOR"
    )


def test_phrases_are_exact_and_never_run_from_one_text_into_the_next(api: Api, database: Database) -> None:
    side_by_side = api.create(content="the quick brown fox")["id"]
    api.create(content="brown quick fox")
    apart = api.create(content="the end is quick", notes="brown bears")["id"]
    tagged = api.create(content="x", tags=["quick", "brown"])["id"]
    assert found(api, q='"quick brown"') == [side_by_side]
    assert found(api, q='"quick bro"') == []  # whole words
    assert found(api, q="quick-bro") == [side_by_side]  # a bare term's last word is a beginning
    assert set(found(api, q="quick brown")) >= {side_by_side, apart, tagged}


def test_exclusions_and_or(api: Api) -> None:
    cat = api.create(content="a cat sat")["id"]
    dog = api.create(content="a dog sat")["id"]
    both = api.create(content="cat and dog sat")["id"]
    api.create(content="a bird sat")
    bird = found(api, q="bird")
    assert set(found(api, q="sat cat OR dog", sort="newest")) == {cat, dog, both}
    assert set(found(api, q="sat cat OR dog")[:3]) == {cat, dog, both}
    assert found(api, q="sat cat OR dog")[3:] == bird  # holding "sat" only, it follows
    assert set(found(api, q='sat -dog -"a bird"')) == {cat}
    assert found(api, q="-sat") == []


def test_every_qualifier_filters_and_combines_with_the_parameters(api: Api, database: Database) -> None:
    folder = api.post("/v1/folders", json={"name": "Reading List"}).json()
    link = api.create(
        content="https://blog.example.com/x", url="https://blog.example.com/x", tags=["To Read"]
    )["id"]
    other_site = api.create(content="https://notexample.com/", url="https://notexample.com/")["id"]
    note = api.create(content="plain", notes="a note")["id"]
    assert api.post(f"/v1/cards/{link}/done").status_code == 200
    fav = api.create(content="fav")["id"]
    assert api.patch(f"/v1/cards/{fav}/favorite", json={"isFavorited": True}).status_code == 200
    archived = api.create(content="old")["id"]
    assert api.post(f"/v1/cards/{archived}/archive").status_code == 200
    assert api.post(f"/v1/folders/{folder['id']}/cards", json={"cardIds": [note]}).status_code == 200
    assert found(api, q='tag:"to read"') == [link]
    assert link not in found(api, q='-tag:"TO READ"')
    assert found(api, q="is:done") == [link] and found(api, q="is:favorite") == [fav]
    assert fav not in found(api, q="-is:favorite")
    assert found(api, q="site:example.com") == [link]
    assert found(api, q="site:blog.example.com/whatever") == [link]
    assert other_site in found(api, q="-site:example.com") and link not in found(api, q="-site:example.com")
    assert found(api, q="type:link site:example.com", type="link") == [link]
    assert found(api, q="type:image", type="link") == []  # a contradiction: an empty page
    assert found(api, q="folder:reading-list") == [] and found(api, q='folder:"reading list"') == [note]
    assert found(api, q=f"folder:{folder['id']}") == [note]
    assert found(api, q="has:notes") == [note]
    assert found(api, q="is:archived") == [archived]
    assert found(api, q="is:archived", archived="exclude") == []
    assert archived not in found(api, q="-is:archived", archived="include")


def test_dates_bound_created_at(api: Api) -> None:
    card = api.create(content="dated")
    at = card["createdAt"]
    assert found(api, q=f"after:{at}") == [card["id"]]
    assert found(api, q=f"before:{at}") == []
    assert found(api, q=f"-after:{at + 1}") == [card["id"]]
    assert found(api, q="before:1970-01-02") == []


@pytest.mark.parametrize(("q", "position"), [("type:banana", 0), ("a is:read", 2), ("before:soon", 0)])
def test_a_value_that_names_nothing_answers_400_with_its_position(api: Api, q: str, position: int) -> None:
    body = assert_error(api.get("/v1/cards", params={"q": q}), 400, "INVALID_QUERY")
    assert body["details"]["position"] == position


def test_highlights_mark_the_words_by_offsets(api: Api, database: Database) -> None:
    card = api.create(content="Ünïcode café: the CAFÉ is open", notes="no match here")["id"]
    titled(database, card, "Cafés of Paris", transcript="we went to a cafe")
    items = api.get("/v1/cards", params={"q": "cafe -tea", "include": "highlights"}).json()["items"]
    highlights = items[0]["highlights"]
    content = highlights["content"][0]
    assert [content["text"][m["start"] : m["end"]] for m in content["matches"]] == ["café", "CAFÉ"]
    assert highlights["title"][0]["matches"] == [{"start": 0, "end": 5}]
    assert highlights["notes"] == []
    assert highlights["transcript"][0]["text"] == "we went to a cafe"


def test_facets_count_types_and_tags_of_every_match(api: Api) -> None:
    for i in range(3):
        api.create(content=f"apple {i}", tags=["Fruit", "red"] if i else ["fruit"])
    api.create(content="https://apple.com/", url="https://apple.com/", tags=["Tech"])
    api.create(content="pear")
    body = api.get("/v1/cards", params={"q": "apple", "include": "facets", "limit": 1}).json()
    assert body["facets"] == {
        "types": [{"type": "text", "count": 3}, {"type": "link", "count": 1}],
        "tags": [{"name": "Fruit", "count": 3}, {"name": "red", "count": 2}, {"name": "Tech", "count": 1}],
        "capped": False,
    }


def test_another_accounts_cards_are_never_found(api: Api, make_api: Any) -> None:
    other = make_api()
    other.create(content="secret walrus", tags=["walrus"])
    assert found(api, q="walrus") == [] and found(api, q="tag:walrus") == []
    assert api.get("/v1/cards", params={"q": "walrus", "include": "facets"}).json()["facets"]["tags"] == []


def test_explain_says_which_bucket_tier_and_terms_placed_each_card(api: Api) -> None:
    every = api.create(content="Tuning Postgres autovacuum")["id"]
    some = api.create(content="Postgres backups")["id"]
    api.create(content="Sourdough")
    body = api.get(
        "/v1/cards", params={"q": "how do I tune autovacuum in postgres", "include": "explain"}
    ).json()
    assert [item["id"] for item in body["items"]] == [every, some]
    first, second = (item["explain"] for item in body["items"])
    assert first["bucket"] == "everyTerm" and first["tier"] == 4  # a text card's first line is its title
    assert [term["term"] for term in first["terms"]] == ["tune", "autovacuum", "postgres"]
    assert [term["found"] for term in first["terms"]] == [True, True, True]
    assert [term["asTyped"] for term in first["terms"]] == [
        False,
        True,
        True,
    ]  # "tuning" begins with "tun"...
    assert second["bucket"] == "someTerms" and second["tier"] is None
    assert [term["found"] for term in second["terms"]] == [False, False, True]
    assert second["terms"][2]["where"] == "headline" and second["score"] < first["score"]
    plain = api.get("/v1/cards", params={"include": "explain"}).json()["items"]
    assert {item["explain"] is None for item in plain} == {True}


def test_explain_names_the_cards_found_by_related_words(api: Api) -> None:
    best = api.create(content="How to fall asleep faster and sleep better", tags=["sleep"])["id"]
    related = api.create(content="Sleep rules: no caffeine after 1 pm", tags=["sleep"])["id"]
    api.create(content="Sourdough")
    body = api.get("/v1/cards", params={"q": "fall asleep faster", "include": "explain"}).json()
    assert [item["id"] for item in body["items"]] == [best, related]
    first, second = (item["explain"] for item in body["items"])
    assert first["bucket"] == "everyTerm" and first["relatedScore"] > 0  # it holds "sleep" too
    assert second["bucket"] == "relatedWords" and second["tier"] is None
    assert [term["found"] for term in second["terms"]] == [False, False, False]
    assert second["score"] == second["relatedScore"] > 0


def test_q_holds_up_to_1024_characters_and_48_words(api: Api) -> None:
    card = api.create(content="needle in a haystack")["id"]
    long_q = " ".join(f"w{i:03d}" for i in range(47)) + " needle"
    assert found(api, q=long_q + " " + "x" * (1023 - len(long_q) - 1)) == [card]
    assert_error(api.get("/v1/cards", params={"q": "x" * 1025}), 400, "INVALID_INPUT")
