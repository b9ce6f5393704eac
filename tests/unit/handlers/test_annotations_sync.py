"""Annotations in the changes feed (only to a reader whose types name them, with tombstones,
also when their card is deleted forever), in search (their quotes and notes match q as notes
do; has:annotations), and the limit of 1,000 per card."""

from __future__ import annotations

from typing import Any

from cardvault.domain.annotations import records
from cardvault.domain.db import Database
from tests.conftest import Api
from tests.unit.handlers.test_annotations import TEXT, annotate
from tests.unit.handlers.test_cards import assert_error


def latest(api: Api) -> str:
    cursor = api.get("/v1/changes", params={"cursor": "latest"}).json()["pageInfo"]["nextCursor"]
    assert isinstance(cursor, str)
    return cursor


def changes(api: Api, cursor: str, **params: Any) -> list[dict[str, Any]]:
    answer = api.get("/v1/changes", params={"cursor": cursor, **params})
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]  # type: ignore[no-any-return]


class TestChangesFeed:
    def test_annotations_reach_only_a_reader_that_names_them_with_tombstones(self, api: Api) -> None:
        card = api.create(content=TEXT)
        cursor = latest(api)
        made = annotate(api, card["id"], quote="the mat", note="n")
        default = changes(api, cursor)
        assert {item["type"] for item in default} == {"card"}  # its annotationCount moved
        assert all("annotation" not in item for item in default)
        named = changes(api, cursor, types=["annotation"])
        assert [(i["type"], i["id"], i["action"]) for i in named] == [("annotation", made["id"], "upsert")]
        assert named[0]["annotation"] == made and named[0]["card"] is None
        both = changes(api, cursor, types=["card", "annotation"])
        assert {item["type"] for item in both} == {"card", "annotation"}
        assert api.request("DELETE", f"/v1/annotations/{made['id']}").status_code == 204
        gone = changes(api, cursor, types=["annotation"])
        assert [(i["id"], i["action"], i["annotation"]) for i in gone] == [(made["id"], "delete", None)]

    def test_a_card_deleted_forever_leaves_its_annotations_tombstones(self, api: Api) -> None:
        card = api.create(content=TEXT)
        made = annotate(api, card["id"], quote="cat")
        cursor = latest(api)
        assert api.post(f"/v1/cards/{card['id']}/trash").status_code == 200
        assert api.request("DELETE", f"/v1/cards/{card['id']}").status_code == 204
        gone = changes(api, cursor, types=["annotation"])
        assert [(i["id"], i["action"]) for i in gone] == [(made["id"], "delete")]

    def test_an_unknown_type_is_400(self, api: Api) -> None:
        assert_error(api.get("/v1/changes", params={"types": "banana"}), 400, "INVALID_INPUT")


class TestSearch:
    def test_quotes_and_notes_match_q_and_has_annotations_qualifies(self, api: Api) -> None:
        noted = api.create(content="An ordinary text about gardening.")
        plain = api.create(content="Another text about gardening.")
        annotate(api, noted["id"], quote="ordinary text", note="zucchini surplus")
        found = api.get("/v1/cards", params={"q": "zucchini"}).json()["items"]
        assert [c["id"] for c in found] == [noted["id"]]
        having = api.get("/v1/cards", params={"q": "has:annotations"}).json()["items"]
        assert [c["id"] for c in having] == [noted["id"]]
        without = api.get("/v1/cards", params={"q": "gardening -has:annotations"}).json()["items"]
        assert [c["id"] for c in without] == [plain["id"]]

    def test_a_deleted_annotation_no_longer_finds_its_card(self, api: Api) -> None:
        card = api.create(content="Short text.")
        made = annotate(api, card["id"], note="pomegranate")
        assert api.request("DELETE", f"/v1/annotations/{made['id']}").status_code == 204
        assert api.get("/v1/cards", params={"q": "pomegranate"}).json()["items"] == []


class TestLimits:
    def test_a_card_keeps_at_most_1000(self, api: Api, database: Database) -> None:
        card = api.create(content=TEXT)
        with database.transaction() as session:
            for n in range(records.MAX_PER_CARD):
                records.create(session, account_id=api.account_id, card_id=card["id"], note=f"note {n}")
        body = assert_error(
            api.post(f"/v1/cards/{card['id']}/annotations", json={"note": "one more"}),
            409,
            "ANNOTATION_LIMIT_REACHED",
        )
        assert body["details"] == {"limit": 1000}
        assert len(api.get(f"/v1/cards/{card['id']}/annotations").json()["items"]) == 1000
