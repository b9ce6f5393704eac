"""Reading a row an account owns: another account's id answers exactly like a missing one. And
the account's jobs (tag operations, exports, imports): at most one of each kind active at a time,
held by a unique column naming the account while the job is pending or running."""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from cardvault.domain.errors import Conflict, ExportRunning, ImportRunning, NotFound, TagOperationRunning
from cardvault.domain.models.cards import Card
from cardvault.domain.models.declarative import Base
from cardvault.domain.models.folders import Folder
from cardvault.domain.models.portability import ExportJob, ImportJob
from cardvault.domain.models.shares import Share
from cardvault.domain.models.subscriptions import Subscription
from cardvault.domain.models.tags import TagOperation
from cardvault.domain.models.webhooks import Webhook, WebhookDelivery

Owned = TypeVar(
    "Owned", Card, Folder, TagOperation, ExportJob, ImportJob, Webhook, WebhookDelivery, Share, Subscription
)


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
    Share: "Share",
    Subscription: "Subscription",
}


Active = TypeVar("Active", TagOperation, ExportJob, ImportJob)
# The column that names the account while its job of that kind is active (unique).
_HOLDER: dict[type[Base], InstrumentedAttribute[str | None]] = {
    TagOperation: TagOperation.running_account_id,
    ExportJob: ExportJob.active_account_id,
    ImportJob: ImportJob.active_account_id,
}


def active_job(session: Session, model: type[Active], *, account_id: str) -> Active | None:
    """The account's active job of this kind, if any."""
    return session.scalar(select(model).where(_HOLDER[model] == account_id))


def refuse_while_active(session: Session, model: type[Active], *, account_id: str) -> None:
    """Raise the kind's Conflict (TagOperationRunning, ExportRunning, ImportRunning) while the
    account has a job of this kind active."""
    running = active_job(session, model, account_id=account_id)
    if running is not None:
        raise _refusal(running)


def add_alone(session: Session, job: Active) -> None:
    """Add a new active job, refused with the kind's Conflict when another is active."""
    try:
        with session.begin_nested():
            session.add(job)
        return
    except IntegrityError:
        # Another request started one between our check and our insert; the database decided.
        running = active_job(session, type(job), account_id=job.account_id)
        if running is None:
            raise
    raise _refusal(running)


def _refusal(running: TagOperation | ExportJob | ImportJob) -> Conflict:
    if isinstance(running, ExportJob):
        return ExportRunning(running)  # the job itself: the 409 shows it
    if isinstance(running, ImportJob):
        return ImportRunning(running.id)
    return TagOperationRunning(running.id)
