"""The types of settings: the spellings each accepts and what an unset or blank value is."""

from pathlib import Path

import pytest

from cardvault.settings import Settings, SettingsError


def _read(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), **env})


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        *[(v, True) for v in ("1", "true", "YES", "On")],
        ("0", False),
        ("no", False),
        ("OFF", False),
        ("", False),
    ],
)
def test_a_flag_reads_the_usual_spellings_and_empty_is_its_default(
    tmp_path: Path, raw: str, value: bool
) -> None:
    assert _read(tmp_path, CARDVAULT_VALIDATE_RESPONSES=raw).validate_responses is value


def test_numbers_are_positive_and_whole_ones_whole(tmp_path: Path) -> None:
    assert _read(tmp_path, CARDVAULT_LOCK_TIMEOUT_MS="1e3").lock_timeout_ms == 1000
    assert _read(tmp_path, CARDVAULT_TAG_BATCH_SIZE="2.5").tag_batch_size == 2  # its whole part
    with pytest.raises(SettingsError, match="CARDVAULT_STALE_SECONDS must be positive"):
        _read(tmp_path, CARDVAULT_STALE_SECONDS="0")


def test_spaces_alone_leave_a_port_or_a_list_at_its_default(tmp_path: Path) -> None:
    settings = _read(
        tmp_path,
        CARDVAULT_WORKER_METRICS_PORT="  ",
        CARDVAULT_FETCH_PORTS=" ",
        CARDVAULT_WEBHOOK_SCHEDULE=" ",
    )
    assert (settings.worker_metrics_port, settings.fetch_ports) == (None, (80, 443))
    assert (
        settings.webhook_schedule == Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)}).webhook_schedule
    )
    with pytest.raises(SettingsError, match="CARDVAULT_VALIDATE_RESPONSES must be true or false"):
        _read(tmp_path, CARDVAULT_VALIDATE_RESPONSES=" ")


def test_off_turns_a_cap_or_a_quota_off_in_any_case(tmp_path: Path) -> None:
    settings = _read(tmp_path, CARDVAULT_MAX_CARDS="OFF", CARDVAULT_QUOTA_STORED_BYTES="Off")
    assert (settings.max_cards, settings.quota_stored_bytes) == (None, None)


def test_a_trailing_slash_leaves_a_base_url(tmp_path: Path) -> None:
    assert (
        _read(tmp_path, CARDVAULT_PUBLIC_URL="https://app.example.com/").public_url
        == "https://app.example.com"
    )
    assert _read(tmp_path, CARDVAULT_AI_BASE_URL="/").ai_provider is None  # nothing left: no provider


def test_opentelemetrys_own_variable_names_the_endpoint_when_ours_is_unset(tmp_path: Path) -> None:
    settings = _read(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318")
    assert settings.otlp_endpoint == "http://collector:4318"
    with pytest.raises(SettingsError, match="CARDVAULT_OTLP_ENDPOINT"):
        _read(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318")
