"""The service's settings, read from CARDVAULT_* environment variables once at start-up: the
only reader of them. Each variable is declared once, on the field it sets; docs/configuration.md's
table is generated from the declarations (``python -m cardvault.settings.document --write
docs/configuration.md``)."""

from cardvault.settings.ai import AiProviderSettings
from cardvault.settings.capture import CAPTURE_MAX_SECONDS, CAPTURE_OUTPUTS, CaptureSettings
from cardvault.settings.declaring import SettingsError
from cardvault.settings.local import is_loopback
from cardvault.settings.rate_limits import RATE_LIMITS
from cardvault.settings.service import WEBHOOK_SCHEDULE, Settings
from cardvault.settings.storage import S3Settings

__all__ = [
    "CAPTURE_MAX_SECONDS",
    "CAPTURE_OUTPUTS",
    "RATE_LIMITS",
    "WEBHOOK_SCHEDULE",
    "AiProviderSettings",
    "CaptureSettings",
    "S3Settings",
    "Settings",
    "SettingsError",
    "is_loopback",
]
