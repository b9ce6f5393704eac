"""The page envelope: items, pageInfo saying whether another page follows, and total (with
totalCapped) only when it was counted."""

from __future__ import annotations

from cardvault.handlers.http.paging import page_json

ITEMS = [{"id": "crd_1"}, {"id": "crd_2"}]


def test_a_page_with_more_after_it_carries_the_cursor() -> None:
    assert page_json(ITEMS, "abc.def", None) == {
        "items": ITEMS,
        "pageInfo": {"hasMore": True, "nextCursor": "abc.def"},
    }


def test_the_last_page_has_no_cursor_and_says_so() -> None:
    assert page_json([], None, None) == {"items": [], "pageInfo": {"hasMore": False, "nextCursor": None}}


def test_a_counted_total_is_sent_and_zero_counts() -> None:
    assert page_json(ITEMS, None, 2)["total"] == 2
    assert page_json([], None, 0)["total"] == 0


def test_total_capped_goes_with_the_total_alone() -> None:
    assert page_json(ITEMS, "c.d", 10_000, total_capped=True) == {
        "items": ITEMS,
        "pageInfo": {"hasMore": True, "nextCursor": "c.d"},
        "total": 10_000,
        "totalCapped": True,
    }
    assert page_json(ITEMS, None, 2, total_capped=False)["totalCapped"] is False
    assert "totalCapped" not in page_json(ITEMS, None, None, total_capped=True)
    assert "totalCapped" not in page_json(ITEMS, None, 2)
