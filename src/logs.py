"""How every process logs: one JSON object per line when standard error is not a terminal (a
log collector reads it), a plain line when it is (a person does); each with what the line is
about (``requestId``, ``operation``, ``accountId``, ``durationMs``, ``status``; a worker's
``actor``, ``messageId``, ``attempt`` and ``subject``: the card or job it works on), and never
a secret.

Redaction is the handler's last step, over the whole line: API keys, access and refresh tokens,
session cookies, sign-in links and share links (``cv?_`` and their checksum; and whatever
follows ``/s/``), webhook secrets (``whsec_``),
``Authorization`` values, cookies, passwords in URLs and the signatures of signed URLs are each
replaced by ``[redacted]``, whichever logger wrote them (ours, uvicorn's, Dramatiq's, a
library's traceback).
"""

from __future__ import annotations

import atexit
import contextvars
import copy
import datetime
import json
import logging
import logging.handlers
import queue
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

REDACTED = "[redacted]"
_SECRETS = re.compile(
    r"cv[a-z]_[0-9A-Za-z]{36}"  # our credentials (cardvault.domain.auth.credentials)
    r"|whsec_[A-Za-z0-9+/=]{16,}"  # webhook signing secrets
    r"|(?i:(?<=bearer )|(?<=basic ))[^\s\"',;]+"  # an Authorization header's value
    r"|(?i:(?<=authorization: )|(?<=authorization=)|(?<=cookie: )|(?<=set-cookie: ))[^\r\n\"']+"
    r"|(?<=://)[^/\s:@\"']*:[^/\s@\"']+(?=@)"  # user:password in a URL
    r"|(?i:(?<=[?&]token=)|(?<=[?&]signature=)|(?<=[?&]x-amz-signature=)|(?<=[?&]x-amz-credential=)"
    r"|(?<=[?&]x-amz-security-token=)|(?<=[?&]code=)|(?<=[?&]password=))[^&\s\"']+"
    r"|(?<=/files/upload/)[^/\s\"'?]+|(?<=/files/)[A-Za-z0-9_.-]{40,}"  # the local store's signed paths
    r"|(?<=/s/)[^/\s\"'?]+"  # a share link's token (cardvault.handlers.web.share_page), whatever its shape
)

# What the line is about, set for the duration of a request or a message (see ``bound``).
_about: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "cardvault_log_about", default=None
)
_FIELDS = ("requestId", "method", "path", "operation", "status", "durationMs", "accountId")
_WORKER_FIELDS = ("actor", "queue", "messageId", "attempt", "subject")


def redact(text: str) -> str:
    """The text with every secret it shows replaced."""
    return _SECRETS.sub(REDACTED, text)


@contextmanager
def bound(**about: Any) -> Iterator[None]:
    """Name what every line logged in the block is about (a request's id, a message's actor)."""
    token = _about.set({**(_about.get() or {}), **about})
    try:
        yield
    finally:
        _about.reset(token)


def enter(**about: Any) -> None:
    """Name what this thread's lines are about until ``leave`` (a worker's message: Dramatiq's
    hooks before and after it run on its thread, where a block cannot span them)."""
    _about.set(about)


def leave() -> None:
    _about.set(None)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = dict(_about.get() or {})
    for name in (*_FIELDS, *_WORKER_FIELDS):
        if name in record.__dict__:
            fields[name] = record.__dict__[name]
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, the line's fields,
    and a traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:  # formatted where it was logged (a queued record: _Queued)
            line["exception"] = record.exc_text
        return redact(json.dumps(line, default=str, ensure_ascii=False))


class TextFormatter(logging.Formatter):
    """A line for a person: time, level, logger, message, then the fields as name=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s %(message)s", datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = _fields(record)
        if fields:
            text += "  " + " ".join(f"{name}={value}" for name, value in fields.items())
        return redact(text)


def handler(stream: TextIO | None = None) -> logging.Handler:
    """A handler writing to ``stream`` (standard error): JSON unless it is a terminal."""
    stream = stream or sys.stderr
    made = logging.StreamHandler(stream)
    made.setFormatter(TextFormatter() if stream.isatty() else JsonFormatter())
    return made


class _Queued(logging.handlers.QueueHandler):
    """Hand a record to the writer's thread, made whole here: its message and traceback
    formatted, and what it is about (a context of this thread) copied onto it."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        for name, value in (_about.get() or {}).items():
            record.__dict__.setdefault(name, value)
        return record


def queued(stream: TextIO | None = None) -> logging.Handler:
    """A handler that never blocks its caller (a request on the event loop): records go to a
    queue and ``handler(stream)`` writes them from a thread of its own."""
    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = logging.handlers.QueueListener(lines, handler(stream), respect_handler_level=False)
    listener.start()
    atexit.register(listener.stop)  # what is queued is written before the process ends
    return _Queued(lines)


def configure(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Send every logger's lines through one handler (this process's start: serve, a worker)."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(queued(stream))
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "dramatiq"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # requests are logged by cardvault.requests


def uvicorn_config() -> dict[str, Any]:
    """uvicorn's log_config: its loggers go to the root's handler (set by ``configure``, which
    each server process runs as uvicorn starts it)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "handlers": {"cardvault": {"()": "cardvault.logs.queued"}},
        "root": {"handlers": ["cardvault"], "level": "INFO"},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False, "level": "CRITICAL"},
        },
    }
