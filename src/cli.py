"""The ``cardvault`` command: serve the API, run workers, apply migrations, create accounts, API
keys and OAuth clients, and import an export."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from cardvault import logs
from cardvault.adapters import speech
from cardvault.domain.auth import accounts, keys, oauth, web_sessions
from cardvault.domain.clock import now_ms
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError, InvalidInput
from cardvault.domain.portability.imports.formats.known import NAMES, RESTORED, detect
from cardvault.handlers.http.runtime import passwords_from_settings
from cardvault.settings import Settings, SettingsError, is_loopback


def _local_key(db: Database, data_dir: Path) -> str:
    """Return the embedded default's ready-to-use key, creating its account on first run."""
    key_file = data_dir / "api_key"
    if key_file.exists():
        key = key_file.read_text().strip()
        with db.transaction(write=False) as session:
            if keys.account_for_key(session, key=key) is not None:
                return key
    with db.transaction() as session:
        try:
            account = accounts.find_account(session, name_or_id="local")
        except CardVaultError:
            account = accounts.create_account(session, name="local")
        key = keys.issue_api_key(session, account_id=account.id)
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    return key


def _sign_in_link(db: Database, settings: Settings) -> str:
    """A one-time link that signs a browser in as the local account, which has no password: the
    card pages its cards' appUrl names open on a fresh clone (never printed in production)."""
    with db.transaction() as session:
        account = accounts.find_account(session, name_or_id="local")
        token = web_sessions.issue_sign_in_link(session, account_id=account.id, now=now_ms())
    return f"{settings.public_url}/sign-in/link?token={token}"


def _shown_link(db: Database, settings: Settings) -> str:
    """The sign-in link as serve's banner shows it: whole on a terminal (the person who started
    it reads it once); elsewhere output is kept (a log collector, a file), and a live link there
    is a credential, so it goes to a file of the data directory only its owner reads."""
    link = _sign_in_link(db, settings)
    if sys.stdout.isatty():
        return link
    kept = settings.data_dir / "sign_in_link"
    kept.unlink(missing_ok=True)
    descriptor = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(link + "\n")
    return f"{logs.redact(link)} (the link is in {kept})"


# The HTTP server refuses, with its own 400 text/plain before the app sees anything, a request
# whose request line and headers keep growing past this, or that HTTP/1.1 itself forbids (a
# NUL, CR or LF inside a header). h11 has such a bound; httptools, uvicorn's default parser,
# has none, so a client could make a process buffer gigabytes.
MAX_REQUEST_HEAD_BYTES = 256 * 1024


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches the server at."""
    if host in ("0.0.0.0", "", "::"):  # noqa: S104 - all interfaces: name the loopback one
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(settings: Settings, host: str, port: int, workers: int) -> None:
    import uvicorn

    db = open_database(settings.database_url)
    db.migrate()
    print(f"Card Vault listening on {local_url(host, port)}/v1 (docs at /v1/ui/)", flush=True)
    if db.dialect == "sqlite":  # the embedded default: its local account, ready to use
        print(f"API key of the local account: {_local_key(db, settings.data_dir)}", flush=True)
        print(f"Sign in to its card pages (once, within 15 minutes): {_shown_link(db, settings)}", flush=True)
    db.dispose()
    with _metrics_folder(workers):
        uvicorn.run(
            "cardvault.handlers.http.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_config=logs.uvicorn_config(),  # JSON lines off a terminal, secrets redacted
            access_log=False,  # cardvault.requests logs each request (without its query)
            http="h11",
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
            server_header=False,
        )


@contextlib.contextmanager
def _metrics_folder(workers: int) -> Iterator[None]:
    """With several API processes, a folder of their own where each writes its metrics and the
    one scraped sums them (cardvault.adapters.metrics), removed when the server stops; one
    named in PROMETHEUS_MULTIPROC_DIR already is used as it is (its owner empties it)."""
    if workers < 2 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    folder = tempfile.mkdtemp(prefix="cardvault-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder  # before the processes import prometheus_client
    try:
        yield
    finally:
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
        shutil.rmtree(folder, ignore_errors=True)


def _new_password_hash(settings: Settings) -> str:
    """Ask for a password twice on a terminal, or read one line from standard input; check it
    and return its hash."""
    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Password again: ") != password:
            raise InvalidInput("The two passwords differ.")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    accounts.check_password_rules(password)
    return passwords_from_settings(settings).hash(password)


def _head(path: Path) -> bytes:
    """A file's first bytes, as a format is told by (none when it cannot be read)."""
    try:
        with path.open("rb") as file:
            return file.read(4096)
    except OSError:
        return b""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cardvault", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="run the API (migrations are applied first)")
    serve_cmd.add_argument("--host", default="127.0.0.1")
    serve_cmd.add_argument("--port", type=int, default=8000)
    serve_cmd.add_argument("--workers", type=int, default=1, help="API processes (PostgreSQL and Redis only)")
    worker_cmd = commands.add_parser("worker", help="run background workers on the Redis broker")
    worker_cmd.add_argument("--processes", type=int, default=1)
    worker_cmd.add_argument("--threads", type=int, default=4)
    commands.add_parser("migrate", help="apply pending database migrations")
    commands.add_parser(
        "doctor",
        help="print the settings in force (secrets hidden) and check the database, Redis and file store",
    )
    account_cmd = commands.add_parser(
        "accounts",
        help="manage accounts",
        description="create: a new account (with --email, it can sign in: the password is asked for, "
        "or read as one line from standard input; never from the command line). "
        "password: set an account's password (signs its browsers and apps out).",
    )
    account_cmd.add_argument("action", choices=["create", "password"])
    account_cmd.add_argument("name", help="the account's name (password: its name or id)")
    account_cmd.add_argument("--email", help="the email the account signs in with")
    client_cmd = commands.add_parser(
        "clients",
        help="register OAuth 2.0 client applications",
        description="Register an application that signs people in with OAuth 2.0 (authorization code "
        "with PKCE S256). Prints its client_id (and, with --confidential, its secret, shown once).",
    )
    client_cmd.add_argument("action", choices=["create"])
    client_cmd.add_argument("name", help="the name the consent page shows")
    client_cmd.add_argument(
        "--redirect-uri",
        action="append",
        required=True,
        help="a redirect URI, matched exactly (repeat for several): https, http on loopback, or an "
        "app's reverse-domain scheme",
    )
    client_cmd.add_argument(
        "--scope", default=oauth.CLIENT_SCOPES, help=f"scopes it may ask for (default: {oauth.CLIENT_SCOPES})"
    )
    client_cmd.add_argument(
        "--confidential", action="store_true", help="a server-side app that authenticates with a secret"
    )
    key_cmd = commands.add_parser("keys", help="manage API keys")
    key_cmd.add_argument("action", choices=["create"])
    key_cmd.add_argument("account", help="the account's name or id")
    import_cmd = commands.add_parser(
        "import", help="restore a ZIP export, or import another service's export, into an account"
    )
    import_cmd.add_argument("archive", type=Path, help="our export's ZIP file, or another service's export")
    import_cmd.add_argument("--account", required=True, help="the account's name or id")
    import_cmd.add_argument(
        "--format",
        choices=sorted(NAMES),
        help="another service's format (told from the file's bytes when omitted)",
    )
    import_cmd.add_argument("--on-duplicate", choices=["skip", "merge", "create"], default="skip")
    args = parser.parse_args(argv)

    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"cardvault: {exc}", file=sys.stderr)
        return 2
    # Whatever transcribes checks its model first (serve does with no Redis: its workers run
    # inside it), and does not start on a change.
    transcribes = args.command == "worker" or (args.command == "serve" and settings.redis_url is None)
    if transcribes and settings.speech and speech.installed():
        try:
            speech.check()
        except speech.SpeechUnavailable as exc:
            print(f"cardvault: {exc}", file=sys.stderr)
            return 2
    if args.command == "serve":
        if "CARDVAULT_PUBLIC_URL" not in os.environ:
            # Cards' appUrl names the address served, in this process and the server's workers.
            os.environ["CARDVAULT_PUBLIC_URL"] = local_url(args.host, args.port)
            settings = Settings.from_env()
        if (
            not is_loopback(args.host)
            and settings.metrics
            and settings.redis_url is None
            and not settings.metrics_token
        ):
            # The embedded default's /metrics is open: off loopback, anyone could read it.
            print(
                f"cardvault: --host {args.host} is not a loopback address, and GET /metrics is open "
                "without CARDVAULT_METRICS_TOKEN: set it (or CARDVAULT_METRICS=false)",
                file=sys.stderr,
            )
            return 2
        if args.workers > 1 and settings.database_url.startswith("sqlite"):
            print("cardvault: several API processes need PostgreSQL", file=sys.stderr)
            return 2
        if args.workers > 1 and settings.redis_url is None:
            # Rate limits kept in one process's memory would let N processes allow N times as much.
            print("cardvault: several API processes need CARDVAULT_REDIS_URL (rate limits)", file=sys.stderr)
            return 2
        serve(settings, args.host, args.port, args.workers)
        return 0
    if args.command == "worker":
        if settings.redis_url is None:
            print(
                "cardvault: workers need CARDVAULT_REDIS_URL (without it, serve runs them)", file=sys.stderr
            )
            return 2
        from cardvault.workers import actors

        command = [sys.executable, "-m", "dramatiq", "cardvault.workers.main"]
        # Every queue an actor of ours is declared on (cardvault.workers.actors lists them).
        options = ["--processes", str(args.processes), "--threads", str(args.threads), "--queues"]
        options += actors.queues()
        # Dramatiq's main process waits up to this many ms for its worker processes to say they
        # are ready before it watches them (default 30 s): one killed while it boots would keep
        # the worker from exiting, and its supervisor from starting another, that long. The wait
        # only orders the start of fork processes, which we have none of.
        options += ["--worker-fork-timeout", "1000"]
        # An idle Dramatiq consumer backs off up to this many ms between polls of Redis, which
        # is how long a new operation can wait to be picked up (Dramatiq's default: 1000).
        env = {**os.environ, "dramatiq_worker_timeout": "25"}
        if settings.worker_metrics_port is not None and "PROMETHEUS_MULTIPROC_DIR" not in env:
            # This worker's processes write their metrics to a folder of its own on local disk
            # (never the shared data directory: another worker's processes may have the same
            # pids); the one that holds the metrics port answers with them all.
            env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="cardvault-worker-metrics-")
        os.execve(sys.executable, [*command, *options], env)  # noqa: S606 - replace this process, no shell
    if args.command == "doctor":
        from cardvault import doctor

        return doctor.run(settings, sys.stdout)
    db = open_database(settings.database_url)
    try:
        db.migrate()
        with db.transaction() as session:
            if args.command == "accounts" and args.action == "create":
                password_hash = _new_password_hash(settings) if args.email else None
                print(
                    accounts.create_account(
                        session, name=args.name, email=args.email, password_hash=password_hash
                    ).id
                )
            elif args.command == "accounts":
                account = accounts.find_account(session, name_or_id=args.name)
                accounts.set_password(session, account=account, password_hash=_new_password_hash(settings))
                print(f"The password of {account.name} is set; its browsers and apps were signed out.")
            elif args.command == "clients":
                client, secret = oauth.create_client(
                    session,
                    name=args.name,
                    redirect_uris=args.redirect_uri,
                    scopes=args.scope,
                    confidential=args.confidential,
                    now=now_ms(),
                )
                print(f"client_id: {client.id}")
                if secret:
                    print(f"client_secret: {secret}  (shown once: keep it now)")
            elif args.command == "keys":
                account = accounts.find_account(session, name_or_id=args.account)
                print(keys.issue_api_key(session, account_id=account.id))
            elif args.command == "import":
                account_id = accounts.find_account(session, name_or_id=args.account).id
        if args.command == "import":
            from cardvault.bootstrap import bootstrap
            from cardvault.handlers.cli import imports, restore
            from cardvault.workers import restores

            services = bootstrap(settings, database=db)
            store = services.blobs
            # A ZIP is our export unless its members tell another service's (Pocket, Omnivore):
            # restored here, a card at a time with its progress shown.
            zipped = args.archive.suffix.lower() == ".zip" or zipfile.is_zipfile(args.archive)
            told = args.format or detect(_head(args.archive))
            if told == RESTORED or (told is None and zipped):
                quotas = restores.quotas_of(settings)
                return restore.run(db, store, account_id=account_id, path=args.archive, quotas=quotas)
            return imports.run(
                services,
                account_id=account_id,
                path=args.archive,
                file_format=args.format,
                on_duplicate=args.on_duplicate,
            )
    except CardVaultError as exc:
        print(f"cardvault: {exc.message}", file=sys.stderr)
        return 1
    finally:
        db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
