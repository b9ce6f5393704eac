"""Type inference for cards created without a type."""

import pytest

from cardvault.domain.classify import infer_card_type, is_quote, url_in


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
