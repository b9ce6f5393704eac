"""A file a card takes beside its own: a link card's replaced image (cardvault.domain.files.
thumbnails), an audio or video card's caption file (cardvault.domain.cards.captions).

Each is an upload issued for that one card with its own ``purpose``, and taken in three steps:
``check`` (in a transaction: the card and the stored upload), the work on the file's bytes
(outside any transaction: the decoder's child reads it), then the module's ``apply`` (in a
second transaction, which takes the upload). What differs between them is a row of
:class:`Attachment`; the steps on the bytes and on the card stay in each module."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore
from cardvault.domain.cards.editing import get_live_card
from cardvault.domain.files import uploads
from cardvault.domain.files.quotas import NO_QUOTAS, Quotas
from cardvault.domain.models import Card


@dataclasses.dataclass(frozen=True)
class Attachment:
    """What one kind of attached file is: which cards take it and which uploads it accepts."""

    purpose: str  # the uploads' purpose
    card_types: tuple[str, ...]
    only: str  # the refusal of any other card: "Only ... ; this card is <type>."
    declared_types: tuple[str, ...]  # the MIME types an upload may be issued for
    refusal: str  # of any other declared type, with {mime_type}
    max_bytes: int
    kept_key: Callable[[Card, str], str]  # the key the card keeps a checked upload under
    held_key: Callable[[Card], str | None]  # the key the card holds now

    def card(self, session: Session, *, account_id: str, card_id: str, for_update: bool = False) -> Card:
        """The account's card, out of Trash and of a type that takes this file."""
        return get_live_card(
            session,
            account_id=account_id,
            card_id=card_id,
            types=self.card_types,
            only=self.only,
            for_update=for_update,
        )

    def issue_upload(
        self,
        session: Session,
        store: BlobStore,
        *,
        account_id: str,
        card_id: str,
        file_name: str,
        file_size: int,
        mime_type: str,
        quotas: Quotas = NO_QUOTAS,
    ) -> uploads.Issued:
        """An upload URL for the card's file."""
        return uploads.issue_for_card(
            session,
            store,
            card=self.card(session, account_id=account_id, card_id=card_id),
            purpose=self.purpose,
            accepted=self.declared_types,
            refusal=self.refusal.format(mime_type=mime_type),
            max_file_size=self.max_bytes,
            file_name=file_name,
            file_size=file_size,
            mime_type=mime_type,
            quotas=quotas,
        )

    def check(
        self, session: Session, store: BlobStore, *, account_id: str, card_id: str, file_key: str
    ) -> uploads.CheckedUpload | Card:
        """Check the card and its upload: the checked upload (its bytes judged by the caller),
        or the card itself when this upload is already its file (a repeated PUT)."""
        card = self.card(session, account_id=account_id, card_id=card_id)
        if self.held_key(card) == self.kept_key(card, file_key):
            return card
        return uploads.check(
            session,
            store,
            account_id=account_id,
            file_key=file_key,
            file_etag=None,
            purpose=self.purpose,
            card_id=card.id,
            max_file_size=self.max_bytes,
        )
