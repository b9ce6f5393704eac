"""Annotations over HTTP: create, list in text order and newest first, get, edit, delete; the
quote found by its prefix, refused when the text does not hold it; placed again when a text
card is edited; Trash and purge; another account's answers like a missing one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error

TEXT = "The cat sat on the mat. Later the cat ran away from the dog, and the cat slept."


def annotate(api: Api, card_id: str, **body: object) -> dict[str, Any]:
    response = api.post(f"/v1/cards/{card_id}/annotations", json=body)
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/v1/annotations/{response.json()['id']}"
    return response.json()  # type: ignore[no-any-return]


def listed(api: Api, card_id: str) -> list[dict[str, Any]]:
    response = api.get(f"/v1/cards/{card_id}/annotations")
    assert response.status_code == 200, response.text
    return response.json()["items"]  # type: ignore[no-any-return]


class TestCreateAnnotation:
    def test_places_the_quote_and_fills_in_its_prefix_and_suffix(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="sat on the mat", note="Classic.", color="yellow")
        start = TEXT.index("sat on the mat")
        assert made["position"] == {"source": "text", "start": start, "end": start + len("sat on the mat")}
        assert (made["prefix"], made["suffix"]) == (TEXT[:start], TEXT[start + 14 : start + 14 + 32])
        assert (made["note"], made["color"], made["orphaned"], made["cardId"]) == (
            "Classic.",
            "yellow",
            False,
            card["id"],
        )
        assert api.get(f"/v1/annotations/{made['id']}").json() == made

    def test_a_repeated_quote_is_chosen_by_its_prefix(self, api: Api) -> None:
        card = api.create(content=TEXT)
        first, last = TEXT.index("the cat"), TEXT.rindex("the cat")
        assert first < last
        assert annotate(api, card["id"], quote="the cat")["position"]["start"] == first
        chosen = annotate(api, card["id"], quote="the cat", prefix="dog, and ")
        assert chosen["position"]["start"] == last
        assert chosen["prefix"] == TEXT[last - 32 : last]
        assert annotate(api, card["id"], quote="the cat", suffix=" slept")["position"]["start"] == last

    def test_a_quote_with_other_whitespace_or_a_small_typo_is_found(self, api: Api) -> None:
        card = api.create(content=TEXT)
        spaced = annotate(api, card["id"], quote="ran  away\nfrom")["position"]
        assert TEXT[spaced["start"] : spaced["end"]] == "ran away from"
        typo = annotate(api, card["id"], quote="ran awey from the dog")["position"]
        assert "ran away from the dog" in TEXT[typo["start"] - 1 : typo["end"] + 1]

    def test_a_quote_not_in_the_text_is_400_and_stores_nothing(self, api: Api) -> None:
        card = api.create(content=TEXT)
        body = assert_error(
            api.post(f"/v1/cards/{card['id']}/annotations", json={"quote": "quantum chromodynamics"}),
            400,
            "QUOTE_NOT_FOUND",
        )
        assert body["details"] == {"source": "text"}
        assert listed(api, card["id"]) == []
        assert api.get(f"/v1/cards/{card['id']}").json()["annotationCount"] == 0

    def test_a_note_without_a_quote_is_a_card_level_note(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], note="Read again in spring.")
        assert (made["quote"], made["position"], made["prefix"], made["note"]) == (
            None,
            None,
            None,
            "Read again in spring.",
        )

    def test_neither_quote_nor_note_is_400(self, api: Api) -> None:
        card = api.create(content=TEXT)
        assert_error(
            api.post(f"/v1/cards/{card['id']}/annotations", json={"color": "blue"}), 400, "INVALID_INPUT"
        )

    def test_limits_are_the_spec_s(self, api: Api) -> None:
        card = api.create(content=TEXT)
        path = f"/v1/cards/{card['id']}/annotations"
        assert_error(api.post(path, json={"note": "n" * 8001}), 400, "INVALID_INPUT")
        assert_error(api.post(path, json={"quote": "q" * 4001}), 400, "INVALID_INPUT")
        assert_error(api.post(path, json={"note": "n", "color": "mauve"}), 400, "INVALID_INPUT")

    def test_the_card_counts_its_annotations(self, api: Api) -> None:
        card = api.create(content=TEXT)
        annotate(api, card["id"], quote="the mat")
        annotate(api, card["id"], note="a note")
        assert api.get(f"/v1/cards/{card['id']}").json()["annotationCount"] == 2


class TestListAnnotations:
    def test_a_cards_annotations_are_in_text_order_then_unplaced_oldest_first(self, api: Api) -> None:
        card = api.create(content=TEXT)
        note = annotate(api, card["id"], note="overall")
        slept = annotate(api, card["id"], quote="slept")
        sat = annotate(api, card["id"], quote="sat")
        ran = annotate(api, card["id"], quote="ran away")
        assert [a["id"] for a in listed(api, card["id"])] == [sat["id"], ran["id"], slept["id"], note["id"]]

    def test_the_accounts_annotations_are_newest_first_paged_and_filtered(self, api: Api) -> None:
        one, two = api.create(content=TEXT), api.create(content=TEXT)
        first = annotate(api, one["id"], quote="cat", color="blue")
        second = annotate(api, two["id"], quote="dog", color="green")
        third = annotate(api, one["id"], quote="mat", color="green")
        page = api.get("/v1/annotations", params={"limit": 2}).json()
        assert [a["id"] for a in page["items"]] == [third["id"], second["id"]]
        assert page["pageInfo"]["hasMore"] is True
        rest = api.get(
            "/v1/annotations", params={"limit": 2, "cursor": page["pageInfo"]["nextCursor"]}
        ).json()
        assert [a["id"] for a in rest["items"]] == [first["id"]] and rest["pageInfo"]["hasMore"] is False
        by_card = api.get("/v1/annotations", params={"cardId": one["id"]}).json()["items"]
        assert [a["id"] for a in by_card] == [third["id"], first["id"]]
        green = api.get("/v1/annotations", params={"color": "green"}).json()["items"]
        assert [a["id"] for a in green] == [third["id"], second["id"]]

    def test_a_cursor_of_other_filters_is_400(self, api: Api) -> None:
        card = api.create(content=TEXT)
        annotate(api, card["id"], quote="cat")
        annotate(api, card["id"], quote="dog")
        cursor = api.get("/v1/annotations", params={"limit": 1}).json()["pageInfo"]["nextCursor"]
        answer = api.get("/v1/annotations", params={"limit": 1, "cursor": cursor, "color": "blue"})
        assert_error(answer, 400, "INVALID_CURSOR")


class TestUpdateAnnotation:
    def test_sets_and_clears_the_note_and_colour(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="cat", note="first", color="pink")
        changed = api.patch(f"/v1/annotations/{made['id']}", json={"note": "second", "color": None}).json()
        assert (changed["note"], changed["color"], changed["quote"]) == ("second", None, "cat")
        assert changed["updatedAt"] >= made["updatedAt"]
        assert api.get(f"/v1/annotations/{made['id']}").json() == changed


class TestDeleteAnnotation:
    def test_deletes_it_and_the_count_goes_down(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="cat")
        assert api.request("DELETE", f"/v1/annotations/{made['id']}").status_code == 204
        assert_error(api.get(f"/v1/annotations/{made['id']}"), 404, "NOT_FOUND")
        assert listed(api, card["id"]) == []
        assert api.get(f"/v1/cards/{card['id']}").json()["annotationCount"] == 0


class TestPlacingAgain:
    def test_an_edit_that_keeps_the_quote_moves_its_position(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="the dog")
        edited = "A new first sentence. " + TEXT
        assert api.patch(f"/v1/cards/{card['id']}", json={"content": edited}).status_code == 200
        moved = api.get(f"/v1/annotations/{made['id']}").json()
        start = edited.index("the dog")
        assert moved["position"] == {"source": "text", "start": start, "end": start + 7}
        assert moved["orphaned"] is False

    def test_an_edit_that_removes_the_quote_orphans_it(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="from the dog", note="kept")
        assert (
            api.patch(f"/v1/cards/{card['id']}", json={"content": "Nothing of it is left."}).status_code
            == 200
        )
        orphan = api.get(f"/v1/annotations/{made['id']}").json()
        assert (orphan["position"], orphan["orphaned"], orphan["note"]) == (None, True, "kept")
        back = api.patch(f"/v1/cards/{card['id']}", json={"content": TEXT})
        assert back.status_code == 200
        assert api.get(f"/v1/annotations/{made['id']}").json()["orphaned"] is False


class TestTrash:
    def test_a_card_in_trash_keeps_them_out_of_the_accounts_list_and_refuses_changes(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="cat")
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert api.get("/v1/annotations").json()["items"] == []
        assert [a["id"] for a in listed(api, card["id"])] == [made["id"]]
        assert_error(
            api.post(f"/v1/cards/{card['id']}/annotations", json={"note": "x"}), 409, "CARD_IN_TRASH"
        )
        assert_error(api.patch(f"/v1/annotations/{made['id']}", json={"note": "x"}), 409, "CARD_IN_TRASH")
        assert api.post(f"/v1/cards/{card['id']}/restore").status_code == 200
        assert [a["id"] for a in api.get("/v1/annotations").json()["items"]] == [made["id"]]

    def test_deleting_the_card_forever_deletes_them(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="cat")
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
        assert_error(api.get(f"/v1/annotations/{made['id']}"), 404, "NOT_FOUND")


class TestIsolation:
    def test_another_accounts_card_and_annotation_answer_like_missing_ones(
        self, make_api: Callable[[], Api]
    ) -> None:
        owner, other = make_api(), make_api()
        card = owner.create(content=TEXT)
        made = annotate(owner, card["id"], quote="cat")
        missing_card = assert_error(
            other.post(f"/v1/cards/{card['id']}/annotations", json={"note": "x"}), 404, "NOT_FOUND"
        )
        assert (
            missing_card["error"]
            == assert_error(
                other.post("/v1/cards/crd_missing/annotations", json={"note": "x"}), 404, "NOT_FOUND"
            )["error"]
        )
        assert_error(other.get(f"/v1/cards/{card['id']}/annotations"), 404, "NOT_FOUND")
        for answer in (
            other.get(f"/v1/annotations/{made['id']}"),
            other.patch(f"/v1/annotations/{made['id']}", json={"note": "x"}),
            other.request("DELETE", f"/v1/annotations/{made['id']}"),
        ):
            body = assert_error(answer, 404, "NOT_FOUND")
            assert body["error"] == "Annotation not found."
        assert other.get("/v1/annotations", params={"cardId": card["id"]}).json()["items"] == []
        assert owner.get(f"/v1/annotations/{made['id']}").json() == made
