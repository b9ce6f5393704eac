"""The AI provider that writes cards' summaries and tags in place of the offline engine."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cardvault.settings.declaring import SettingsError, field_setting, read, required, setting
from cardvault.settings.kinds import HTTP_BASE_URL, TEXT


@dataclasses.dataclass(frozen=True)
class AiProviderSettings:
    """An OpenAI-compatible chat completions provider that writes the AI summary and tags in
    place of the offline engine."""

    base_url: str = dataclasses.field(  # such as https://api.openai.com/v1 (``/chat/completions`` is added)
        metadata=required(
            "CARDVAULT_AI_BASE_URL",
            HTTP_BASE_URL,
            None,
            "an OpenAI-compatible API (`https://api.openai.com/v1`) whose chat completions write "
            "the AI summary and tags; it is sent a card's first 6,000 characters",
            shown="unset: the offline engine",
        )
    )
    model: str = dataclasses.field(
        metadata=required(
            "CARDVAULT_AI_MODEL", TEXT, None, "the provider's model (required with `CARDVAULT_AI_BASE_URL`)"
        )
    )
    api_key: str | None = setting(
        "CARDVAULT_AI_API_KEY", TEXT, None, "the provider's key, sent as a bearer token", secret=True
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AiProviderSettings | None:
        """The provider's settings, or None (the offline engine) while no base URL is set."""
        if not (field_setting(cls, "base_url").raw(env) or "").rstrip("/"):
            return None
        values, _ = read(cls, env)
        if values["model"] is None:
            raise SettingsError("CARDVAULT_AI_MODEL must name the model when CARDVAULT_AI_BASE_URL is set")
        return cls(**values)
