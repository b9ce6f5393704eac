"""The AI provider's settings."""

from pathlib import Path

from cardvault.settings import Settings


def test_the_ai_is_offline_unless_a_provider_is_named(tmp_path: Path) -> None:
    offline = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert (offline.ai, offline.ai_provider) == (True, None)
    provider = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_AI_BASE_URL": "https://api.example.com/v1/",
            "CARDVAULT_AI_MODEL": "small-1",
            "CARDVAULT_AI_API_KEY": "sk-secret",
        }
    )
    assert provider.ai_provider is not None
    assert (provider.ai_provider.base_url, provider.ai_provider.model) == (
        "https://api.example.com/v1",
        "small-1",
    )
    assert "sk-secret" not in repr(provider)
    assert Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_AI": "false"}).ai is False
