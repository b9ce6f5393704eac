"""The worst input for highlights through the HTTP edge: a page of cards whose fields are a
sixteen-word phrase, then one-letter words that begin it again at every position but never
end it, searched for that phrase (compared word by word, each position cost fifteen
comparisons). Each word read is compared once now, so the page is answered having read the
first cards' fields whole, the phrase at their start marked, and the rest none, once its
comparisons are spent (cardvault.domain.search.highlights; its unit tests count them). The
phrase opens each field because PostgreSQL's index keeps a word's first 256 positions only."""

from __future__ import annotations

from cardvault.domain.search.highlights import PAGE_COMPARISONS
from tests.conftest import Api

PHRASE = "a " * 15 + "b"
WORST = PHRASE + " a" * 32_744  # 32,760 words: 65,520 characters, within the 65,536 read


def test_a_page_of_the_worst_fields_marks_what_its_comparisons_reach(api: Api) -> None:
    made = {api.create(content=WORST)["id"] for _ in range(12)}
    response = api.get("/v1/cards", params={"q": f'"{PHRASE}"', "include": "highlights", "limit": 100})
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert {item["id"] for item in items} == made
    shown = [item["highlights"]["content"] for item in items]
    read = sum(bool(fragments) for fragments in shown)
    # Each word once, and the occurrence; the card that spends the rest may reach its phrase.
    assert PAGE_COMPARISONS // (32_760 + 1) <= read <= PAGE_COMPARISONS // (32_760 + 1) + 1 < len(made)
    assert all(shown[:read]) and not any(shown[read:])
    for (fragment,) in shown[:read]:
        assert fragment["offset"] == 0 and fragment["matches"] == [{"start": 0, "end": len(PHRASE)}]
