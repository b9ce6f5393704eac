"""The rate limits' settings."""

from pathlib import Path

from cardvault.settings import Settings
from cardvault.settings.rate_limits import RATE_LIMIT_SETTINGS
from cardvault.spec import spec_document


def test_rate_limits_default_on_and_can_be_turned_off_one_by_one(tmp_path: Path) -> None:
    defaults = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)})
    assert defaults.rate_limits == {
        "done": "60/minute",
        "cards": "600/minute",
        "folders": "60/minute",
        "tag-operations": "30/minute",
        "uploads": "600/minute",
        "image-changes": "20/minute",
        "caption-changes": "20/minute",
        "refresh": "6/minute",
        "refresh-card": "1/minute",
        "export-starts": "10/day",
        "api-keys": "30/hour",
        "webhook-sends": "10/minute",
        "sign-in-account": "10/15 minutes",
        "share": "600/minute",
        "share-address": "300/minute",
        "sign-in-address": "50/15 minutes",
        "client-registrations": "20/hour",
        "sign-in-all": "600/minute",
    }
    chosen = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_RATE_LIMIT_CARDS": "off",
            "CARDVAULT_RATE_LIMIT_DONE": "5/30 seconds",
        }
    )
    assert chosen.rate_limits["cards"] is None and chosen.rate_limits["done"] == "5/30 seconds"


def test_each_policy_names_the_operations_the_spec_limits_by_it() -> None:
    limited: dict[str, set[str]] = {}
    for methods in spec_document()[1]["paths"].values():
        for operation in methods.values():
            for key in ("x-cardvault-rate-limit", "x-cardvault-rate-limit-per-card"):
                if isinstance(operation, dict) and key in operation:
                    limited.setdefault(operation[key], set()).add(operation["operationId"])
    assert set(limited) <= set(RATE_LIMIT_SETTINGS)
    for policy, operations in limited.items():
        described = RATE_LIMIT_SETTINGS[policy].description
        assert [op for op in sorted(operations) if f"`{op}`" not in described] == [], policy
