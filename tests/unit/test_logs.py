"""The log lines: JSON off a terminal, a plain line on one, each with what it is about, and no
secret in any of them whichever logger wrote it."""

from __future__ import annotations

import io
import json
import logging

import pytest

from cardvault import logs
from cardvault.domain.auth import credentials

KEY = credentials.new_secret(credentials.API_KEY)
SECRETS = {
    "api key": f"key {KEY} sent",
    "access token": f"token {credentials.new_secret(credentials.ACCESS_TOKEN)}",
    "session cookie": f"cv_session={credentials.new_secret(credentials.SESSION)}",
    "sign-in link": f"GET /sign-in/link?token={credentials.new_secret(credentials.SIGN_IN_LINK)} 303",
    "webhook secret": "secret whsec_c2VjcmV0LXNpZ25pbmcta2V5LWJ5dGVzLTAxMjM0NTY3",
    "authorization": "Authorization: Basic dXNlcjpodW50ZXIy",
    "bearer": "headers {'authorization': 'Bearer not-ours-but-secret-0123'}",
    "password in a URL": "redis://:hunter2-password@redis.internal:6379/0",
    "signed S3 URL": "https://s3.example.com/b/k?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=0123abcd",
    "local signed upload": "PUT /files/upload/eyJrIjoiYWNj.ZXNzIn0.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw 200",
    "cookie header": "Cookie: __Host-cv_session=abc; cv_csrf=def",
}
HIDDEN = {
    "api key": KEY,
    "webhook secret": "c2VjcmV0LXNpZ25pbmcta2V5LWJ5dGVzLTAxMjM0NTY3",
    "authorization": "dXNlcjpodW50ZXIy",
    "bearer": "not-ours-but-secret-0123",
    "password in a URL": "hunter2-password",
    "signed S3 URL": "0123abcd",
    "local signed upload": "c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw",
    "cookie header": "abc",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted(kind: str) -> None:
    shown = logs.redact(SECRETS[kind])
    assert logs.REDACTED in shown
    if kind in HIDDEN:
        assert HIDDEN[kind] not in shown
    assert not any(secret in shown for secret in (KEY,))


def test_what_is_no_secret_is_left_as_it_is() -> None:
    plain = "GET /v1/cards/crd_5f2kq3x7m1c9v4b8n6z0a2s4d6 200 listCards req_3f2a9c0d41b84e6f acc_local 1.2 ms"
    assert logs.redact(plain) == plain


def _logged(stream: io.StringIO, *, tty: bool = False) -> logging.Logger:
    stream.isatty = lambda: tty  # type: ignore[method-assign]
    logger = logging.getLogger(f"cardvault.test.{id(stream)}")
    logger.handlers[:] = [logs.handler(stream)]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_off_a_terminal_each_line_is_one_json_object_with_what_it_is_about() -> None:
    stream = io.StringIO()
    logger = _logged(stream)
    with logs.bound(requestId="req_0123456789abcdef"):
        logger.info(
            "created %s", "crd_x", extra={"operation": "createCard", "status": 200, "accountId": "acc_1"}
        )
        try:
            raise RuntimeError(f"the key {KEY} was refused")
        except RuntimeError:
            logger.exception("failed with %s", KEY)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "created crd_x" and first["level"] == "info" and first["logger"] == logger.name
    assert (first["requestId"], first["operation"], first["status"], first["accountId"]) == (
        "req_0123456789abcdef",
        "createCard",
        200,
        "acc_1",
    )
    assert first["time"].endswith("+00:00")
    assert KEY not in stream.getvalue() and "RuntimeError" in second["exception"]
    assert second["message"] == f"failed with {logs.REDACTED}"


def test_on_a_terminal_a_line_is_for_a_person_and_a_worker_names_its_message() -> None:
    stream = io.StringIO()
    logger = _logged(stream, tty=True)
    logs.enter(actor="link_metadata_stage", queue="files", messageId="m-1", attempt=2)
    try:
        logger.warning("stage waits: Bearer %s", KEY)
    finally:
        logs.leave()
    logger.info("after the message")
    waited, after = stream.getvalue().splitlines()
    assert " WARNING " in waited and "actor=link_metadata_stage" in waited and "attempt=2" in waited
    assert KEY not in waited and logs.REDACTED in waited
    assert "actor=" not in after


def test_a_queued_line_keeps_its_fields_and_traceback_and_is_written_by_another_thread() -> None:
    import time

    stream = io.StringIO()
    stream.isatty = lambda: False  # type: ignore[method-assign]
    logger = logging.getLogger("cardvault.test.queued")
    logger.handlers[:] = [logs.queued(stream)]
    logger.propagate, logger.level = False, logging.INFO
    with logs.bound(requestId="req_queued00000000"):
        try:
            raise ValueError(f"bad key {KEY}")
        except ValueError:
            logger.exception("failed %s", "here")
    deadline = time.monotonic() + 5
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    line = json.loads(stream.getvalue())
    assert (line["message"], line["requestId"]) == ("failed here", "req_queued00000000")
    assert "ValueError" in line["exception"] and KEY not in stream.getvalue()
