"""Sign-in: accounts get an email and a password; API keys a name, scopes, their last characters
and when they were last used; OAuth 2.0 clients, authorization codes, grants (a refresh token
family) and their tokens; browser sessions of the sign-in pages.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _account_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["account_id"], ["accounts.id"], ondelete="CASCADE", name=f"fk_{table}_account_id_accounts"
    )


def _client_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["client_id"], ["oauth_clients.id"], ondelete="CASCADE", name=f"fk_{table}_client_id_oauth_clients"
    )


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN on both databases (no copy of the table on SQLite).
    op.add_column("accounts", sa.Column("email", sa.String(320), nullable=True))
    op.add_column("accounts", sa.Column("email_key", sa.String(320), nullable=True))
    op.add_column("accounts", sa.Column("password_hash", sa.Text, nullable=True))
    # An index, not a constraint: SQLite adds it without copying the table.
    op.create_index("uq_accounts_email_key", "accounts", ["email_key"], unique=True)
    op.add_column("api_keys", sa.Column("name", sa.String(100), nullable=False, server_default=""))
    # Keys made before this revision keep no clear characters: their hash is all there is.
    op.add_column("api_keys", sa.Column("last_chars", sa.String(8), nullable=True))
    op.add_column(
        "api_keys", sa.Column("scopes", sa.String(100), nullable=False, server_default="read write keys")
    )
    op.add_column("api_keys", sa.Column("last_used_at", sa.BigInteger, nullable=True))
    op.create_index("ix_api_keys_account_created", "api_keys", ["account_id", "created_at"])
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("redirect_uris", sa.JSON, nullable=False),
        sa.Column("scopes", sa.String(100), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=True),  # None: a public client
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_oauth_clients"),
    )
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("scopes", sa.String(100), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("refreshed_at", sa.BigInteger, nullable=False),
        sa.Column("revoked_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_oauth_grants"),
        _account_fk("oauth_grants"),
        _client_fk("oauth_grants"),
    )
    op.create_index("ix_oauth_grants_account_id", "oauth_grants", ["account_id"])
    # A key an app made with its access token lives only as long as the app's grant. A plain
    # column with its index (SQLite cannot add a foreign key to a table without copying it):
    # key lookups join the grant, and the grant's cleanup deletes such keys first.
    op.add_column("api_keys", sa.Column("grant_id", sa.String(64), nullable=True))
    op.create_index("ix_api_keys_grant_id", "api_keys", ["grant_id"])
    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("redirect_uri", sa.Text, nullable=False),
        sa.Column("scopes", sa.String(100), nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("used_at", sa.BigInteger, nullable=True),
        sa.Column("grant_id", sa.String(64), nullable=True),  # the grant its exchange started
        sa.PrimaryKeyConstraint("code_hash", name="pk_oauth_codes"),
        _account_fk("oauth_codes"),
        _client_fk("oauth_codes"),
    )
    op.create_index("ix_oauth_codes_expires_at", "oauth_codes", ["expires_at"])
    op.create_table(
        "oauth_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("grant_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("scopes", sa.String(100), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("spent_at", sa.BigInteger, nullable=True),  # a refresh token used once
        sa.Column("revoked_at", sa.BigInteger, nullable=True),  # an access token revoked alone
        sa.PrimaryKeyConstraint("token_hash", name="pk_oauth_tokens"),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["oauth_grants.id"],
            ondelete="CASCADE",
            name="fk_oauth_tokens_grant_id_oauth_grants",
        ),
        sa.CheckConstraint("kind IN ('access', 'refresh')", name="ck_oauth_tokens_kind"),
    )
    op.create_index("ix_oauth_tokens_grant_id", "oauth_tokens", ["grant_id"])
    op.create_index("ix_oauth_tokens_expires_at", "oauth_tokens", ["expires_at"])
    op.create_table(
        "web_sessions",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_web_sessions"),
        _account_fk("web_sessions"),
    )
    op.create_index("ix_web_sessions_account_id", "web_sessions", ["account_id"])
    op.create_index("ix_web_sessions_expires_at", "web_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("web_sessions")
    op.drop_table("oauth_tokens")
    op.drop_table("oauth_codes")
    op.drop_table("oauth_grants")
    op.drop_table("oauth_clients")
    op.drop_index("ix_api_keys_account_created", table_name="api_keys")
    op.drop_index("ix_api_keys_grant_id", table_name="api_keys")
    for column in ("grant_id", "last_used_at", "scopes", "last_chars", "name"):
        op.drop_column("api_keys", column)
    op.drop_index("uq_accounts_email_key", table_name="accounts")
    # ALTER TABLE, never SQLite's copy of the table: dropping the old accounts table would
    # cascade to every card.
    for column in ("password_hash", "email_key", "email"):
        op.drop_column("accounts", column)
