"""Values as a page writes them (cardvault.adapters.pages.values), read through read_page:
relative and unsafe image references."""

from __future__ import annotations

from cardvault.adapters.pages import read_page
from tests.unit.adapters.pages.test_init import html


def test_a_relative_og_image_is_resolved_against_the_final_url() -> None:
    page = read_page(
        html('<meta property="og:image" content="../img/cover.jpg">'),
        url="https://www.example.org/blog/posts/first.html?from=feed",
        content_type="text/html",
    )
    assert page.image_url == "https://www.example.org/blog/img/cover.jpg"
    assert [item["url"] for item in page.media] == ["https://www.example.org/blog/img/cover.jpg"]


def test_a_javascript_og_image_is_dropped_for_the_next_source() -> None:
    page = read_page(
        html(
            '<meta property="og:image" content="javascript:alert(document.cookie)">'
            '<meta name="twitter:image" content="https://www.example.org/card.png">'
        ),
        url="https://www.example.org/post",
        content_type="text/html",
    )
    assert page.image_url == "https://www.example.org/card.png"
    assert page.media == ()
