"""The changes feed: a thin edge over cardvault.domain.feed."""

from __future__ import annotations

from typing import Any

from cardvault.domain import feed, versions
from cardvault.domain.cards import listing
from cardvault.domain.feed import ChangeRow
from cardvault.handlers import card_json
from cardvault.handlers.annotations import annotation_json
from cardvault.handlers.exports import job_json
from cardvault.handlers.folders import folder_json
from cardvault.handlers.http import runtime
from cardvault.handlers.shares import share_json
from cardvault.handlers.subscriptions import subscription_json
from cardvault.handlers.tags import operation_json

# Each change type's resource field; every item carries those of the types read (the types
# of before 1.3.0 always), null but its own.
_FIELDS = {
    "card": "card",
    "folder": "folder",
    "tag": "tag",
    "tagOperation": "tagOperation",
    "export": "export",
    "annotation": "annotation",
    "share": "share",
    "subscription": "subscription",
}


def list_changes(
    user: str, limit: int = 100, cursor: str | None = None, types: list[str] | None = None
) -> dict[str, Any]:
    rt = runtime.current()
    kinds = tuple(dict.fromkeys(types)) if types else feed.DEFAULT_KINDS
    fields = {kind: field for kind, field in _FIELDS.items() if kind in feed.DEFAULT_KINDS or kind in kinds}
    with rt.db.transaction(write=False) as session:  # one snapshot: the changes and their resources
        page = feed.read(
            session, account_id=user, secret=rt.settings.secret_key, cursor=cursor, limit=limit, kinds=kinds
        )
        found = feed.resources(session, account_id=user, changes=page.changes)
        cards = card_json.extended_many(list(found.cards.values()))
        counts = listing.folder_card_counts(session, user, list(found.folders.values()))
        tags = {
            **{("card", view.card.id): versions.etag(view.card.version) for view in found.cards.values()},
            **{
                ("folder", f.id): versions.folder_etag(f.version, counts[f.id])
                for f in found.folders.values()
            },
        }
        shown: dict[tuple[str, str], dict[str, Any]] = {
            **{("card", view.card.id): cards[view.card.pk] for view in found.cards.values()},
            **{("folder", f.id): folder_json(f, counts[f.id]) for f in found.folders.values()},
            **{("tag", key): {"name": t.name, "count": t.count} for key, t in found.tags.items()},
            **{("tagOperation", o.id): operation_json(o) for o in found.tag_operations.values()},
            **{("export", job.id): job_json(job) for job in found.exports.values()},
            **{("annotation", a.id): annotation_json(a) for a in found.annotations.values()},
            # As getShare shows it: never its token or its links, which hold the token.
            **{("share", s.id): share_json(session, s) for s in found.shares.values()},
            **{("subscription", s.id): subscription_json(s) for s in found.subscriptions.values()},
        }
        items = [
            _item_json(change, shown.get(key := (change.kind, change.resource_id)), tags.get(key), fields)
            for change in page.changes
        ]
    return {"items": items, "pageInfo": {"hasMore": page.has_more, "nextCursor": page.next_cursor}}


def _item_json(
    change: ChangeRow, resource: dict[str, Any] | None, etag: str | None, fields: dict[str, str]
) -> dict[str, Any]:
    # An upsert whose resource is gone (a tag no card carries now) is given as the delete it is.
    action = change.action if resource is not None else "delete"
    return {
        "sequence": change.sequence,
        "type": change.kind,
        "id": change.resource_id,
        "action": action,
        "changedAt": change.changed_at,
        "etag": etag if resource is not None else None,  # a card's or folder's, as its ETag
        **{field: resource if kind == change.kind else None for kind, field in fields.items()},
    }
