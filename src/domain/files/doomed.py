"""Objects doomed: store keys queued for deletion, in the transaction that made them
unwanted (a card purged, an upload forgotten, an import's file done with), and deleted from the
store after it commits (cardvault.workers.files). The database's triggers doom the objects of
rows they delete (cardvault.domain.migrations.doomed)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from cardvault.domain.clock import now_ms
from cardvault.domain.models import DoomedObject


def doom(session: Session, keys: list[str]) -> None:
    """Queue objects for deletion from the store (with the transaction's other work)."""
    dialect = session.get_bind().dialect.name
    insert = sqlite_insert if dialect == "sqlite" else pg_insert
    now = now_ms()
    session.execute(
        insert(DoomedObject).values([{"key": k, "doomed_at": now} for k in keys]).on_conflict_do_nothing()
    )


def doomed(session: Session, *, batch_size: int) -> list[str]:
    """Up to batch_size object keys whose cards are gone."""
    return list(session.scalars(select(DoomedObject.key).order_by(DoomedObject.doomed_at).limit(batch_size)))


def forget_doomed(session: Session, keys: list[str]) -> None:
    """Forget doomed objects that were deleted from the store."""
    session.execute(delete(DoomedObject).where(DoomedObject.key.in_(keys)))
