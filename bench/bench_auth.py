"""What signing in and OAuth tokens cost, each against a baseline measured in the same run, in
alternating rounds (the median of the rounds' ratios):

- ``token lookup``: verifying an access token (``oauth.token_holder``: the token and its grant,
  in a read transaction) against the same lookup written as one raw SQL statement;
- ``refresh``: ``POST /oauth/token`` with ``grant_type=refresh_token`` through the app
  (Authlib's server, the form, the rotation) against a bare Starlette endpoint that reads the
  same form and writes the same rows with raw SQL in one transaction;
- ``API call``: ``GET /v1/cards?limit=1`` with an access token against the same call with an
  API key (both verified once, then served from the credential cache);
- ``password``: checking a password through ``Passwords.verify`` against argon2-cffi's bare
  ``PasswordHasher.verify`` with the same parameters (the production defaults).

    .venv/bin/python -m bench.bench_auth [--database sqlite|postgresql] [--rounds R]

Everything runs in this process over one database (SQLite in a temporary directory, or a fresh
PostgreSQL database); HTTP goes through Starlette's test client, so the ratios are about our
code, not the network. Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import argon2
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from cardvault.domain.auth import accounts, credentials, keys, oauth
from cardvault.domain.auth.passwords import PasswordParams, Passwords
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.servers import fresh_database

_LOOKUP = text(
    "SELECT g.account_id, t.scopes, t.expires_at FROM oauth_tokens t "
    "JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = :h AND t.kind = 'access' "
    "AND t.revoked_at IS NULL AND t.expires_at > :now AND g.revoked_at IS NULL"
)


def _per_call(work: Callable[[], object], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        work()
    return (time.perf_counter() - started) / count


def _tokens(db: Database, account_id: str, client_id: str) -> tuple[str, str, str]:
    """A grant of the client for the account: (grant id, access token, refresh token)."""
    access, refresh = (
        credentials.new_secret(credentials.ACCESS_TOKEN),
        credentials.new_secret(credentials.REFRESH_TOKEN),
    )
    with db.transaction() as session:
        grant = oauth.start_grant(
            session, account_id=account_id, client_id=client_id, scopes="read write", now=now_ms()
        )
        oauth.add_tokens(
            session,
            grant=grant,
            access_token=access,
            refresh_token=refresh,
            access_scopes="read write",
            now=now_ms(),
        )
        return grant.id, access, refresh


def _bare_refresh_app(db: Database) -> Starlette:
    """The baseline: the same form read, the same rows written, in raw SQL."""

    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        refresh = str(form["refresh_token"])
        now = now_ms()
        new_access, new_refresh = (
            credentials.new_secret(credentials.ACCESS_TOKEN),
            credentials.new_secret(credentials.REFRESH_TOKEN),
        )
        with db.engine.begin() as connection:
            grant = connection.execute(
                text(
                    "SELECT g.id, g.scopes FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id "
                    "WHERE t.token_hash = :h"
                ),
                {"h": credentials.digest(refresh)},
            ).one()
            spent = connection.execute(
                text("UPDATE oauth_tokens SET spent_at = :now WHERE token_hash = :h AND spent_at IS NULL"),
                {"h": credentials.digest(refresh), "now": now},
            )
            assert spent.rowcount == 1
            for value, kind in ((new_access, "access"), (new_refresh, "refresh")):
                connection.execute(
                    text(
                        "INSERT INTO oauth_tokens (token_hash, grant_id, kind, scopes, created_at, "
                        "expires_at) VALUES (:h, :g, :k, :s, :now, :exp)"
                    ),
                    {
                        "h": credentials.digest(value),
                        "g": grant.id,
                        "k": kind,
                        "s": grant.scopes,
                        "now": now,
                        "exp": now + 3_600_000,
                    },
                )
            connection.execute(
                text("UPDATE oauth_grants SET refreshed_at = :now WHERE id = :g"), {"g": grant.id, "now": now}
            )
        return JSONResponse(
            {
                "access_token": new_access,
                "refresh_token": new_refresh,
                "token_type": "Bearer",
                "expires_in": 3600,
            }
        )

    return Starlette(routes=[Route("/oauth/token", token, methods=["POST"])])


def _refresher(client: TestClient, client_id: str, first: str) -> Callable[[], object]:
    """A refresh of the chain starting at ``first``, each call with the token the last one got."""
    chain = [first]

    def refresh() -> object:
        answer = client.post(
            "/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": chain[-1], "client_id": client_id},
        )
        chain.append(answer.json()["refresh_token"])
        return answer

    return refresh


def _round(
    db: Database, app: TestClient, bare: TestClient, *, account_id: str, client_id: str, key: str
) -> dict[str, tuple[float, float]]:
    """One round of the database and HTTP workloads: (ours, baseline) seconds per call."""
    _, access, refresh = _tokens(db, account_id, client_id)
    digest = credentials.digest(access)

    def ours_lookup() -> object:
        with db.transaction(write=False) as session:
            return oauth.token_holder(session, token=access, now=now_ms())

    def raw_lookup() -> object:
        with db.engine.connect() as connection:
            return connection.execute(_LOOKUP, {"h": digest, "now": now_ms()}).first()

    token_headers = {"Authorization": f"Bearer {access}"}
    key_headers = {"Authorization": f"Bearer {key}"}
    app.get("/v1/cards?limit=1", headers=token_headers)  # verified once, then cached
    app.get("/v1/cards?limit=1", headers=key_headers)
    return {
        "token lookup": (_per_call(ours_lookup, 2000), _per_call(raw_lookup, 2000)),
        "refresh": (
            _per_call(_refresher(app, client_id, refresh), 200),
            _per_call(_refresher(bare, client_id, _tokens(db, account_id, client_id)[2]), 200),
        ),
        "API call": (
            _per_call(lambda: app.get("/v1/cards?limit=1", headers=token_headers), 300),
            _per_call(lambda: app.get("/v1/cards?limit=1", headers=key_headers), 300),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = fresh_database(args.database, Path(tmp))
        db = open_database(url)
        db.migrate()
        with db.transaction() as session:
            account = accounts.create_account(session, name="bench")
            key = keys.issue_api_key(session, account_id=account.id)
            client, _ = oauth.create_client(
                session, name="Bench", redirect_uris=["https://b.example/cb"], now=now_ms()
            )
            account_id, client_id = account.id, client.id
        env = {
            "CARDVAULT_DATA_DIR": tmp,
            "CARDVAULT_DATABASE_URL": url,
            "CARDVAULT_PUBLIC_URL": "https://bench.example",
            "CARDVAULT_SECRET_KEY": "b" * 48,
            "CARDVAULT_FETCH_LINKS": "false",
            "CARDVAULT_AI": "false",
            "CARDVAULT_SPEECH": "false",
        }
        settings = Settings.from_env(env)
        params = PasswordParams(
            settings.password_time_cost, settings.password_memory_kib, settings.password_parallelism
        )
        ours_hasher = Passwords(params)
        bare_hasher = argon2.PasswordHasher(
            time_cost=params.time_cost, memory_cost=params.memory_kib, parallelism=params.parallelism
        )
        stored = bare_hasher.hash("a bench passphrase")
        ratios: dict[str, list[float]] = {"token lookup": [], "refresh": [], "API call": [], "password": []}
        timings: dict[str, list[tuple[float, float]]] = {name: [] for name in ratios}
        with (
            TestClient(create_app(settings, db), base_url="https://bench.example") as app,
            TestClient(_bare_refresh_app(db), base_url="https://bench.example") as bare,
        ):
            for _ in range(args.rounds):
                pairs = _round(db, app, bare, account_id=account_id, client_id=client_id, key=key)
                pairs["password"] = (
                    _per_call(lambda: ours_hasher.verify(stored, "a bench passphrase"), 10),
                    _per_call(lambda: bare_hasher.verify(stored, "a bench passphrase"), 10),
                )
                for name, pair in pairs.items():
                    timings[name].append(pair)
                    ratios[name].append(pair[0] / pair[1])
        db.dispose()
    print(f"{'workload':<14} {'ours':>12} {'baseline':>12} {'ratio':>7}")
    report = {"database": args.database, "rounds": args.rounds}
    for name, pairs in timings.items():
        ours = statistics.median(p[0] for p in pairs) * 1e6
        base = statistics.median(p[1] for p in pairs) * 1e6
        ratio = statistics.median(ratios[name])
        print(f"{name:<14} {ours:>10.0f}us {base:>10.0f}us {ratio:>6.2f}x")
        report[name] = {"ours_us": round(ours, 1), "baseline_us": round(base, 1), "ratio": round(ratio, 3)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
