"""The one settings object: the only reader of environment variables. Each variable is declared
once, on the field it sets (cardvault.settings.declaring); docs/configuration.md's table is
written from these declarations (cardvault.settings.document)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from cardvault.settings.ai import AiProviderSettings
from cardvault.settings.capture import CaptureSettings
from cardvault.settings.declaring import SettingsError, field_setting, group, read, required, setting, table
from cardvault.settings.kinds import (
    BYTES_OR_OFF,
    FLAG,
    HTTP_BASE_URL,
    NUMBER,
    PATH,
    PORT,
    PORTS,
    SECRET,
    SHARE,
    TEXT,
    TOKEN,
    WAITS,
    WHOLE,
    WHOLE_OR_OFF,
    WHOLE_PART,
    url,
)
from cardvault.settings.local import data_dir_secret, is_loopback
from cardvault.settings.ocr import OcrSettings
from cardvault.settings.rate_limits import RATE_LIMIT_SETTINGS
from cardvault.settings.storage import S3Settings

# Standard Webhooks' schedule: the first attempt at once, each next this long after a failure.
WEBHOOK_SCHEDULE = (0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 50400.0, 72000.0, 86400.0)


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything configurable, read once at start-up."""

    data_dir: Path = dataclasses.field(
        metadata=required(
            "CARDVAULT_DATA_DIR",
            PATH,
            "./var",
            "local data: the SQLite file, the generated signing key, uploaded files (`blobs/`) unless "
            "S3 is set",
        )
    )
    database_url: str = dataclasses.field(
        metadata=required(
            "CARDVAULT_DATABASE_URL",
            url(
                ("sqlite:", "postgresql:", "postgresql+psycopg:"),
                "must be a sqlite:/// or postgresql+psycopg:// URL",
            ),
            None,
            "`sqlite:///PATH` or `postgresql+psycopg://USER@HOST/DB` (`postgresql://` is read as the latter)",
            shown="SQLite file in the data dir",
        )
    )
    redis_url: str | None = dataclasses.field(
        metadata=required(
            "CARDVAULT_REDIS_URL",
            url(("redis://", "rediss://"), "must be a redis:// or rediss:// URL"),
            None,
            "Redis: the broker of separate worker processes and the rate limits every API process "
            "shares; unset: workers run inside `serve` and rate limits are counted in its memory",
        )
    )
    public_url: str = dataclasses.field(
        metadata=required(
            "CARDVAULT_PUBLIC_URL",
            HTTP_BASE_URL,
            "http://127.0.0.1:8000",
            "the origin browsers see: base of each card's `appUrl`, the OAuth issuer and endpoints, "
            "the origin a form must come from; set it when a proxy or another name fronts the "
            "service (https outside loopback)",
            shown="the address `cardvault serve` listens on (`http://127.0.0.1:8000` under another server)",
        )
    )
    secret_key: str = dataclasses.field(
        repr=False,
        metadata=required(
            "CARDVAULT_SECRET_KEY",
            SECRET,
            None,
            "signs page cursors and the pages' CSRF tokens; set the same value on every API host",
            shown="generated into the data dir",
        ),
    )
    validate_responses: bool = setting(
        "CARDVAULT_VALIDATE_RESPONSES", FLAG, False, "check every response against the spec (on in tests)"
    )
    swagger_ui: bool = setting("CARDVAULT_SWAGGER_UI", FLAG, True, "serve Swagger UI at `/v1/ui/`")
    lock_timeout_ms: int = setting(
        "CARDVAULT_LOCK_TIMEOUT_MS",
        WHOLE,
        2000,
        "how long a statement waits for a lock (SQLite: the write lock) before the transaction is "
        "retried; after 3 attempts the answer is 503 `SERVICE_BUSY`",
        unit="ms",
    )
    stale_seconds: float = setting(
        "CARDVAULT_STALE_SECONDS",
        NUMBER,
        60.0,
        "an operation, export or processing stage with no sign of life for this long is sent again "
        "(its message was lost, or its worker died); keep it well above `CARDVAULT_SWEEP_SECONDS`",
        unit="seconds",
    )
    sweep_seconds: float = setting(
        "CARDVAULT_SWEEP_SECONDS",
        NUMBER,
        15.0,
        "how often each worker looks for stale operations",
        unit="seconds",
    )
    full_disk_retry_seconds: float = setting(  # a stage that found the disk full is sent again this late
        "CARDVAULT_FULL_DISK_RETRY_SECONDS",
        NUMBER,
        30.0,
        "a processing stage that found the data disk full is sent again this late (its attempt not "
        "counted, for up to a day from the card's creation)",
        unit="seconds",
    )
    tag_batch_size: int = setting(
        "CARDVAULT_TAG_BATCH_SIZE",
        WHOLE_PART,
        2000,
        "cards per committed batch of a tag operation",
        unit="cards",
    )
    trash_days: float = setting(
        "CARDVAULT_TRASH_DAYS",
        NUMBER,
        30.0,
        "how long cards stay in Trash before the purge deletes them for good",
        unit="days",
    )
    changes_days: float = setting(  # how long the changes feed keeps a change (at least)
        "CARDVAULT_CHANGES_DAYS",
        NUMBER,
        30.0,
        "how long a change is kept for the changes feed (`listChanges`; older ones are purged every "
        "ten minutes, and a cursor before them answers 410 `CURSOR_EXPIRED`)",
        unit="days",
    )
    rate_limits: dict[str, str | None] = table("Rate limits", RATE_LIMIT_SETTINGS)
    s3: S3Settings | None = group(S3Settings, None, "File storage on S3", S3Settings.from_env)
    fetch_links: bool = setting(  # off: the link stages are skipped, FETCHING_OFF
        "CARDVAULT_FETCH_LINKS",
        FLAG,
        True,
        "fetch link pages and their images (the link stages); `false`: no outbound request is made, "
        "and the link stages are skipped (`FETCHING_OFF`)",
    )
    fetch_ports: tuple[int, ...] = setting(
        "CARDVAULT_FETCH_PORTS",
        PORTS,
        (80, 443),
        "the ports link pages and their images may be fetched from, and webhooks sent to",
    )
    fetch_seconds: float = setting(
        "CARDVAULT_FETCH_SECONDS",
        NUMBER,
        15.0,
        "a link fetch's whole exchange (every redirect, lookup, connection, head and body)",
        unit="seconds",
    )
    fetch_allow_loopback: bool = setting(  # test-only: the tests serve their pages on loopback
        "CARDVAULT_TEST_FETCH_LOOPBACK",
        FLAG,
        False,
        "tests only: let the fetcher reach loopback addresses, where the tests serve their pages; "
        "never set it on a server",
    )
    webhook_schedule: tuple[float, ...] = setting(
        "CARDVAULT_WEBHOOK_SCHEDULE",
        WAITS,
        WEBHOOK_SCHEDULE,
        "the wait before each attempt of a webhook delivery (the first at once, each next after a "
        "failure, ±10%); after the last the endpoint is disabled",
        unit="seconds",
    )
    webhook_timeout_seconds: float = setting(
        "CARDVAULT_WEBHOOK_TIMEOUT_SECONDS",
        NUMBER,
        15.0,
        "how long a webhook post may take in all (connecting, head and body); an attempt's lease is "
        "the longer of `CARDVAULT_STALE_SECONDS` and twice this plus 5 s, so it never expires under "
        "the attempt",
        unit="seconds",
    )
    webhook_account_sends: int = setting(
        "CARDVAULT_WEBHOOK_ACCOUNT_SENDS",
        WHOLE,
        1,
        "an account's webhook endpoints sent to at once: the worker threads one account's slow "
        "endpoints can hold",
        unit="endpoints",
    )
    ai: bool = setting(  # off: the ai stage is skipped, AI_OFF
        "CARDVAULT_AI",
        FLAG,
        True,
        "write AI summaries and tags (the `ai` stage); `false`: the stage is skipped (`AI_OFF`)",
    )
    ai_provider: AiProviderSettings | None = group(  # None: the offline engine
        AiProviderSettings, None, "AI provider", AiProviderSettings.from_env
    )
    speech: bool = setting(
        "CARDVAULT_SPEECH",
        FLAG,
        True,
        "transcribe speech where the `asr` extra is installed; `false`, or without it: a file with "
        "no subtitles or caption file has its `transcript` stage skipped (`NO_TRANSCRIBER`)",
    )
    capture: CaptureSettings = group(
        CaptureSettings, CaptureSettings(), "Link capture", CaptureSettings.from_env
    )
    ocr: OcrSettings = group(OcrSettings, OcrSettings(), "Text in pictures (OCR)", OcrSettings.from_env)
    # Argon2id's cost for passwords: OWASP's choice for a small machine (about 50 ms and 19 MiB
    # a hash on two cores); argon2-cffi's default (t=3, 64 MiB, p=4) took 265 ms there.
    password_time_cost: int = setting(
        "CARDVAULT_PASSWORD_TIME_COST",
        WHOLE,
        2,
        "Argon2id's passes over its memory for a password hash (OWASP's choice with the two below: "
        "about 50 ms and 19 MiB a hash on two cores); a hash made with other costs is redone at the "
        "next sign-in",
        unit="passes",
    )
    password_memory_kib: int = setting(
        "CARDVAULT_PASSWORD_MEMORY_KIB", WHOLE, 19_456, "Argon2id's memory for a password hash", unit="KiB"
    )
    password_parallelism: int = setting(
        "CARDVAULT_PASSWORD_PARALLELISM", WHOLE, 1, "Argon2id's lanes for a password hash", unit="lanes"
    )
    # Per account, in bytes (None: no quota): what its uploads no card has taken yet declare
    # together, and that plus the files its cards hold (in Trash too).
    quota_pending_bytes: int | None = setting(
        "CARDVAULT_QUOTA_PENDING_BYTES",
        BYTES_OR_OFF,
        10 * 1024**3,  # five of the largest files at once, and more
        "per account: the `fileSize` of its uploads no card has taken yet, together (`off` turns it "
        "off); past it an upload answers 409 `QUOTA_EXCEEDED`",
        unit="bytes",
    )
    quota_stored_bytes: int | None = setting(
        "CARDVAULT_QUOTA_STORED_BYTES",
        BYTES_OR_OFF,
        100 * 1024**3,
        "per account: that plus every byte its cards keep, Trash included: files, caption files, "
        "images and renditions, captures; restores of our own export count too (`off` turns it off)",
        unit="bytes",
    )
    # Per account: the cards and folders it may hold (None: no cap), whether saved by hand or
    # imported, the entries its imports may take in a day, and how long an ended import's
    # report is kept.
    max_cards: int | None = setting(
        "CARDVAULT_MAX_CARDS",
        WHOLE_OR_OFF,
        2_000_000,
        "per account: the cards it may hold, Trash included, saved by hand or imported; past it "
        "`createCard` answers 409 `CARD_LIMIT_REACHED` and an import stops (`off` turns it off)",
        unit="cards",
    )
    max_folders: int | None = setting(
        "CARDVAULT_MAX_FOLDERS",
        WHOLE_OR_OFF,
        10_000,
        "per account: the folders it may hold; past it `createFolder` answers 409 "
        "`FOLDER_LIMIT_REACHED` and an import makes no new folder (`off` turns it off)",
        unit="folders",
    )
    import_entries_per_day: int = setting(
        "CARDVAULT_IMPORT_ENTRIES_PER_DAY",
        WHOLE,
        100_000,
        "per account: the entries its imports started in the last 24 hours may read together; an "
        "import past it stops there",
        unit="entries",
    )
    import_days: float = setting(
        "CARDVAULT_IMPORT_DAYS",
        NUMBER,
        30.0,
        "how long an ended import (its report and failures) is kept before the purge deletes it",
        unit="days",
    )
    # GET /metrics (Prometheus): open in the embedded default, behind this bearer token when it
    # is set, and not served in production (Redis configured) without one.
    metrics: bool = setting(
        "CARDVAULT_METRICS",
        FLAG,
        True,
        "serve `GET /metrics` (Prometheus's text format); `false`: no such path",
    )
    metrics_token: str | None = setting(
        "CARDVAULT_METRICS_TOKEN",
        TOKEN,
        None,
        "the bearer token `GET /metrics` asks for, on the API and a worker's port; production serves "
        "metrics only with one, and the embedded default off loopback (`serve --host 0.0.0.0`) or a "
        "worker's port off loopback does not start without one",
        secret=True,
    )
    # A `cardvault worker`'s metrics, answered on a port of their own (None: not answered),
    # behind the metrics token when it is set (and it must be, off loopback).
    worker_metrics_host: str = setting(
        "CARDVAULT_WORKER_METRICS_HOST",
        TEXT,
        "127.0.0.1",
        "the address that port is bound on (not a loopback one: only with `CARDVAULT_METRICS_TOKEN`)",
    )
    worker_metrics_port: int | None = setting(
        "CARDVAULT_WORKER_METRICS_PORT",
        PORT,
        None,
        "a `cardvault worker` answers `GET /metrics` on this port",
    )
    # Traces (OpenTelemetry over OTLP/HTTP): off without an endpoint; the share of traces begun
    # here that are kept.
    otlp_endpoint: str | None = setting(
        "CARDVAULT_OTLP_ENDPOINT",
        url(("http://", "https://"), "must be an http:// or https:// URL (OTLP over HTTP)"),
        None,
        "traces (OpenTelemetry) are sent there over OTLP/HTTP (`/v1/traces` is added); unset, and "
        "without `OTEL_EXPORTER_OTLP_ENDPOINT` (read in its place), nothing is traced",
        also="OTEL_EXPORTER_OTLP_ENDPOINT",
    )
    trace_sample: float = setting(
        "CARDVAULT_TRACE_SAMPLE",
        SHARE,
        1.0,
        "the share of traces begun in this service that are kept (a caller's trace keeps its own choice)",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build the settings from CARDVAULT_* variables, failing on a bad one."""
        env = os.environ if env is None else env
        values, _ = read(cls, env)
        data_dir = values["data_dir"] = Path(values["data_dir"]).resolve()
        database_url = values["database_url"] or f"sqlite:///{data_dir / 'cardvault.db'}"
        if database_url.startswith("postgresql:"):
            database_url = "postgresql+psycopg:" + database_url.removeprefix("postgresql:")
        values["database_url"] = database_url
        if values["secret_key"] is None:  # the generated key is held to the same rule
            key = field_setting(cls, "secret_key")
            values["secret_key"] = key.kind.parse(key.name, data_dir_secret(data_dir))
        host, port = values["worker_metrics_host"], values["worker_metrics_port"]
        if port is not None and values["metrics_token"] is None and not is_loopback(host):
            raise SettingsError(
                f"CARDVAULT_WORKER_METRICS_HOST={host} is not a loopback address: a worker's metrics "
                "answered there need CARDVAULT_METRICS_TOKEN"
            )
        return cls(**values)

    @classmethod
    def redis_url_from_env(cls, env: Mapping[str, str] | None = None) -> str | None:
        """The broker URL alone: the broker is built when the workers package is imported."""
        return field_setting(cls, "redis_url").raw(os.environ if env is None else env)
