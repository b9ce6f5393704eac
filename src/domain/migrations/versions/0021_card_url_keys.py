"""Cards are found by their page: each card with a URL keeps the key of its URL's normal form
(the rules of cardvault.domain.urls, copied here), indexed per account, for listCards' ``url`` filter and an
import's duplicates. Existing cards get theirs here, a batch at a time.

Revision ID: 0021
Revises: 0020
"""

import hashlib
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
from alembic import op
from w3lib.url import canonicalize_url

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_BATCH = 1000
_KEYED = sa.text("url_key IS NOT NULL")

# This migration's own copy of the URL rules it keyed cards by (cardvault.domain.urls when it
# was written): a migration computes what it did then, whatever the service's rules become.
_TRACKING_PARAMETERS = frozenset(
    {
        "fbclid",
        "gclid",
        "gbraid",
        "wbraid",
        "dclid",
        "msclkid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "igshid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "ref_src",
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_URL = 2048


def _normal_url(url: str) -> str | None:
    """The URL's normal form, or None when it is no http or https URL with a host."""
    if len(url) > _MAX_URL:
        return None
    try:
        canonical = canonicalize_url(url.strip(), keep_fragments=True)
        parts = urlsplit(canonical)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{port}"
    if "@" in parts.netloc:
        netloc = f"{parts.netloc.rsplit('@', 1)[0]}@{netloc}"
    query = "&".join(pair for pair in parts.query.split("&") if pair and not _tracking(pair))
    fragment = parts.fragment if parts.fragment[:1] in ("!", "/") else ""
    return urlunsplit((parts.scheme, netloc, parts.path or "/", query, fragment))


def _tracking(pair: str) -> bool:
    name = pair.split("=", 1)[0].lower()
    return name.startswith("utm_") or name in _TRACKING_PARAMETERS


def _url_key(url: str | None) -> str | None:
    """The key of the URL's normal form (32 hex digits of its SHA-256), or None."""
    if url is None:
        return None
    normal = _normal_url(url)
    return None if normal is None else hashlib.sha256(normal.encode()).hexdigest()[:32]


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: SQLite's batch mode copies the table, and its
    # triggers (the doomed objects') do not survive the copy.
    op.add_column("cards", sa.Column("url_key", sa.String(32), nullable=True))
    cards = sa.table("cards", sa.column("pk", sa.Integer), sa.column("url", sa.Text), sa.column("url_key"))
    connection = op.get_bind()
    after = 0
    while True:
        rows = connection.execute(
            sa.select(cards.c.pk, cards.c.url)
            .where(cards.c.pk > after, cards.c.url.is_not(None))
            .order_by(cards.c.pk)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        keyed = [{"card_pk": pk, "key": _url_key(url)} for pk, url in rows]
        connection.execute(
            cards.update().where(cards.c.pk == sa.bindparam("card_pk")).values(url_key=sa.bindparam("key")),
            keyed,
        )
        after = rows[-1][0]
    op.create_index(
        "ix_cards_account_url",
        "cards",
        ["account_id", "url_key"],
        postgresql_where=_KEYED,
        sqlite_where=_KEYED,
    )


def downgrade() -> None:
    op.drop_index("ix_cards_account_url", "cards")
    op.drop_column("cards", "url_key")
