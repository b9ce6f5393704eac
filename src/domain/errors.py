"""The domain's exception tree. HTTP statuses and codes are assigned in cardvault.handlers.errors.

CardVaultError
├── NotFound                 the thing does not exist for this account
│   └── UploadNotFound       a fileKey names no completed upload
├── InvalidInput             a value breaks a rule the spec cannot state
│   ├── InvalidTag           a tag breaks the tag rules
│   ├── InvalidCursor        a cursor was altered or made for another query
│   └── TypeMismatch         the operation does not apply to this card type
├── ContentTooLarge          a text is over its byte limit
└── Conflict                 the request clashes with the current state
"""

from __future__ import annotations

from typing import Any


class CardVaultError(Exception):
    """Base of every error the domain raises on purpose."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


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


class InvalidCursor(InvalidInput):
    """A cursor was altered, or made for another account, sort or filter."""


class TypeMismatch(InvalidInput):
    """The operation does not apply to this card's type."""


class ContentTooLarge(CardVaultError):
    """A text is over its byte limit."""

    def __init__(self, field: str, *, limit: int, actual: int) -> None:
        super().__init__(
            f"{field} is {actual} bytes of UTF-8; the limit is {limit}.",
            details={"limitBytes": limit, "actualBytes": actual},
        )


class Conflict(CardVaultError):
    """The request clashes with the current state."""


class TagOperationRunning(Conflict):
    """Another tag change is running for the account."""


class TagExists(Conflict):
    """A rename would land on a tag that exists; merge instead."""


class FolderExists(Conflict):
    """Another folder of the account has this name (ignoring case)."""


class CardInTrash(Conflict):
    """The operation is refused for a card in Trash; restore it first."""


class CardNotInTrash(Conflict):
    """Deleting a card forever needs it in Trash first."""
