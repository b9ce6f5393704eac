"""q's qualifiers merged into a listing's own parameters, where it has one."""

from __future__ import annotations

from cardvault.domain.cards.filters import CardFilter, resolve
from cardvault.domain.search.query import Qualifier


def test_the_first_tag_and_type_and_the_dates_take_the_lists_own_parameters() -> None:
    listing = resolve(
        CardFilter(q="x tag:Work tag:home type:link after:1000 before:5000", created_after=2000)
    )
    assert (listing.tag_key, listing.card_types) == ("work", ("link",))
    assert (listing.created_after, listing.created_before) == (2000, 5000)  # the stricter bounds
    assert listing.query.qualifiers == (Qualifier("tag", "home"),)
    assert listing.sort == "relevance" and listing.archived == "exclude"


def test_a_parameter_already_given_keeps_the_qualifier_as_a_condition() -> None:
    listing = resolve(CardFilter(q="tag:home -type:link", tags=("work",), sort="oldest"))
    assert listing.tag_key == "work" and listing.card_types == () and listing.sort == "oldest"
    assert listing.query.qualifiers == (Qualifier("tag", "home"), Qualifier("type", "link", negated=True))


def test_is_archived_lifts_the_default_but_not_an_explicit_exclude() -> None:
    assert resolve(CardFilter(q="is:archived")).archived == "include"
    assert resolve(CardFilter(q="is:archived", archived="exclude")).archived == "exclude"
    assert resolve(CardFilter(q="-is:archived")).archived == "exclude"


def test_relevance_without_words_to_find_is_newest_first() -> None:
    assert resolve(CardFilter(q="tag:x -y", sort="relevance")).sort == "newest"
    assert resolve(CardFilter()).sort == "newest"
