"""Type inference for cards created without a type."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.cards.classify import _QUOTE_PAIRS, infer_card_type, is_quote, url_in


@pytest.mark.parametrize(
    ("content", "url", "expected"),
    [
        ("https://example.com/a?b=c#d", None, "link"),
        ("  http://example.com  \n", None, "link"),
        ("HTTPS://EXAMPLE.COM", None, "link"),
        ("anything", "https://example.com", "link"),
        ("see https://example.com for more", None, "text"),
        ("ftp://example.com", None, "text"),
        ('"Simplicity is prerequisite for reliability." — Edsger Dijkstra', None, "quote"),
        ("“Less is more.”", None, "quote"),
        ("«Hello» - Someone", None, "quote"),
        ("'single quoted' ~ anon", None, "quote"),
        ('"quoted" and then more words', None, "text"),
        ('""', None, "text"),
        ('"unterminated', None, "text"),
        ("#fff", None, "palette"),
        ("#0F4C81, #ffcc00;rebeccapurple\nTomato", None, "palette"),
        ("#12345", None, "text"),
        ("red and green", None, "text"),
        ("just words", None, "text"),
        ("", None, "text"),
    ],
)
def test_infers_the_card_type(content: str, url: str | None, expected: str) -> None:
    assert infer_card_type(content, url) == expected


def test_url_in_returns_the_trimmed_url_only_when_the_content_is_one_url() -> None:
    assert url_in(" https://example.com/x \n") == "https://example.com/x"
    assert url_in("https://a.example https://b.example") is None


def test_a_quote_may_contain_its_closing_mark_inside_the_attribution() -> None:
    assert is_quote('"It works." — "Bob" Smith')


def _is_quote_by_the_book(content: str) -> bool:
    """The rule written plainly: scan closing marks from the right (quadratic at worst)."""
    text = content.strip()
    if len(text) < 3 or text[0] not in _QUOTE_PAIRS:
        return False
    for end in range(len(text) - 1, 0, -1):
        tail = re.fullmatch(r"\s*(?:[—–―~-]+\s*\S.*)?", text[end + 1 :], re.DOTALL)
        if text[end] in _QUOTE_PAIRS[text[0]] and tail:
            return end > 1
    return False


@settings(max_examples=2000)
@given(st.text(alphabet=list("\"'“”„«»「」 \n—-~ab"), max_size=14))
def test_quote_detection_follows_the_rule(content: str) -> None:
    assert is_quote(content) == _is_quote_by_the_book(content)
