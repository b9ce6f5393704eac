"""``cardvault doctor``: the settings in force with every secret hidden, and the checks of the
database, Redis and file store with each one's cause; status 1 when one does not answer."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cardvault import doctor
from cardvault.settings import Settings
from harness.servers import free_port

SECRETS = {
    "CARDVAULT_SECRET_KEY": "k" * 40,
    "CARDVAULT_METRICS_TOKEN": "metrics-token-0123456789",
    "CARDVAULT_AI_API_KEY": "ai-key-0123456789",
}


def _doctor(tmp_path: Path, **env: str) -> tuple[int, str]:
    settings = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_AI_BASE_URL": "https://ai.example.com/v1",
            "CARDVAULT_AI_MODEL": "small",
            **SECRETS,
            **env,
        }
    )
    out = io.StringIO()
    return doctor.run(settings, out), out.getvalue()


def test_the_settings_are_shown_with_their_secrets_hidden_and_every_check_passes(tmp_path: Path) -> None:
    status, printed = _doctor(tmp_path)
    assert status == 0, printed
    for secret in SECRETS.values():
        assert secret not in printed
    assert f"secret_key               {doctor.HIDDEN}" in printed
    assert "ai_provider.api_key" in printed and "ai_provider.model" in printed
    assert f"data_dir                 {tmp_path}" in printed
    assert [line.split()[:2] for line in printed.splitlines() if line.startswith("  ok")] == [
        ["ok", "database"],
        ["ok", "storage"],
    ]


@pytest.mark.parametrize("password", ["", "redis-password-123"])
def test_a_redis_that_does_not_answer_fails_with_its_cause(tmp_path: Path, password: str) -> None:
    url = (
        f"redis://:{password}@127.0.0.1:{free_port()}/0" if password else f"redis://127.0.0.1:{free_port()}/0"
    )
    status, printed = _doctor(tmp_path, CARDVAULT_REDIS_URL=url)
    assert status == 1
    (failed,) = [line for line in printed.splitlines() if "FAILED" in line]
    assert failed.split()[:2] == ["FAILED", "redis"] and "Error" in failed  # its cause, said
    if password:
        assert password not in printed and f"redis://:{doctor.HIDDEN}@127.0.0.1" in printed
