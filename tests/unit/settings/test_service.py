"""The settings object."""

from pathlib import Path

import pytest

from cardvault.settings import Settings, SettingsError, is_loopback


def test_defaults_to_the_embedded_sqlite_file_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert settings.database_url == f"sqlite:///{tmp_path / 'cardvault.db'}"
    assert settings.redis_url is None and settings.public_url == "http://127.0.0.1:8000"


def test_keeps_one_generated_secret_in_the_data_dir(tmp_path: Path) -> None:
    first = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    second = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert first.secret_key == second.secret_key and len(first.secret_key) >= 32
    assert first.secret_key not in repr(first)


def test_postgresql_urls_use_psycopg(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_DATABASE_URL": "postgresql://u@h/db"}
    )
    assert settings.database_url == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CARDVAULT_DATABASE_URL", "mysql://x"),
        ("CARDVAULT_REDIS_URL", "http://x"),
        ("CARDVAULT_PUBLIC_URL", "ftp://x"),
        ("CARDVAULT_SECRET_KEY", "short"),
        ("CARDVAULT_VALIDATE_RESPONSES", "maybe"),
        ("CARDVAULT_RATE_LIMIT_CARDS", "many"),
        ("CARDVAULT_RATE_LIMIT_DONE", "0/minute"),
        ("CARDVAULT_LOCK_TIMEOUT_MS", "-5"),
        ("CARDVAULT_LOCK_TIMEOUT_MS", "0.5"),
        ("CARDVAULT_RATE_LIMIT_FOLDERS", "10/second;100/minute"),
        ("CARDVAULT_S3_ENDPOINT_URL", "s3.example.com"),
        ("CARDVAULT_S3_ACCESS_KEY_ID", "only-the-id"),
        ("CARDVAULT_AI", "maybe"),
        ("CARDVAULT_AI_BASE_URL", "api.example.com/v1"),
        ("CARDVAULT_AI_BASE_URL", "https://api.example.com/v1"),  # without a model
        ("CARDVAULT_QUOTA_PENDING_BYTES", "10GiB"),
        ("CARDVAULT_QUOTA_STORED_BYTES", "0"),
        ("CARDVAULT_CAPTURE", "maybe"),
        ("CARDVAULT_CAPTURE_OUTPUTS", "archive,reader"),  # the screenshot is always kept
        ("CARDVAULT_CAPTURE_OUTPUTS", "screenshot,pdf"),
        ("CARDVAULT_CAPTURE_SECONDS", "0"),
        ("CARDVAULT_CAPTURE_SECONDS", "200"),  # past the stage's time limit
        ("CARDVAULT_CAPTURE_CONCURRENCY", "1.5"),
        ("CARDVAULT_CAPTURE_MEMORY_MB", "lots"),
        ("CARDVAULT_METRICS", "maybe"),
        ("CARDVAULT_METRICS_TOKEN", "short"),
        ("CARDVAULT_METRICS_TOKEN", "has a space in it somewhere"),
        ("CARDVAULT_METRICS_TOKEN", "tøken-with-non-ascii"),
        ("CARDVAULT_FULL_DISK_RETRY_SECONDS", "soon"),
        ("CARDVAULT_OTLP_ENDPOINT", "collector:4318"),
        ("CARDVAULT_TRACE_SAMPLE", "1.5"),
        ("CARDVAULT_TRACE_SAMPLE", "0"),
        ("CARDVAULT_WORKER_METRICS_PORT", "80,443"),
        ("CARDVAULT_WORKER_METRICS_PORT", "70000"),
    ],
)
def test_a_bad_variable_is_named(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_S3_BUCKET": "b", name: value})


def test_fetches_use_the_default_ports_and_never_loopback_unless_told(tmp_path: Path) -> None:
    defaults = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert (defaults.fetch_ports, defaults.fetch_allow_loopback) == ((80, 443), False)
    chosen = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_FETCH_PORTS": "443,8443",
            "CARDVAULT_TEST_FETCH_LOOPBACK": "true",
        }
    )
    assert (chosen.fetch_ports, chosen.fetch_allow_loopback) == ((443, 8443), True)
    for bad in ("80,http", "0", "70000", "80,,443"):
        with pytest.raises(SettingsError, match="CARDVAULT_FETCH_PORTS"):
            Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_FETCH_PORTS": bad})


def test_storage_quotas_default_on_and_can_be_turned_off(tmp_path: Path) -> None:
    default = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert (default.quota_pending_bytes, default.quota_stored_bytes) == (10 * 1024**3, 100 * 1024**3)
    chosen = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_QUOTA_PENDING_BYTES": "off",
            "CARDVAULT_QUOTA_STORED_BYTES": "5000",
        }
    )
    assert (chosen.quota_pending_bytes, chosen.quota_stored_bytes) == (None, 5000)


EVERY_INTERFACE = "0.0.0.0"  # noqa: S104 - the address under test, never bound here


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        *[("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("[::1]", True), ("localhost", True)],
        *[
            (EVERY_INTERFACE, False),
            ("::", False),
            ("", False),
            ("192.0.2.7", False),
            ("metrics.internal", False),
        ],
    ],
)
def test_only_loopback_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_workers_metrics_port_off_loopback_needs_the_metrics_token(tmp_path: Path) -> None:
    env = {"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_WORKER_METRICS_PORT": "9100"}
    with pytest.raises(SettingsError, match="CARDVAULT_METRICS_TOKEN"):
        Settings.from_env({**env, "CARDVAULT_WORKER_METRICS_HOST": EVERY_INTERFACE})
    token = "metrics-token-0123456789"
    off = Settings.from_env(
        {**env, "CARDVAULT_WORKER_METRICS_HOST": EVERY_INTERFACE, "CARDVAULT_METRICS_TOKEN": token}
    )
    assert (off.worker_metrics_host, off.worker_metrics_port, off.metrics_token) == (
        EVERY_INTERFACE,
        9100,
        token,
    )
    assert Settings.from_env(env).worker_metrics_host == "127.0.0.1"  # loopback: the token is optional
