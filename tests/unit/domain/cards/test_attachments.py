"""A file a card takes beside its own: which cards take it, which uploads are issued for it,
and a repeated attach of the file the card already holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.domain.cards import captions, editing, thumbnails, trash
from cardvault.domain.cards.attachments import Attachment
from cardvault.domain.db import Database
from cardvault.domain.errors import CardInTrash, NotFound, TypeMismatch, UnsupportedType, UploadNotFound
from cardvault.domain.ids import new_id
from cardvault.settings import Settings


@pytest.fixture
def store(settings: Settings) -> BlobStore:
    return store_from_settings(settings)


def _issue(
    database: Database, store: BlobStore, kind: Attachment, account_id: str, card_id: str, mime: str
) -> None:
    with database.transaction() as session:
        kind.issue_upload(
            session,
            store,
            account_id=account_id,
            card_id=card_id,
            file_name="f",
            file_size=10,
            mime_type=mime,
        )


def _card(database: Database, account_id: str, **fields: str) -> str:
    with database.transaction() as session:
        return editing.add_card(session, account_id=account_id, **fields).card.id  # type: ignore[arg-type]


class TestWhichCards:
    def test_a_card_of_another_type_is_refused_naming_the_cards_that_qualify(
        self, database: Database, store: BlobStore, account_id: str
    ) -> None:
        card = _card(database, account_id, content="plain text")
        with pytest.raises(TypeMismatch) as refused:
            _issue(database, store, thumbnails.IMAGE, account_id, card, "image/png")
        assert str(refused.value) == "Only a link card's image can be replaced; this card is text."
        with pytest.raises(TypeMismatch) as refused:
            _issue(database, store, captions.CAPTIONS, account_id, card, "text/vtt")
        assert str(refused.value) == "Only an audio or video card takes a caption file; this card is text."

    def test_a_card_in_trash_is_refused(self, database: Database, store: BlobStore, account_id: str) -> None:
        card = _card(database, account_id, url="https://example.com/a")
        with database.transaction() as session:
            trash.move_to_trash(session, account_id=account_id, card_id=card)
        with pytest.raises(CardInTrash):
            _issue(database, store, thumbnails.IMAGE, account_id, card, "image/png")

    def test_another_accounts_card_answers_like_a_missing_one(
        self, database: Database, store: BlobStore, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        card = _card(database, owner, url="https://example.com/a")
        with pytest.raises(NotFound) as theirs:
            _issue(database, store, thumbnails.IMAGE, other, card, "image/png")
        with pytest.raises(NotFound) as missing:
            _issue(database, store, thumbnails.IMAGE, other, new_id("crd"), "image/png")
        assert (type(theirs.value), str(theirs.value)) == (type(missing.value), str(missing.value))


class TestWhichUploads:
    def test_an_undeclared_type_is_refused_with_the_kinds_own_words(
        self, database: Database, store: BlobStore, account_id: str
    ) -> None:
        card = _card(database, account_id, url="https://example.com/a")
        with pytest.raises(UnsupportedType) as refused:
            _issue(database, store, thumbnails.IMAGE, account_id, card, "application/{pdf}")
        # The declared type is quoted as sent, braces and all.
        assert str(refused.value) == (
            "application/{pdf} is not an accepted image type: JPEG, PNG, WebP, GIF or AVIF."
        )

    def test_an_accepted_type_within_the_limit_is_issued_for_that_card(
        self, database: Database, store: BlobStore, account_id: str
    ) -> None:
        card = _card(database, account_id, url="https://example.com/a")
        with database.transaction() as session:
            issued = thumbnails.IMAGE.issue_upload(
                session,
                store,
                account_id=account_id,
                card_id=card,
                file_name="new.png",
                file_size=1_000,
                mime_type="IMAGE/PNG",
            )
        assert (issued.upload.purpose, issued.upload.card_id) == ("thumbnail", card)
        assert issued.max_file_size == thumbnails.MAX_BYTES


class TestCheck:
    def test_the_file_the_card_holds_already_answers_with_the_card(
        self, database: Database, store: BlobStore, account_id: str
    ) -> None:
        card = _card(database, account_id, url="https://example.com/a")
        upload_id = new_id("upl")
        with database.transaction() as session:
            held = editing.get_card(session, account_id=account_id, card_id=card, for_update=True)
            held.thumbnail_object = thumbnails.IMAGE.kept_key(held, upload_id)
        with database.transaction() as session:
            checked = thumbnails.IMAGE.check(
                session, store, account_id=account_id, card_id=card, file_key=upload_id
            )
        assert getattr(checked, "id", None) == card

    def test_any_other_key_is_checked_as_an_upload(
        self, database: Database, store: BlobStore, account_id: str
    ) -> None:
        card = _card(database, account_id, url="https://example.com/a")
        with database.transaction() as session, pytest.raises(UploadNotFound):
            key = new_id("upl")
            thumbnails.IMAGE.check(session, store, account_id=account_id, card_id=card, file_key=key)
