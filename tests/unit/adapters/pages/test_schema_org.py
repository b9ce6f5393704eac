"""A page's schema.org items (cardvault.adapters.pages.schema_org), read through read_page."""

from __future__ import annotations

import json

from cardvault.adapters.pages import read_page
from tests.unit.adapters.pages.test_init import html


def test_json_ld_given_as_a_list_is_read_item_by_item() -> None:
    block = json.dumps(
        [
            {"@context": "https://schema.org", "@type": "BreadcrumbList", "itemListElement": []},
            {
                "@context": "https://schema.org",
                "@type": "Recipe",
                "name": "Quick flatbreads",
                "recipeYield": "8",
                "totalTime": "PT25M",
            },
        ]
    )
    page = read_page(
        html(f'<title>Quick flatbreads | Example</title><script type="application/ld+json">{block}</script>'),
        url="https://www.example.org/flatbreads",
        content_type="text/html; charset=utf-8",
    )
    assert page.category == "recipe"
    assert page.title == "Quick flatbreads"
    assert page.facts == (("Servings", "8"), ("Total time", "25 min"))


def test_a_broken_json_ld_block_leaves_the_others() -> None:
    good = '{"@context": "https://schema.org", "@type": "Recipe", "name": "Soup", "recipeYield": "2"}'
    broken = '{"@context": "https://schema.org", "@type": "BreadcrumbList", "itemListElement": ['
    page = read_page(
        html(
            f'<script type="application/ld+json">{good}</script>'
            f'<script type="application/ld+json">{broken}</script>'
        ),
        url="https://www.example.org/soup",
        content_type="text/html",
    )
    assert page.category == "recipe"
    assert page.facts == (("Servings", "2"),)
