"""The domain's exception tree. HTTP statuses and codes are assigned in cardvault.handlers.http.errors.

CardVaultError
├── NotFound                 the thing does not exist for this account
│   └── UploadNotFound       a fileKey names no completed upload
├── InvalidInput             a value breaks a rule the spec cannot state
│   ├── InvalidTag           a tag breaks the tag rules
│   ├── InvalidCursor        a cursor was altered or made for another query
│   ├── InvalidQuery         a qualifier in q names nothing it could
│   ├── TypeMismatch         the operation does not apply to this card type
│   ├── FileRequired         an image, video, audio or document card needs a file
│   ├── UnsupportedType      a file's bytes are no accepted type
│   └── QuoteNotFound        a card's text does not hold an annotation's quote
├── CursorExpired            a changes cursor is older than the changes kept
├── ShareExpired             a share link's expiry has passed
├── ContentTooLarge          a text is over its byte limit
├── FileTooLarge             a file is over its kind's size limit
├── Conflict                 the request clashes with the current state
│   ├── TagOperationRunning  another tag change is running for the account
│   ├── TagExists            a rename would land on an existing tag
│   ├── FolderExists         another folder has this name
│   ├── SmartFolder          cards are not put in or taken out of a smart folder by hand
│   ├── CardInTrash          refused for a card in Trash
│   ├── CardNotInTrash       deleting forever needs the card in Trash
│   ├── UploadIncomplete     the upload's file has not been stored (yet)
│   ├── UploadChanged        the stored file is not the one the client uploaded
│   ├── UploadUsed           a card took this upload already
│   ├── ExportRunning        an export of the account is pending or running
│   ├── ExportFinished       the export ended already: nothing to cancel
│   ├── ImportRunning        an import into the account is pending or running
│   ├── ImportFinished       the import ended already: nothing to cancel
│   ├── KeyLimitReached      the account holds as many live API keys as it may
│   ├── WebhookLimitReached  the account holds as many webhooks as it may
│   ├── CardLimitReached     the account holds as many cards as it may
│   ├── FolderLimitReached   the account holds as many folders as it may
│   ├── AnnotationLimitReached  the card holds as many annotations as it may
│   ├── WebhookDisabled      a delivery cannot be retried while its webhook is disabled
│   ├── QuotaExceeded        an upload would take the account past a storage quota
│   └── IdempotencyKeyInUse  a request with this Idempotency-Key is still running
├── IdempotencyKeyReused     an Idempotency-Key came back with another request
├── PreconditionFailed       an If-Match names no current version of the resource
├── InsufficientScope        the credential does not hold the scope the operation needs
├── NotApplied               an item of an atomic bulk request undone by another's failure
├── RateLimited              the account used up a rate limit; retry at retry_at
│   └── ExportQuotaUsed      an export became ready less than a week ago
├── ServiceBusy              the database stayed busy (locks, deadlocks); retry at retry_at
├── ServiceUnavailable       the database cannot be reached, or its connection was lost
│   └── StorageUnavailable   the file store cannot be reached (cardvault.adapters.blobs.StoreUnreachable)
├── NotReady                 a component failed the readiness check (cardvault.health); never retried
└── StorageFull              the disk that keeps files (or the database) is full; retry at retry_at

An error that says when to try again carries ``retry_at`` (epoch milliseconds).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Sequence
from typing import Any


class CardVaultError(Exception):
    """Base of every error the domain raises on purpose."""

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, retry_at: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.retry_at = retry_at


class NotFound(CardVaultError):
    """The thing does not exist, or belongs to another account."""


class UploadNotFound(NotFound):
    """A fileKey names no completed upload of this account."""


class InvalidInput(CardVaultError):
    """A value breaks a rule that the spec cannot express."""


class InvalidTag(InvalidInput):
    """A tag breaks the tag rules."""

    def __init__(self, tag: str, reason: str) -> None:
        super().__init__(f"Tag {tag!r} is invalid: {reason}.", details={"tag": tag})


class InvalidQuery(InvalidInput):
    """A qualifier in a search's q has a value that names nothing (``type:banana``), or q holds
    too many: ``details.position`` says where (in characters, from 0)."""

    def __init__(self, message: str, *, position: int) -> None:
        problem = {"location": "query", "field": "q", "message": message}
        super().__init__(message, details={"fields": [problem], "position": position})


class InvalidCursor(InvalidInput):
    """A cursor was altered, or made for another account, sort or filter."""


class CursorExpired(CardVaultError):
    """A changes cursor points before the oldest change kept: changes after it were purged."""


class ShareExpired(CardVaultError):
    """A share link past its ``expiresAt``: it answers 410 until it is deleted."""


class TypeMismatch(InvalidInput):
    """The operation does not apply to this card's type."""


class FileRequired(InvalidInput):
    """A card of a file type sent without a file."""


class UnsupportedType(InvalidInput):
    """A file whose bytes are none of the accepted types (``detected`` names it when known)."""

    def __init__(self, message: str, *, detected: str | None = None) -> None:
        super().__init__(message, details={"detected": detected} if detected else None)


class QuoteNotFound(InvalidInput):
    """The card's text does not hold an annotation's quote, even nearly."""

    def __init__(self, source: str | None) -> None:
        super().__init__(
            "The card's text does not hold this quote.", details={"source": source} if source else None
        )


class FileTooLarge(CardVaultError):
    """A file is over the size limit of its kind."""

    def __init__(self, *, limit: int, actual: int, kind: str) -> None:
        super().__init__(
            f"The file is {actual} bytes; a file of kind {kind!r} may have at most {limit}.",
            details={"limitBytes": limit, "actualBytes": actual},
        )


class ContentTooLarge(CardVaultError):
    """A text is over its byte limit."""

    def __init__(self, field: str, *, limit: int, actual: int) -> None:
        super().__init__(
            f"{field} is {actual} bytes of UTF-8; the limit is {limit}.",
            details={"limitBytes": limit, "actualBytes": actual},
        )


class Conflict(CardVaultError):
    """The request clashes with the current state."""


class SmartFolder(Conflict):
    """A smart folder holds what its query matches: cards are not added or removed by hand."""


class TagOperationRunning(Conflict):
    """Another tag change is running for the account."""

    def __init__(self, operation_id: str) -> None:
        super().__init__(
            "Another tag change is running for this account; wait for it to finish.",
            details={"operationId": operation_id},
        )


class TagExists(Conflict):
    """A rename would land on a tag that exists; merge instead."""


class FolderExists(Conflict):
    """Another folder of the account has this name (ignoring case)."""


class CardInTrash(Conflict):
    """The operation is refused for a card in Trash; restore it first."""


class CardNotInTrash(Conflict):
    """Deleting a card forever needs it in Trash first."""


class UploadIncomplete(Conflict):
    """The upload's URL was issued, but no file has been stored through it."""


class UploadChanged(Conflict):
    """The stored file's ETag (or size) is not the one the client names."""


class UploadUsed(Conflict):
    """A card has taken this upload already."""


class ExportRunning(Conflict):
    """An export of the account is pending or running; ``job`` is it."""

    def __init__(self, job: Any) -> None:
        super().__init__(
            "An export of this account is running; wait for it, or cancel it.", details={"exportId": job.id}
        )
        self.job = job


class ExportFinished(Conflict):
    """The export is ready, expired or failed: there is nothing to cancel."""


class ImportRunning(Conflict):
    """An import into the account is pending or running."""

    def __init__(self, import_id: str) -> None:
        super().__init__(
            "An import into this account is running; wait for it, or cancel it.",
            details={"importId": import_id},
        )


class ImportFinished(Conflict):
    """The import completed, failed or was canceled: there is nothing to cancel."""


class KeyLimitReached(Conflict):
    """The account holds as many live API keys as it may."""


class WebhookLimitReached(Conflict):
    """The account holds as many webhooks as it may."""


class CardLimitReached(Conflict):
    """The account holds as many cards as it may (Trash included)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"An account keeps at most {limit} cards, Trash included: delete some first.",
            details={"limit": limit},
        )


class FolderLimitReached(Conflict):
    """The account holds as many folders as it may."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"An account keeps at most {limit} folders: delete one first.", details={"limit": limit}
        )


class AnnotationLimitReached(Conflict):
    """The card holds as many annotations as it may."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"A card keeps at most {limit} annotations: delete one first.", details={"limit": limit}
        )


class WebhookDisabled(Conflict):
    """A delivery cannot be retried while its webhook is disabled."""


class QuotaExceeded(Conflict):
    """An upload would take the account past one of its storage quotas."""

    def __init__(self, quota: str, *, limit: int, used: int, requested: int) -> None:
        what = {"pendingUploads": "uploads no card has taken yet", "storedFiles": "stored files"}[quota]
        super().__init__(
            f"This upload of {requested} bytes would take the account's {what} to {used + requested}"
            f" bytes; its quota is {limit}. Take or let expire pending uploads, or delete files, first.",
            details={"quota": quota, "limitBytes": limit, "usedBytes": used, "requestedBytes": requested},
        )


class InsufficientScope(CardVaultError):
    """The API key or access token does not hold the scope the operation needs."""

    def __init__(self, needed: str, held: list[str]) -> None:
        super().__init__(
            f"This operation needs the {needed!r} scope; this credential holds {' '.join(held) or 'none'}.",
            details={"scope": needed, "heldScopes": held},
        )
        self.needed = needed


class IdempotencyKeyInUse(Conflict):
    """A request with the same Idempotency-Key is still running."""

    def __init__(self) -> None:
        super().__init__(
            "A request with this Idempotency-Key is still running; retry after it finishes.",
            retry_at=_in_ms(1.0),
        )


class IdempotencyKeyReused(CardVaultError):
    """An Idempotency-Key was sent again with another method, path or body."""

    def __init__(self) -> None:
        super().__init__(
            "This Idempotency-Key was used for another request (method, path or body); "
            "send a new key for a new request."
        )


class NotApplied(CardVaultError):
    """An item of an atomic bulk request that was not applied, because another item failed."""

    def __init__(self, failed: Sequence[int]) -> None:
        super().__init__(
            "Not applied: another item of this atomic request failed.",
            details={"failedIndexes": list(failed)},
        )


class PreconditionFailed(CardVaultError):
    """An If-Match condition failed: the resource changed since the client read it (or the
    client named another version); ``details.etag`` is the current one."""

    def __init__(self, current: str) -> None:
        super().__init__(
            "The resource changed since the version If-Match names: read it again (details.etag is"
            " its current ETag), apply your change to it, and send it with that ETag.",
            details={"etag": current},
        )


class RateLimited(CardVaultError):
    """A rate limit of the account is used up until retry_at."""

    def __init__(self, policy: str, *, limit: int, window_seconds: int, retry_at: int) -> None:
        super().__init__(
            f"Rate limit {policy!r} reached: at most {limit} requests in any {window_seconds} s.",
            details={"policy": policy},
            retry_at=retry_at,
        )


class ExportQuotaUsed(RateLimited):
    """One export a week: the last became ready less than 7 days before ``retry_at``."""

    def __init__(self, export_id: str, *, retry_at: int) -> None:
        CardVaultError.__init__(
            self,
            "One export a week: the last became ready less than 7 days ago.",
            details={"policy": "export-quota", "exportId": export_id},
            retry_at=retry_at,
        )


class ServiceBusy(CardVaultError):
    """The database stayed busy (lock waits, deadlocks) through every attempt."""

    def __init__(self) -> None:
        super().__init__(
            "The service is busy; nothing was changed. Retry in a moment.",
            retry_at=_in_ms(1.0),
        )


class ServiceUnavailable(CardVaultError):
    """The database could not be reached, or the connection to it was lost. ``maybe_saved``:
    lost while a change was being committed, so it may have been saved."""

    def __init__(self, *, maybe_saved: bool = False) -> None:
        message = (
            "The connection to the database was lost while the change was being saved: it may have"
            " been saved. Read it back, or retry with the same Idempotency-Key."
            if maybe_saved
            else "The database cannot be reached; nothing was changed. Retry in a moment."
        )
        super().__init__(message, retry_at=_in_ms(1.0))
        self.maybe_saved = maybe_saved


class NotReady(CardVaultError):
    """A component this process needs (the database, Redis, the file store) did not answer the
    readiness check; ``checks`` is every component's answer. Not a ServiceUnavailable: the
    check is the answer, never retried."""

    def __init__(self, failed: list[str], checks: list[dict[str, Any]]) -> None:
        super().__init__(
            f"Not ready: {', '.join(failed)} did not answer. Retry in a moment.",
            details={"checks": checks},
            retry_at=_in_ms(1.0),
        )


class StorageUnavailable(ServiceUnavailable):
    """The file store could not be reached, or did not answer in time, through the store
    client's own retries. What the store refused is the request's only effect: nothing was
    changed. Its cause is the blob store's StoreUnreachable, which the handlers' error table
    turns into this error (adapters do not raise domain errors)."""

    def __init__(self) -> None:
        CardVaultError.__init__(
            self,
            "The file store cannot be reached; nothing was changed. Retry in a moment.",
            retry_at=_in_ms(2.0),
        )
        self.maybe_saved = False


STORAGE_FULL_RETRY_SECONDS = 10.0  # room is made by an operator or by deletions, not in a moment
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


class StorageFull(CardVaultError):
    """A write found no room: the disk that keeps the files (or the database) is full, or its
    quota is used up. Nothing was stored; it passes once room is made."""

    def __init__(self) -> None:
        super().__init__(
            "The service has no room left to store data; nothing was stored. Retry later.",
            retry_at=_in_ms(STORAGE_FULL_RETRY_SECONDS),
        )


def is_storage_full(exc: BaseException) -> bool:
    """Say whether an error is a write that found no room (ENOSPC or EDQUOT): StorageFull."""
    return isinstance(exc, StorageFull) or (isinstance(exc, OSError) and exc.errno in _NO_ROOM)


def _in_ms(seconds: float) -> int:
    """The epoch time in milliseconds this many seconds from now."""
    return int((time.time() + seconds) * 1000)
