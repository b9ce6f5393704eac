"""A share's feeds: Atom 1.0 and JSON Feed 1.1 that parse with feedparser, keep their entry ids
across polls, and answer 304 to If-None-Match and If-Modified-Since; a conditional poll counts
once against the share's rate limit, also when it is read in full."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import feedparser
import pytest
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from tests.conftest import Api, api_of_new_account, app_env
from tests.unit.handlers.test_shares import make_folder, put_in, share
from tests.unit.handlers.web.test_share_page import open_link, summarize


class TestShareFeeds:
    def test_the_atom_feed_parses_with_stable_ids_and_answers_304(self, api: Api) -> None:
        folder_id = make_folder(api, "Feed folder")
        first = api.create(url="https://example.com/one", tags=["news"])
        put_in(api, folder_id, first["id"])
        made = share(api, folderId=folder_id)
        answer = open_link(api, made["feedUrl"])
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/atom+xml")
        parsed = feedparser.parse(answer.content)
        assert not parsed.bozo, parsed.bozo_exception
        assert parsed.version == "atom10" and parsed.feed.title == "Feed folder"
        (entry,) = parsed.entries
        assert entry.link == "https://example.com/one" and entry.tags[0].term == "news"
        assert entry.updated_parsed is not None and made["url"].split("/s/")[1] not in entry.id
        etag = answer.headers["etag"]
        assert open_link(api, made["feedUrl"], **{"If-None-Match": etag}).status_code == 304
        modified = answer.headers["last-modified"]
        assert open_link(api, made["feedUrl"], **{"If-Modified-Since": modified}).status_code == 304
        second = api.create(url="https://example.com/two")
        put_in(api, folder_id, second["id"])
        again = open_link(api, made["feedUrl"], **{"If-None-Match": etag})
        assert again.status_code == 200 and again.headers["etag"] != etag
        reparsed = feedparser.parse(again.content)
        assert [e.id for e in reparsed.entries][1:] == [entry.id]  # the old entry keeps its id

    def test_the_json_feed_follows_json_feed_1_1(self, api: Api, database: Database) -> None:
        card = api.create(url="https://example.com/j", notes="not shown")
        summarize(database, card["id"], "Short.")
        made = share(api, cardId=card["id"], title="Mine")
        answer = open_link(api, made["jsonFeedUrl"])
        assert answer.headers["content-type"].startswith("application/feed+json")
        feed = json.loads(answer.content)
        assert feed["version"] == "https://jsonfeed.org/version/1.1" and feed["title"] == "Mine"
        assert feed["feed_url"] == made["jsonFeedUrl"] and feed["home_page_url"] == made["url"]
        (item,) = feed["items"]
        assert set(item) >= {"id", "url", "title", "content_text", "date_modified"}
        assert item["url"] == "https://example.com/j" and item["summary"] == "Short."
        assert "not shown" not in answer.text
        assert json.loads(open_link(api, made["jsonFeedUrl"]).content)["items"][0]["id"] == item["id"]
        assert (
            open_link(api, made["jsonFeedUrl"], **{"If-None-Match": answer.headers["etag"]}).status_code
            == 304
        )

    def test_a_feed_changes_its_etag_when_a_card_is_edited(self, api: Api) -> None:
        card = api.create(content="before")
        made = share(api, cardId=card["id"])
        etag = open_link(api, made["feedUrl"]).headers["etag"]
        assert api.patch(f"/v1/cards/{card['id']}", json={"content": "after"}).status_code == 200
        assert open_link(api, made["feedUrl"], **{"If-None-Match": etag}).status_code == 200


def test_a_feed_changes_its_etag_when_a_shown_card_goes_to_trash(api: Api) -> None:
    folder_id = make_folder(api)
    older, newer = api.create(content="older")["id"], api.create(content="newer")["id"]
    put_in(api, folder_id, older, newer)
    made = share(api, folderId=folder_id)
    etag = open_link(api, made["feedUrl"]).headers["etag"]
    assert api.post(f"/v1/cards/{older}/trash").status_code == 200  # not the latest change
    assert open_link(api, made["feedUrl"], **{"If-None-Match": etag}).status_code == 200


@pytest.fixture
def limited(tmp_path: Path, database: Database) -> Iterator[Api]:
    """An account on an app whose shares answer 3 requests a minute each."""
    settings = Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_RATE_LIMIT_SHARE": "3/minute"})
    with TestClient(create_app(settings, database), raise_server_exceptions=False) as client:
        yield api_of_new_account(client, database, "limited")


def test_a_conditional_poll_counts_once_against_the_shares_limit(limited: Api) -> None:
    card = limited.create(content="polled")
    made = share(limited, cardId=card["id"])
    etag = open_link(limited, made["feedUrl"]).headers["etag"]  # 1
    assert open_link(limited, made["feedUrl"], **{"If-None-Match": etag}).status_code == 304  # 2
    # A stale ETag: checked, then read in full, and counted once (3).
    assert open_link(limited, made["feedUrl"], **{"If-None-Match": '"stale"'}).status_code == 200
    refused = open_link(limited, made["feedUrl"], **{"If-None-Match": etag})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
