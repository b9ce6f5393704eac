"""Smart folders in a listing: a folder of kind ``smart`` holds whatever its query (the ``q``
grammar) matches now, so a listing that names one (``folder=`` or a ``folder:`` qualifier) is
the listing of its query, joined to the rest of the request's ``q`` (every term holds).

A smart folder must be the only folder a ``folder=`` list names (any of several folders cannot
be one query), and a ``folder:`` qualifier naming one cannot be negated; both answer
InvalidQuery. A smart folder's query cannot name another smart folder (refused when it is
written, cardvault.domain.folders), so one expansion is all there is."""

from __future__ import annotations

import dataclasses
import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from cardvault.domain.cards.filters import CardFilter
from cardvault.domain.errors import InvalidQuery
from cardvault.domain.models import Folder
from cardvault.domain.names import tag_key
from cardvault.domain.search.query import parse

# A folder: qualifier as the grammar reads it (cardvault.domain.search.query): name, colon, a
# quoted value or a run up to a space or a quote; a leading "-" negates it.
_FOLDER_QUALIFIER = re.compile(r'(?<!\S)(-?)folder:("[^"]*"?|[^\s"]+)', re.IGNORECASE)


def _smart_folders(session: Session, account_id: str, names: set[str]) -> dict[str, str]:
    """The account's smart folders among these ids or names (by id and by name key) -> query."""
    if not names:
        return {}
    keys = {tag_key(name) for name in names}
    rows = session.execute(
        select(Folder.id, Folder.name_key, Folder.query).where(
            Folder.account_id == account_id,
            Folder.kind == "smart",
            Folder.id.in_(names) | Folder.name_key.in_(keys),
        )
    ).all()
    found: dict[str, str] = {}
    for folder_id, name_key, query in rows:
        found[folder_id] = found[name_key] = query or ""
    return found


def _joined(*queries: str | None) -> str | None:
    joined = " ".join(q.strip() for q in queries if q and q.strip())
    return joined or None


def expand(session: Session, account_id: str, filters: CardFilter) -> CardFilter:
    """The listing with each smart folder it names replaced by its query."""
    qualifiers = [q for q in parse(filters.q or "").qualifiers if q.name == "folder"] if filters.q else []
    smart = _smart_folders(session, account_id, {*filters.folders, *(str(q.value) for q in qualifiers)})
    if not smart:
        return filters
    q = filters.q
    if q and qualifiers:

        def replaced(found: re.Match[str]) -> str:
            value = found.group(2).strip('"').strip()
            query = smart.get(value, smart.get(tag_key(value)))
            if query is None:
                return found.group(0)
            if found.group(1):
                raise InvalidQuery(
                    f"folder:{value} is a smart folder, which cannot be left out (-folder:).",
                    position=found.start(),
                )
            return f" {query} "

        q = _FOLDER_QUALIFIER.sub(replaced, q)
    folders = filters.folders
    held = [folder_id for folder_id in folders if folder_id in smart]
    if held:
        if len(folders) > 1:
            raise InvalidQuery("A smart folder must be the only folder the folder filter names.", position=0)
        q, folders = _joined(smart[held[0]], q), ()
    return dataclasses.replace(filters, q=_joined(q), folders=folders)
