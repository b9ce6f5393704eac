"""The one settings object: the only reader of environment variables."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import secrets
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import limits
import yaml

# openapi/cardvault.yaml, installed as package data (pyproject.toml maps cardvault.openapi onto
# openapi/): the live file in an editable install, the wheel's copy otherwise. Connexion reads it
# from a directory on disk, which an installed (unzipped) package always is.
SPEC_PATH = Path(str(resources.files("cardvault.openapi") / "cardvault.yaml"))


@functools.cache
def spec_document() -> tuple[str, dict[str, Any]]:
    """The spec's text and its parsed document, read once per process: every app built in it
    shares them (read only). libyaml parses it in a tenth of pure Python's second."""
    text = SPEC_PATH.read_text()
    return text, yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


QUOTA_PENDING_BYTES = 10 * 1024**3  # five of the largest files at once, and more
QUOTA_STORED_BYTES = 100 * 1024**3
MAX_CARDS = 2_000_000  # per account, Trash included
MAX_FOLDERS = 10_000  # per account
IMPORT_ENTRIES_PER_DAY = 100_000  # per account, over the imports started in the last 24 hours


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


def _otlp_endpoint(env: Mapping[str, str]) -> str | None:
    endpoint = env.get("CARDVAULT_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise SettingsError("CARDVAULT_OTLP_ENDPOINT must be an http:// or https:// URL (OTLP over HTTP)")
    return endpoint


def _share(env: Mapping[str, str], name: str, default: float) -> float:
    value = _number(env, name, default)
    if not 0.0 <= value <= 1.0:
        raise SettingsError(f"{name} must be between 0 and 1")
    return value


def _metrics_token(env: Mapping[str, str]) -> str | None:
    token = env.get("CARDVAULT_METRICS_TOKEN") or None
    if token is not None and (
        len(token) < 16 or not token.isascii() or not token.isprintable() or " " in token
    ):
        raise SettingsError(
            "CARDVAULT_METRICS_TOKEN must be at least 16 printable ASCII characters, no spaces"
        )
    return token


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name} must be true or false, not {raw!r}")


def _quota(env: Mapping[str, str], name: str, default: int) -> int | None:
    """A quota in bytes, or None for ``off``."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() == "off":
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise SettingsError(f"{name} must be a positive number of bytes or off, not {raw!r}")
    return int(raw)


def _cap(env: Mapping[str, str], name: str, default: int) -> int | None:
    """A positive count, or None for ``off``."""
    raw = env.get(name)
    if raw is not None and raw.lower() == "off":
        return None
    return _whole(env, name, default)


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive")
    return value


# The rate limits (policy -> "N/period"), each set by CARDVAULT_RATE_LIMIT_<POLICY> ("off" turns
# one off). Generous: they stop abuse, not people.
RATE_LIMITS = {
    "done": "60/minute",
    "cards": "600/minute",
    "folders": "60/minute",
    "tag-operations": "30/minute",
    "uploads": "600/minute",
    "image-changes": "20/minute",
    "caption-changes": "20/minute",
    "refresh": "6/minute",  # cards an account refreshes
    "refresh-card": "1/minute",  # refreshes of one card
    "export-starts": "10/day",  # beside the rule of one export that became ready a week
    "api-keys": "30/hour",  # keys created over the API
    "webhook-sends": "10/minute",  # pings and retries asked for
    # Sign-in attempts, counted per account (its email) and per client address (IPv6 by its
    # /64) before the password is checked; when either is used up the sign-in page refuses to
    # check any password for it until the window moves.
    "sign-in-account": "10/15 minutes",
    "sign-in-address": "50/15 minutes",
    "sign-in-all": "600/minute",  # every attempt of the service, from anywhere
}


def _rate_limits(env: Mapping[str, str]) -> dict[str, str | None]:
    chosen: dict[str, str | None] = {}
    for policy, default in RATE_LIMITS.items():
        name = "CARDVAULT_RATE_LIMIT_" + policy.upper().replace("-", "_")
        raw = (env.get(name) or default).strip()
        if raw.lower() == "off":
            chosen[policy] = None
            continue
        try:
            items = limits.parse_many(raw)
        except ValueError:
            items = []
        if len(items) != 1:
            raise SettingsError(f"{name} must read like 60/minute or off (one limit), not {raw!r}")
        if items[0].amount < 1:
            raise SettingsError(f"{name} must allow at least one request")
        chosen[policy] = raw
    return chosen


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    value = _number(env, name, default)
    if value != int(value):
        raise SettingsError(f"{name} must be a whole number")
    return int(value)


# Standard Webhooks' schedule: the first attempt at once, each next this long after a failure.
WEBHOOK_SCHEDULE = (0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 50400.0, 72000.0, 86400.0)


def _schedule(env: Mapping[str, str], name: str, default: tuple[float, ...]) -> tuple[float, ...]:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        waits = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise SettingsError(f"{name} must list seconds like 0,5,300, not {raw!r}") from None
    if not 1 <= len(waits) <= 20 or not all(0 <= wait <= 86400 for wait in waits):
        raise SettingsError(f"{name} must list 1 to 20 waits of 0 to 86400 seconds")
    return waits


def _port(env: Mapping[str, str], name: str) -> int | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise SettingsError(f"{name} must be a port from 1 to 65535, not {raw!r}")
    return int(raw)


def is_loopback(host: str) -> bool:
    """Whether an address to listen on is reached from this machine alone (any name but
    ``localhost`` may resolve to another interface, and ``0.0.0.0`` is every one)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _worker_metrics(env: Mapping[str, str], token: str | None) -> tuple[str, int | None]:
    """Where a worker answers its metrics; off loopback only behind the metrics token."""
    host = env.get("CARDVAULT_WORKER_METRICS_HOST") or "127.0.0.1"
    port = _port(env, "CARDVAULT_WORKER_METRICS_PORT")
    if port is not None and token is None and not is_loopback(host):
        raise SettingsError(
            f"CARDVAULT_WORKER_METRICS_HOST={host} is not a loopback address: a worker's metrics "
            "answered there need CARDVAULT_METRICS_TOKEN"
        )
    return host, port


def _ports(env: Mapping[str, str], name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        ports = tuple(int(part) for part in raw.split(","))
    except ValueError:
        raise SettingsError(f"{name} must list ports like 80,443, not {raw!r}") from None
    if not all(0 < port < 65536 for port in ports):
        raise SettingsError(f"{name} must list ports from 1 to 65535")
    return ports


@dataclasses.dataclass(frozen=True)
class S3Settings:
    """The S3-compatible object storage that keeps files in production."""

    bucket: str
    endpoint_url: str | None  # None: AWS S3 itself
    region: str
    access_key_id: str | None = dataclasses.field(repr=False, default=None)  # None: boto3's own chain
    secret_access_key: str | None = dataclasses.field(repr=False, default=None)
    path_style: bool = False  # bucket in the path (most S3-compatible servers), not the host name

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> S3Settings | None:
        bucket = env.get("CARDVAULT_S3_BUCKET") or None
        if bucket is None:
            return None
        endpoint_url = env.get("CARDVAULT_S3_ENDPOINT_URL") or None
        if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
            raise SettingsError("CARDVAULT_S3_ENDPOINT_URL must start with http:// or https://")
        access_key_id = env.get("CARDVAULT_S3_ACCESS_KEY_ID") or None
        secret_access_key = env.get("CARDVAULT_S3_SECRET_ACCESS_KEY") or None
        if (access_key_id is None) != (secret_access_key is None):
            raise SettingsError("CARDVAULT_S3_ACCESS_KEY_ID and CARDVAULT_S3_SECRET_ACCESS_KEY go together")
        return cls(
            bucket=bucket,
            endpoint_url=endpoint_url,
            region=env.get("CARDVAULT_S3_REGION") or "us-east-1",
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            path_style=_bool(env, "CARDVAULT_S3_PATH_STYLE", endpoint_url is not None),
        )


@dataclasses.dataclass(frozen=True)
class AiProviderSettings:
    """An OpenAI-compatible chat completions provider that writes the AI summary and tags in
    place of the offline engine."""

    base_url: str  # such as https://api.openai.com/v1 (``/chat/completions`` is added)
    model: str
    api_key: str | None = dataclasses.field(repr=False, default=None)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AiProviderSettings | None:
        base_url = (env.get("CARDVAULT_AI_BASE_URL") or "").rstrip("/") or None
        if base_url is None:
            return None
        if not base_url.startswith(("http://", "https://")):
            raise SettingsError("CARDVAULT_AI_BASE_URL must start with http:// or https://")
        model = env.get("CARDVAULT_AI_MODEL") or None
        if model is None:
            raise SettingsError("CARDVAULT_AI_MODEL must name the model when CARDVAULT_AI_BASE_URL is set")
        return cls(base_url=base_url, model=model, api_key=env.get("CARDVAULT_AI_API_KEY") or None)


CAPTURE_OUTPUTS = ("screenshot", "archive", "reader")
CAPTURE_MAX_SECONDS = 180.0  # inside the stage's own time limit (cardvault.domain.pipeline)


def _capture_seconds(env: Mapping[str, str]) -> float:
    seconds = _number(env, "CARDVAULT_CAPTURE_SECONDS", 30.0)
    if seconds > CAPTURE_MAX_SECONDS:
        raise SettingsError(f"CARDVAULT_CAPTURE_SECONDS must be at most {CAPTURE_MAX_SECONDS:g}")
    return seconds


@dataclasses.dataclass(frozen=True)
class CaptureSettings:
    """Link capture in headless Chromium (the ``capture`` stage; README, "Link capture")."""

    enabled: bool = True  # off: the capture stage is skipped, CAPTURE_OFF
    browser: str | None = None  # Chromium's program; None: found on PATH (none: NO_BROWSER)
    outputs: tuple[str, ...] = CAPTURE_OUTPUTS
    seconds: float = 30.0
    max_height: int = 20_000
    archive_bytes: int = 25 * 1024 * 1024
    memory_mb: int = 1024
    concurrency: int = 1  # per worker process
    sandbox: bool = True  # Chromium's sandbox (always off as root, with a warning)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CaptureSettings:
        raw_outputs = env.get("CARDVAULT_CAPTURE_OUTPUTS")
        outputs = CAPTURE_OUTPUTS if not raw_outputs else tuple(p.strip() for p in raw_outputs.split(","))
        if (
            not outputs
            or any(output not in CAPTURE_OUTPUTS for output in outputs)
            or "screenshot" not in outputs
        ):
            raise SettingsError(
                "CARDVAULT_CAPTURE_OUTPUTS must list screenshot and any of archive, reader, like "
                f"screenshot,archive,reader, not {raw_outputs!r}"
            )
        return cls(
            enabled=_bool(env, "CARDVAULT_CAPTURE", True),
            browser=env.get("CARDVAULT_CAPTURE_BROWSER") or None,
            outputs=outputs,
            seconds=_capture_seconds(env),
            max_height=_whole(env, "CARDVAULT_CAPTURE_MAX_HEIGHT", 20_000),
            archive_bytes=_whole(env, "CARDVAULT_CAPTURE_ARCHIVE_BYTES", 25 * 1024 * 1024),
            memory_mb=_whole(env, "CARDVAULT_CAPTURE_MEMORY_MB", 1024),
            concurrency=_whole(env, "CARDVAULT_CAPTURE_CONCURRENCY", 1),
            sandbox=_bool(env, "CARDVAULT_CAPTURE_SANDBOX", True),
        )


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything configurable, read once at start-up."""

    data_dir: Path
    database_url: str
    redis_url: str | None
    public_url: str
    secret_key: str = dataclasses.field(repr=False)
    validate_responses: bool = False
    swagger_ui: bool = True
    stale_seconds: float = 60.0
    sweep_seconds: float = 15.0
    full_disk_retry_seconds: float = 30.0  # a stage that found the disk full is sent again this late
    tag_batch_size: int = 2000
    trash_days: float = 30.0
    changes_days: float = 30.0  # how long the changes feed keeps a change (at least)
    lock_timeout_ms: int = 2000
    rate_limits: dict[str, str | None] = dataclasses.field(default_factory=lambda: dict(RATE_LIMITS))
    s3: S3Settings | None = None
    fetch_links: bool = True  # read link pages (off: the link stages are skipped, FETCHING_OFF)
    fetch_ports: tuple[int, ...] = (80, 443)  # the ports link fetches may use
    fetch_seconds: float = 15.0  # a link fetch's whole exchange, every redirect included
    # Test-only: lets the fetcher reach loopback addresses, where the tests serve their pages.
    fetch_allow_loopback: bool = False
    webhook_schedule: tuple[float, ...] = WEBHOOK_SCHEDULE  # seconds before each attempt
    webhook_timeout_seconds: float = 15.0  # how long an endpoint has to answer, all told
    webhook_account_sends: int = 1  # an account's endpoints sent to at once (worker threads held)
    ai: bool = True  # write AI summaries and tags (off: the ai stage is skipped, AI_OFF)
    ai_provider: AiProviderSettings | None = None  # None: the offline engine
    # Transcribe speech where the asr extra is installed (off, or without it: a file with no
    # subtitles or caption file has its transcript stage skipped, NO_TRANSCRIBER).
    speech: bool = True
    capture: CaptureSettings = CaptureSettings()
    # Argon2id's cost for passwords: OWASP's choice for a small machine (about 50 ms and 19 MiB
    # a hash on two cores); argon2-cffi's default (t=3, 64 MiB, p=4) took 265 ms there.
    password_time_cost: int = 2
    password_memory_kib: int = 19_456
    password_parallelism: int = 1
    # Per account, in bytes (None: no quota): what its uploads no card has taken yet declare
    # together, and that plus the files its cards hold (in Trash too).
    quota_pending_bytes: int | None = QUOTA_PENDING_BYTES
    quota_stored_bytes: int | None = QUOTA_STORED_BYTES
    # Per account: the cards and folders it may hold (None: no cap), whether saved by hand or
    # imported, the entries its imports may take in a day, and how long an ended import's
    # report is kept.
    max_cards: int | None = MAX_CARDS
    max_folders: int | None = MAX_FOLDERS
    import_entries_per_day: int = IMPORT_ENTRIES_PER_DAY
    import_days: float = 30.0
    # GET /metrics (Prometheus): open in the embedded default, behind this bearer token when it
    # is set, and not served in production (Redis configured) without one.
    metrics: bool = True
    metrics_token: str | None = dataclasses.field(repr=False, default=None)
    # A `cardvault worker`'s metrics, answered on a port of their own (None: not answered),
    # behind the metrics token when it is set (and it must be, off loopback).
    worker_metrics_host: str = "127.0.0.1"
    worker_metrics_port: int | None = None
    # Traces (OpenTelemetry over OTLP/HTTP): off without an endpoint; the share of traces begun
    # here that are kept.
    otlp_endpoint: str | None = None
    trace_sample: float = 1.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build the settings from CARDVAULT_* variables, failing on a bad one."""
        env = os.environ if env is None else env
        data_dir = Path(env.get("CARDVAULT_DATA_DIR") or "./var").resolve()
        database_url = env.get("CARDVAULT_DATABASE_URL") or f"sqlite:///{data_dir / 'cardvault.db'}"
        if not database_url.startswith(("sqlite:", "postgresql:", "postgresql+psycopg:")):
            raise SettingsError("CARDVAULT_DATABASE_URL must be a sqlite:/// or postgresql+psycopg:// URL")
        if database_url.startswith("postgresql:"):
            database_url = "postgresql+psycopg:" + database_url.removeprefix("postgresql:")
        redis_url = env.get("CARDVAULT_REDIS_URL") or None
        if redis_url is not None and not redis_url.startswith(("redis://", "rediss://")):
            raise SettingsError("CARDVAULT_REDIS_URL must be a redis:// or rediss:// URL")
        public_url = (env.get("CARDVAULT_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/")
        if not public_url.startswith(("http://", "https://")):
            raise SettingsError("CARDVAULT_PUBLIC_URL must start with http:// or https://")
        secret_key = env.get("CARDVAULT_SECRET_KEY") or _data_dir_secret(data_dir)
        if len(secret_key) < 32:
            raise SettingsError("CARDVAULT_SECRET_KEY must be at least 32 characters")
        metrics_token = _metrics_token(env)
        worker_metrics_host, worker_metrics_port = _worker_metrics(env, metrics_token)
        return cls(
            data_dir=data_dir,
            database_url=database_url,
            redis_url=redis_url,
            public_url=public_url,
            secret_key=secret_key,
            validate_responses=_bool(env, "CARDVAULT_VALIDATE_RESPONSES", False),
            swagger_ui=_bool(env, "CARDVAULT_SWAGGER_UI", True),
            stale_seconds=_number(env, "CARDVAULT_STALE_SECONDS", 60.0),
            sweep_seconds=_number(env, "CARDVAULT_SWEEP_SECONDS", 15.0),
            full_disk_retry_seconds=_number(env, "CARDVAULT_FULL_DISK_RETRY_SECONDS", 30.0),
            tag_batch_size=int(_number(env, "CARDVAULT_TAG_BATCH_SIZE", 2000)),
            trash_days=_number(env, "CARDVAULT_TRASH_DAYS", 30.0),
            changes_days=_number(env, "CARDVAULT_CHANGES_DAYS", 30.0),
            lock_timeout_ms=_whole(env, "CARDVAULT_LOCK_TIMEOUT_MS", 2000),
            rate_limits=_rate_limits(env),
            s3=S3Settings.from_env(env),
            fetch_links=_bool(env, "CARDVAULT_FETCH_LINKS", True),
            fetch_ports=_ports(env, "CARDVAULT_FETCH_PORTS", (80, 443)),
            fetch_seconds=_number(env, "CARDVAULT_FETCH_SECONDS", 15.0),
            fetch_allow_loopback=_bool(env, "CARDVAULT_TEST_FETCH_LOOPBACK", False),
            webhook_schedule=_schedule(env, "CARDVAULT_WEBHOOK_SCHEDULE", WEBHOOK_SCHEDULE),
            webhook_timeout_seconds=_number(env, "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS", 15.0),
            webhook_account_sends=_whole(env, "CARDVAULT_WEBHOOK_ACCOUNT_SENDS", 1),
            ai=_bool(env, "CARDVAULT_AI", True),
            metrics=_bool(env, "CARDVAULT_METRICS", True),
            metrics_token=metrics_token,
            worker_metrics_host=worker_metrics_host,
            worker_metrics_port=worker_metrics_port,
            otlp_endpoint=_otlp_endpoint(env),
            trace_sample=_share(env, "CARDVAULT_TRACE_SAMPLE", 1.0),
            ai_provider=AiProviderSettings.from_env(env),
            speech=_bool(env, "CARDVAULT_SPEECH", True),
            capture=CaptureSettings.from_env(env),
            password_time_cost=_whole(env, "CARDVAULT_PASSWORD_TIME_COST", 2),
            password_memory_kib=_whole(env, "CARDVAULT_PASSWORD_MEMORY_KIB", 19_456),
            password_parallelism=_whole(env, "CARDVAULT_PASSWORD_PARALLELISM", 1),
            quota_pending_bytes=_quota(env, "CARDVAULT_QUOTA_PENDING_BYTES", QUOTA_PENDING_BYTES),
            quota_stored_bytes=_quota(env, "CARDVAULT_QUOTA_STORED_BYTES", QUOTA_STORED_BYTES),
            max_cards=_cap(env, "CARDVAULT_MAX_CARDS", MAX_CARDS),
            max_folders=_cap(env, "CARDVAULT_MAX_FOLDERS", MAX_FOLDERS),
            import_entries_per_day=_whole(env, "CARDVAULT_IMPORT_ENTRIES_PER_DAY", IMPORT_ENTRIES_PER_DAY),
            import_days=_number(env, "CARDVAULT_IMPORT_DAYS", 30.0),
        )

    @staticmethod
    def redis_url_from_env(env: Mapping[str, str] | None = None) -> str | None:
        """The broker URL alone: the broker is built when the workers package is imported."""
        env = os.environ if env is None else env
        return env.get("CARDVAULT_REDIS_URL") or None


def _data_dir_secret(data_dir: Path) -> str:
    """Read the signing key kept in the data directory, creating it atomically on first use."""
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = data_dir / f".secret_key.{secrets.token_hex(8)}"
        tmp.write_text(secrets.token_urlsafe(48))
        tmp.chmod(0o600)
        try:
            os.link(tmp, path)  # atomic: of several starting processes exactly one key wins
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()
