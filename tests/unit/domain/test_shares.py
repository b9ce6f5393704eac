"""A feed reader's poll (shares.feed_version): one statement that says what open_share and
version_of say together, for a card's, a manual folder's and a smart folder's share, and that
refuses as they do."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from cardvault.domain import folders, shares
from cardvault.domain.auth import credentials
from cardvault.domain.cards import editing, trash
from cardvault.domain.clock import now_ms
from cardvault.domain.db import Database
from cardvault.domain.errors import NotFound, ShareExpired
from cardvault.domain.models import Share

SHOWN = 3


def _both(database: Database, token: str) -> tuple[shares.FeedVersion, tuple[int, str, int]]:
    with database.transaction(write=False, snapshot=False) as session:
        found = shares.feed_version(session, token=token, shown=SHOWN)
        found = shares.smart_feed_version(session, found, token=token, shown=SHOWN)
        share = shares.open_share(session, token=token)
        return found, shares.version_of(session, share, SHOWN)


def _same(database: Database, token: str) -> shares.FeedVersion:
    found, expected = _both(database, token)
    assert (found.changed, found.held, found.version) == expected
    return found


def test_a_poll_says_what_the_share_and_its_version_say(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        ids = [
            editing.add_card(session, account_id=account_id, content=f"harbour card {n}").card.id
            for n in range(5)
        ]
        manual = folders.create_folder(session, account_id=account_id, name="Manual").id
        smart = folders.create_folder(session, account_id=account_id, name="Smart", query="harbour").id
        empty = folders.create_folder(session, account_id=account_id, name="Empty").id
        folders.add_cards(session, account_id=account_id, folder_id=manual, card_ids=ids)
        made = {
            "card": shares.create_share(session, account_id=account_id, card_id=ids[0]),
            "manual": shares.create_share(session, account_id=account_id, folder_id=manual),
            "smart": shares.create_share(session, account_id=account_id, folder_id=smart),
            "empty": shares.create_share(session, account_id=account_id, folder_id=empty),
        }
    tokens = {name: token for name, (_, token) in made.items()}
    with database.transaction(write=False, snapshot=False) as session:
        # A smart folder's version waits for its share's rate limit: the listing is not run yet.
        assert shares.feed_version(session, token=tokens["smart"], shown=SHOWN).smart
        assert not shares.feed_version(session, token=tokens["manual"], shown=SHOWN).smart
    before = {name: _same(database, token) for name, token in tokens.items()}
    assert before["card"].id == made["card"][0].id and before["card"].held == str(made["card"][0].card_pk)
    # The newest shown card goes to Trash: the manual folder's feed holds other cards now.
    with database.transaction() as session:
        trash.move_to_trash(session, account_id=account_id, card_id=ids[-1])
    after = {name: _same(database, token) for name, token in tokens.items()}
    assert after["manual"].held != before["manual"].held
    assert after["smart"].held != before["smart"].held
    assert after["empty"] == before["empty"]


def test_a_poll_refuses_as_opening_the_share_does(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        card = editing.add_card(session, account_id=account_id, content="to share").card.id
        folder = folders.create_folder(session, account_id=account_id, name="Going").id
        card_share, of_card = shares.create_share(session, account_id=account_id, card_id=card)
        _, of_folder = shares.create_share(session, account_id=account_id, folder_id=folder)
        _, expiring = shares.create_share(
            session, account_id=account_id, folder_id=folder, expires_at=now_ms() + 60_000
        )
    with database.transaction() as session:
        session.execute(update(Share).where(Share.expires_at.is_not(None)).values(expires_at=now_ms() - 1))
        trash.move_to_trash(session, account_id=account_id, card_id=card)
    with database.transaction(write=False, snapshot=False) as session:
        unknown = credentials.new_secret(shares.TOKEN_PREFIX)  # well formed, no share's
        for token in ("not-a-token", of_card[:-2] + "xx", unknown, of_card):
            with pytest.raises(NotFound):
                shares.feed_version(session, token=token, shown=SHOWN)
        with pytest.raises(ShareExpired):
            shares.feed_version(session, token=expiring, shown=SHOWN)
        assert shares.feed_version(session, token=of_folder, shown=SHOWN).held
    with database.transaction() as session:
        folders.delete_folder(session, account_id=account_id, folder_id=folder)
    with database.transaction(write=False, snapshot=False) as session, pytest.raises(NotFound):
        shares.feed_version(session, token=of_folder, shown=SHOWN)
    assert card_share.card_pk is not None
