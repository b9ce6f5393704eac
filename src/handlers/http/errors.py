"""The one error table: every failure, ours, the framework's or the file store's being out of
reach, becomes the interface's error body {code, error, details, requestId, retryAt} as
application/json."""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

from connexion.exceptions import (
    BadRequestProblem,
    NonConformingResponse,
    OAuthProblem,
    OAuthResponseProblem,
    UnsupportedMediaTypeProblem,
)
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException

from cardvault.adapters import metrics
from cardvault.adapters.blobs import StoreUnreachable
from cardvault.domain import errors as domain

log = logging.getLogger("cardvault.errors")

# Domain error -> (status, code). Looked up along the exception's class hierarchy.
DOMAIN_ERRORS: dict[type[domain.CardVaultError], tuple[int, str]] = {
    domain.CardVaultError: (400, "INVALID_INPUT"),
    domain.NotFound: (404, "NOT_FOUND"),
    domain.UploadNotFound: (404, "UPLOAD_NOT_FOUND"),
    domain.InvalidInput: (400, "INVALID_INPUT"),
    domain.InvalidTag: (400, "INVALID_TAG"),
    domain.InvalidCursor: (400, "INVALID_CURSOR"),
    domain.InvalidQuery: (400, "INVALID_QUERY"),
    domain.CursorExpired: (410, "CURSOR_EXPIRED"),
    domain.ShareExpired: (410, "SHARE_EXPIRED"),
    domain.TypeMismatch: (400, "TYPE_MISMATCH"),
    domain.FileRequired: (400, "FILE_REQUIRED"),
    domain.UnsupportedType: (400, "UNSUPPORTED_TYPE"),
    domain.QuoteNotFound: (400, "QUOTE_NOT_FOUND"),
    domain.FileTooLarge: (413, "FILE_TOO_LARGE"),
    domain.UploadIncomplete: (409, "UPLOAD_INCOMPLETE"),
    domain.UploadChanged: (409, "UPLOAD_CHANGED"),
    domain.UploadUsed: (409, "UPLOAD_USED"),
    domain.ContentTooLarge: (413, "CONTENT_TOO_LARGE"),
    domain.Conflict: (409, "CONFLICT"),
    domain.TagOperationRunning: (409, "TAG_OPERATION_RUNNING"),
    domain.TagExists: (409, "TAG_EXISTS"),
    domain.FolderExists: (409, "FOLDER_EXISTS"),
    domain.SmartFolder: (409, "SMART_FOLDER"),
    domain.CardInTrash: (409, "CARD_IN_TRASH"),
    domain.CardNotInTrash: (409, "CARD_NOT_IN_TRASH"),
    domain.ExportRunning: (409, "EXPORT_RUNNING"),
    domain.ExportFinished: (409, "EXPORT_FINISHED"),
    domain.ImportRunning: (409, "IMPORT_RUNNING"),
    domain.ImportFinished: (409, "IMPORT_FINISHED"),
    domain.KeyLimitReached: (409, "KEY_LIMIT_REACHED"),
    domain.QuotaExceeded: (409, "QUOTA_EXCEEDED"),
    domain.WebhookLimitReached: (409, "WEBHOOK_LIMIT_REACHED"),
    domain.WebhookDisabled: (409, "WEBHOOK_DISABLED"),
    domain.CardLimitReached: (409, "CARD_LIMIT_REACHED"),
    domain.FolderLimitReached: (409, "FOLDER_LIMIT_REACHED"),
    domain.AnnotationLimitReached: (409, "ANNOTATION_LIMIT_REACHED"),
    domain.InsufficientScope: (403, "INSUFFICIENT_SCOPE"),
    domain.IdempotencyKeyInUse: (409, "IDEMPOTENCY_KEY_IN_USE"),
    domain.IdempotencyKeyReused: (422, "IDEMPOTENCY_KEY_REUSED"),
    domain.PreconditionFailed: (412, "PRECONDITION_FAILED"),
    domain.NotApplied: (424, "NOT_APPLIED"),
    domain.RateLimited: (429, "RATE_LIMITED"),
    domain.ServiceBusy: (503, "SERVICE_BUSY"),
    domain.ServiceUnavailable: (503, "SERVICE_UNAVAILABLE"),
    domain.StorageUnavailable: (503, "SERVICE_UNAVAILABLE"),
    domain.NotReady: (503, "SERVICE_UNAVAILABLE"),
    domain.StorageFull: (503, "SERVICE_UNAVAILABLE"),
}

_BEARER_CHALLENGE = 'Bearer realm="cardvault"'


class InvalidRequest(BadRequestProblem):
    """A request that breaks the spec, described field by field."""

    def __init__(
        self, message: str, *, code: str = "INVALID_INPUT", details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail=message)
        self.code = code
        self.details = details


class BodyTooLarge(HTTPException):
    """The request body is over the size every operation accepts."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is over {limit} bytes.")
        self.details = {"limitBytes": limit}


class HeadersTooLarge(HTTPException):
    """The request's headers are over the size the app accepts."""

    def __init__(self, limit: int) -> None:
        super().__init__(431, f"The request headers are over {limit} bytes in all.")
        self.details = {"limitBytes": limit}


class AmbiguousCredentials(HTTPException):
    """More than one Authorization header: which credential counts would be a guess."""

    def __init__(self) -> None:
        super().__init__(400, "Send one Authorization header; this request has several.")


class UnsupportedMediaType(HTTPException):
    """The request body is of a media type no operation takes."""

    def __init__(self) -> None:
        super().__init__(415, "The request body must be application/json.")


def error_response(
    request_id: str | None,
    status: int,
    code: str,
    message: str,
    *,
    details: dict[str, Any] | None = None,
    retry_at: int | None = None,
    headers: dict[str, str] | None = None,
) -> ConnexionResponse:
    """Render the error body."""
    body = {
        "code": code,
        "error": message,
        "details": details,
        "requestId": request_id,
        "retryAt": retry_at,
    }
    return ConnexionResponse(
        status_code=status,
        body=json.dumps(body),
        content_type="application/json",
        headers=headers or {},
    )


def _request_id(request: ConnexionRequest) -> str | None:
    state = request.scope.get("state") or {}
    return state.get("request_id")


def _retry_after(retry_at: int) -> str:
    """Retry-After (RFC 9110 §10.2.3) in whole seconds, at least 1, rounded up."""
    return str(max(1, math.ceil(retry_at / 1000 - time.time())))


def error_body(exc: domain.CardVaultError, request_id: str | None) -> tuple[int, dict[str, Any]]:
    """The status and error body a domain error answers with (as one item of a bulk answer)."""
    status, code = _domain(exc)
    body = {"code": code, "error": exc.message, "details": exc.details, "requestId": request_id}
    return status, {**body, "retryAt": exc.retry_at}


def _domain(exc: domain.CardVaultError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in DOMAIN_ERRORS:
            return DOMAIN_ERRORS[cls]
    raise AssertionError("unreachable: CardVaultError is in the table")


def render_exception(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """Turn any exception raised while serving a request into the error body."""
    request_id = _request_id(request)
    if isinstance(exc, StoreUnreachable):  # a passing fault, as the database's, but logged
        log.warning("request %s: the file store is out of reach: %s", request_id, exc)
        exc = domain.StorageUnavailable()
    if domain.is_storage_full(exc) and not isinstance(exc, domain.StorageFull):
        # A write that found the disk full, wherever it was (the store, an upload's body): it
        # passes once room is made, so it is no failure of ours; the operator must hear of it.
        log.warning("request %s found no room to write: %s", request_id, exc)
        exc = domain.StorageFull()
    if isinstance(exc, domain.CardVaultError):
        status, code = _domain(exc)
        if isinstance(exc, domain.RateLimited):
            metrics.RATE_LIMITED.labels((exc.details or {}).get("policy", "")).inc()
        # Headers the operation sends on every response (RateLimit), then Retry-After.
        headers = dict((request.scope.get("state") or {}).get("response_headers") or {})
        if exc.retry_at is not None:
            headers["Retry-After"] = _retry_after(exc.retry_at)
        if isinstance(exc, domain.InsufficientScope):  # RFC 6750 §3.1
            headers["WWW-Authenticate"] = (
                f'{_BEARER_CHALLENGE}, error="insufficient_scope", scope="{exc.needed}"'
            )
        return error_response(
            request_id, status, code, exc.message, details=exc.details, retry_at=exc.retry_at, headers=headers
        )
    if isinstance(exc, InvalidRequest):
        return error_response(request_id, 400, exc.code, str(exc.detail), details=exc.details)
    if isinstance(exc, OAuthResponseProblem):
        is_token = request.headers.get("authorization", "")[7:].strip().startswith("cva_")
        return error_response(
            request_id,
            401,
            "INVALID_TOKEN" if is_token else "INVALID_API_KEY",
            "The access token has expired or was revoked: refresh it, or sign in again."
            if is_token
            else "The API key is not valid.",
            headers={"WWW-Authenticate": f'{_BEARER_CHALLENGE}, error="invalid_token"'},
        )
    if isinstance(exc, OAuthProblem):
        return error_response(
            request_id,
            401,
            "UNAUTHORIZED",
            "This operation needs an API key or an access token: send Authorization: Bearer <credential>.",
            headers={"WWW-Authenticate": _BEARER_CHALLENGE},
        )
    if isinstance(exc, (UnsupportedMediaTypeProblem, UnsupportedMediaType)):
        return error_response(
            request_id,
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            "The request body must be application/json.",
        )
    if isinstance(exc, BadRequestProblem):
        return error_response(request_id, 400, "INVALID_INPUT", str(exc.detail or exc.title))
    if isinstance(exc, AmbiguousCredentials):
        return error_response(
            request_id,
            400,
            "INVALID_INPUT",
            exc.detail,
            details={
                "fields": [{"location": "header", "field": "Authorization", "message": "must be sent once"}]
            },
            headers={"WWW-Authenticate": f'{_BEARER_CHALLENGE}, error="invalid_request"'},
        )
    if isinstance(exc, HeadersTooLarge):
        return error_response(request_id, 431, "HEADERS_TOO_LARGE", exc.detail, details=exc.details)
    if isinstance(exc, BodyTooLarge):
        return error_response(request_id, 413, "CONTENT_TOO_LARGE", exc.detail, details=exc.details)
    if isinstance(exc, HTTPException) and not isinstance(exc, NonConformingResponse):
        if exc.status_code == 404:
            return error_response(request_id, 404, "NOT_FOUND", "No such resource.")
        log.warning("unmapped HTTP error %s: %s", exc.status_code, exc.detail)
    log.error("request %s failed", request_id, exc_info=exc)
    return error_response(
        request_id,
        500,
        "INTERNAL_ERROR",
        "Something went wrong on our side. Quote the requestId if you report it.",
    )
