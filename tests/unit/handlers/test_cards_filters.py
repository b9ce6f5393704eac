"""listCards' repeated filters over HTTP: `type` and `folder` repeated match any of their values,
`tag` repeated every one; one value works as before; more than 20 values are refused."""

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_cards import assert_error


def _ids(api: Api, params: list[tuple[str, str]]) -> set[str]:
    response = api.get("/v1/cards", params=params)
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["items"]}


def _total(api: Api, params: list[tuple[str, str]]) -> int:
    body = api.get("/v1/cards", params=[*params, ("include", "total")]).json()
    return int(body["total"])


def test_a_repeated_type_finds_cards_of_any_of_them(api: Api) -> None:
    link = api.create(url="https://example.com/a")["id"]
    text = api.create(content="words", cardType="text")["id"]
    palette = api.create(content="#fff teal")["id"]
    assert _ids(api, [("type", "link")]) == {link}
    assert _ids(api, [("type", "link"), ("type", "text")]) == {link, text}
    assert _total(api, [("type", "link"), ("type", "text"), ("type", "palette")]) == 3
    assert _ids(api, [("type", "link"), ("type", "text"), ("type", "palette")]) == {link, text, palette}
    # With q's own type: qualifier, both hold.
    assert _ids(api, [("type", "link"), ("type", "text"), ("q", "type:text")]) == {text}


def test_a_repeated_tag_finds_cards_carrying_every_one(api: Api) -> None:
    both = api.create(content="a", tags=["Work", "urgent"])["id"]
    work = api.create(content="b", tags=["work"])["id"]
    api.create(content="c", tags=["urgent"])
    assert _ids(api, [("tag", "WORK")]) == {both, work}
    assert _ids(api, [("tag", "work"), ("tag", "Urgent")]) == {both}
    assert _total(api, [("tag", "work"), ("tag", "urgent")]) == 1
    assert _ids(api, [("tag", "work"), ("tag", "urgent"), ("tag", "none")]) == set()


def test_a_repeated_folder_finds_cards_in_any_of_them_once(api: Api, make_api) -> None:  # type: ignore[no-untyped-def]
    first, second, third = (api.post("/v1/folders", json={"name": n}).json()["id"] for n in "abc")
    in_both, in_first, in_second = (api.create(content=n)["id"] for n in ("x", "y", "z"))
    api.create(content="in c")
    api.post(f"/v1/folders/{first}/cards", json={"cardIds": [in_both, in_first]})
    api.post(f"/v1/folders/{second}/cards", json={"cardIds": [in_both, in_second]})
    api.post(f"/v1/folders/{third}/cards", json={"cardIds": []})
    assert _ids(api, [("folder", first)]) == {in_both, in_first}
    body = api.get("/v1/cards", params=[("folder", first), ("folder", second), ("limit", "2")]).json()
    rest = api.get(
        "/v1/cards",
        params=[("folder", first), ("folder", second), ("cursor", body["pageInfo"]["nextCursor"])],
    ).json()
    paged = [item["id"] for item in body["items"] + rest["items"]]
    assert paged == [in_second, in_first, in_both]  # each once, newest first
    assert _total(api, [("folder", first), ("folder", second)]) == 3
    other = make_api().post("/v1/folders", json={"name": "theirs"}).json()["id"]
    assert _ids(api, [("folder", first), ("folder", other)]) == {in_both, in_first}


@pytest.mark.parametrize(("name", "value"), [("type", "text"), ("tag", "t"), ("folder", "fld_x")])
def test_more_than_twenty_values_are_refused(api: Api, name: str, value: str) -> None:
    assert _ids(api, [(name, value)] * 20) == set()
    body = assert_error(api.get("/v1/cards", params=[(name, value)] * 21), 400, "INVALID_INPUT")
    assert body["details"]["fields"][0]["location"] == "query"
