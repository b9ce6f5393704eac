"""Reading a row an account owns: another account's id answers exactly like a missing one."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.errors import NotFound
from cardvault.domain.models.cards import Card
from cardvault.domain.models.declarative import Base
from cardvault.domain.models.folders import Folder
from cardvault.domain.models.portability import ExportJob, ImportJob
from cardvault.domain.models.tags import TagOperation
from cardvault.domain.models.webhooks import Webhook, WebhookDelivery

Owned = TypeVar("Owned", Card, Folder, TagOperation, ExportJob, ImportJob, Webhook, WebhookDelivery)


def get_owned(
    session: Session, model: type[Owned], *, row_id: str, account_id: str, for_update: bool = False
) -> Owned:
    """Return the account's row with this id, or raise NotFound: another account's id answers
    exactly like a missing one. Writers pass ``for_update`` to lock the row until they commit."""
    query = select(model).where(model.id == row_id, model.account_id == account_id)
    row = session.scalar(query.with_for_update() if for_update else query)
    if row is None:
        raise NotFound(f"{_NAMES[model]} not found.")
    return row


_NAMES: dict[type[Base], str] = {
    Card: "Card",
    Folder: "Folder",
    TagOperation: "Tag operation",
    ExportJob: "Export",
    ImportJob: "Import",
    Webhook: "Webhook",
    WebhookDelivery: "Delivery",
}
