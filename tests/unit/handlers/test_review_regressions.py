"""Defects found in review, each pinned by the behaviour that was wrong."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from cardvault.domain.cards import editing
from cardvault.domain.db import Database
from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def test_the_type_filter_alone_narrows_the_list(api: Api) -> None:
    quote = api.create(content='"Hi." — Me')
    api.create(content="plain")
    body = api.get("/v1/cards", params={"type": "quote", "include": "total"}).json()
    assert [i["id"] for i in body["items"]] == [quote["id"]] and body["total"] == 1


def test_a_cursor_for_one_type_is_refused_for_another(api: Api) -> None:
    for _ in range(2):
        api.create(content="plain")
    cursor = api.get("/v1/cards", params={"type": "text", "limit": 1}).json()["pageInfo"]["nextCursor"]
    assert_error(api.get("/v1/cards", params={"type": "link", "cursor": cursor}), 400, "INVALID_CURSOR")


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/v1/cards"), ("PATCH", "/v1/cards/x"), ("PATCH", "/v1/cards/x/favorite")]
)
def test_a_body_without_content_type_is_415(api: Api, method: str, path: str) -> None:
    response = api.request(method, path, content=b'{"isFavorited": true}', headers={"Content-Type": ""})
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_a_chunked_body_is_read(api: Api) -> None:
    response = api.post(
        "/v1/cards",
        content=iter([b'{"content": ', b'"chunked"}']),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200 and response.json()["card"]["content"] == "chunked"


def test_a_chunked_body_over_the_limit_is_413(api: Api) -> None:
    chunks = iter([b" " * (1024 * 1024)] * 5)
    response = api.post("/v1/cards", content=chunks, headers={"Content-Type": "application/json"})
    assert_error(response, 413, "CONTENT_TOO_LARGE")


@pytest.mark.parametrize(
    "body", [{"url": "https://a.example/x\n"}, {"fileName": "a\n"}, {"mimeType": "text/plain\n"}]
)
def test_a_trailing_newline_does_not_pass_a_pattern(api: Api, body: dict[str, str]) -> None:
    assert_error(api.post("/v1/cards", json=body), 400, "INVALID_INPUT")


def test_a_trailing_newline_in_a_query_parameter_is_refused(api: Api) -> None:
    assert_error(api.get("/v1/cards", params={"include": "content\n"}), 400, "INVALID_INPUT")


def test_wrong_methods_on_the_spec_and_docs_say_what_is_allowed(app_client: TestClient) -> None:
    response = app_client.post("/v1/openapi.json")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in response.headers["allow"]


def test_concurrent_done_keeps_the_first_completion_time(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        card_id = editing.add_card(session, account_id=account_id, url="https://example.com").id
    results: list[int | None] = []
    barrier = threading.Barrier(8)

    def done() -> None:
        barrier.wait()
        with database.transaction() as session:
            results.append(editing.mark_done(session, account_id=account_id, card_id=card_id).completed_at)

    run_together(done, 8)
    assert len(set(results)) == 1 and results[0] is not None


def test_concurrent_tag_edits_of_one_card_all_succeed(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        card_id = editing.add_card(session, account_id=account_id, tags=["a"]).id
    errors: list[Exception] = []
    barrier = threading.Barrier(8)
    counter = iter(range(8))

    def edit() -> None:
        n = next(counter)
        barrier.wait()
        try:
            with database.transaction() as session:
                editing.update_card(session, account_id=account_id, card_id=card_id, tags=["a", f"b{n}"])
        except Exception as exc:
            errors.append(exc)

    run_together(edit, 8)
    assert errors == []
    with database.transaction(write=False) as session:
        tags = editing.get_card(session, account_id=account_id, card_id=card_id).tags
    assert tags[0] == "a" and len(tags) == 2


def run_together(target: Callable[[], None], count: int) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_folders_with_long_non_ascii_names_page_through(api: Api) -> None:
    made = {api.post("/v1/folders", json={"name": "é" * 299 + str(i)}).json()["id"] for i in range(3)}
    seen, cursor = [], None
    while True:
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/folders", params=params)
        assert page.status_code == 200, page.text
        seen += [f["id"] for f in page.json()["items"]]
        cursor = page.json()["pageInfo"]["nextCursor"]
        if cursor is None:
            break
    assert set(seen) == made and len(seen) == 3


def test_tags_with_long_non_ascii_names_page_through(api: Api) -> None:
    names = ["\U0001d49c" * 63 + str(i) for i in range(3)]
    api.create(tags=names)
    first = api.get("/v1/tags", params={"limit": 1}).json()
    rest = api.get("/v1/tags", params={"limit": 2, "cursor": first["pageInfo"]["nextCursor"]})
    assert rest.status_code == 200, rest.text
    assert len(first["items"]) + len(rest.json()["items"]) == 3


def test_tag_counts_leave_out_cards_in_trash(api: Api) -> None:
    kept, trashed = api.create(tags=["both"]), api.create(tags=["both", "only-trashed"])
    api.post(f"/v1/cards/{trashed['id']}/trash")
    assert api.get("/v1/tags").json()["items"] == [{"name": "both", "count": 1}]
    api.post(f"/v1/cards/{trashed['id']}/restore")
    assert {t["name"]: t["count"] for t in api.get("/v1/tags").json()["items"]} == {
        "both": 2,
        "only-trashed": 1,
    }
    assert kept["id"] != trashed["id"]


def test_done_on_a_card_in_trash_is_409_whatever_its_type(api: Api) -> None:
    card = api.create(content="plain text")
    api.post(f"/v1/cards/{card['id']}/trash")
    assert_error(api.post(f"/v1/cards/{card['id']}/done"), 409, "CARD_IN_TRASH")
