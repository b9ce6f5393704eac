"""A page's head (cardvault.adapters.pages.head), read through read_page."""

from __future__ import annotations

from cardvault.adapters.pages import read_page
from tests.unit.adapters.pages.test_init import html


def test_open_graph_tags_after_a_stray_element_in_the_head_still_count() -> None:
    page = read_page(
        html(
            '<title>Head title</title><div class="cookie-banner">We use cookies'
            '<meta property="og:title" content="OG title"><meta property="og:type" content="video.movie">'
        ),
        url="https://www.example.org/film",
        content_type="text/html",
    )
    assert page.title == "OG title"
    assert page.category == "movie"
