"""``cardvault doctor``: for a person setting the service up, the settings in force (each
secret only said to be set) and the readiness checks (cardvault.health) with their causes;
exit status 1 when a component does not answer."""

from __future__ import annotations

import dataclasses
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from cardvault import health, logs
from cardvault.bootstrap import bootstrap
from cardvault.settings import Settings

HIDDEN = "(set, hidden)"


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:{HIDDEN}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _shown(field: dataclasses.Field[Any], value: Any) -> str:
    if not field.repr:  # secrets are declared with repr=False
        return "(unset)" if value is None else HIDDEN
    if isinstance(value, str) and "://" in value:
        return logs.redact(_without_password(value))  # and a password in its query
    return str(value)


def settings_in_force(settings: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every setting as (name, what is shown), nested groups by dotted names."""
    shown = []
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            shown += settings_in_force(value, f"{prefix}{field.name}.")
        else:
            shown.append((f"{prefix}{field.name}", _shown(field, value)))
    return shown


def run(settings: Settings, out: TextIO) -> int:
    width = max(len(name) for name, _ in settings_in_force(settings))
    print("Settings in force:", file=out)
    for name, value in settings_in_force(settings):
        print(f"  {name:<{width}}  {value}", file=out)
    services = bootstrap(settings)
    try:
        found = health.checks(
            services.database,
            services.limiter,
            services.blobs,
            redis=settings.redis_url is not None,
        )
    finally:
        services.database.dispose()
    print("Checks:", file=out)
    for check in found:
        said = "ok    " if check.ok else "FAILED"
        print(
            f"  {said} {check.name:<8} {check.latency_ms:>8.1f} ms"
            + (f"  {check.error}" if check.error else ""),
            file=out,
        )
    return 0 if all(check.ok for check in found) else 1
