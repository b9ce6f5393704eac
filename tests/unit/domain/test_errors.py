"""The domain's exception tree: the tree its docstring draws is the classes' own, every error the
domain can raise has a code the interface lists with the status it answers with, and the details
and retry time each error carries are what the interface describes."""

from __future__ import annotations

import errno
import inspect
import re
import time
from types import SimpleNamespace

import pytest

from cardvault.domain import errors
from cardvault.handlers.http.errors import DOMAIN_ERRORS, _domain
from cardvault.spec import spec_document

SPEC = spec_document()[1]
ERROR_CLASSES = {
    name: cls
    for name, cls in vars(errors).items()
    if inspect.isclass(cls) and issubclass(cls, errors.CardVaultError)
}


def _drawn_tree() -> dict[str, str | None]:
    """Each class the module docstring draws, with the class it hangs from."""
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        root = re.fullmatch(r"(\w+Error)", line)
        branch = re.match(r"([│ ]*)[├└]── (\w+)", line)
        if root is None and branch is None:
            continue
        depth = 0 if branch is None else len(branch.group(1)) // 4 + 1
        name = root.group(1) if root else branch.group(2)  # type: ignore[union-attr]
        del path[depth:]
        parents[name] = path[-1] if path else None
        path.append(name)
    return parents


def _listed_codes() -> dict[str, int]:
    """The error codes the API description lists, each with the status it names after it."""
    text = SPEC["info"]["description"]
    listed = text[text.index("Codes used:") : text.index("A request that fails changes nothing")]
    codes: dict[str, int] = {}
    waiting: list[str] = []
    for code, status in re.findall(r"`([A-Z_]+)`|\((\d{3})", listed):
        if code:
            waiting.append(code)
        else:
            codes.update(dict.fromkeys(waiting, int(status)))
            waiting = []
    return codes


def test_the_docstring_draws_the_class_tree() -> None:
    drawn = _drawn_tree()
    actual = {
        name: (None if cls is errors.CardVaultError else cls.__bases__[0].__name__)
        for name, cls in ERROR_CLASSES.items()
    }
    assert drawn == actual


def test_each_error_has_a_code_the_interface_lists_with_its_status() -> None:
    listed = _listed_codes()
    unlisted = set()
    for name, cls in ERROR_CLASSES.items():
        status, code = next(DOMAIN_ERRORS[c] for c in cls.__mro__ if c in DOMAIN_ERRORS)
        if listed.get(code) != status:
            unlisted.add(f"{name}: {status} {code}")
    # A bare Conflict is raised only by the command line (an account that exists), never over HTTP.
    assert unlisted == {"Conflict: 409 CONFLICT"}


def test_an_error_is_looked_up_along_its_classes() -> None:
    assert _domain(errors.ExportQuotaUsed("exp_1", retry_at=1)) == (429, "RATE_LIMITED")
    assert _domain(errors.UploadNotFound("No upload.")) == (404, "UPLOAD_NOT_FOUND")
    assert _domain(errors.NotFound("No card.")) == (404, "NOT_FOUND")


def _made_with_details() -> list[errors.CardVaultError]:
    return [
        errors.InvalidTag("a\x00b", "control"),
        errors.UnsupportedType("An SVG is refused.", detected="svg"),
        errors.FileTooLarge(limit=10, actual=11, kind="image"),
        errors.ContentTooLarge("content", limit=10, actual=11),
        errors.ExportRunning(SimpleNamespace(id="exp_1")),
        errors.InsufficientScope("keys", ["read", "write"]),
        errors.QuotaExceeded("pendingUploads", limit=10, used=8, requested=3),
        errors.RateLimited("cards", limit=3, window_seconds=60, retry_at=1),
        errors.ExportQuotaUsed("exp_1", retry_at=1),
    ]


@pytest.mark.parametrize("error", _made_with_details(), ids=lambda e: type(e).__name__)
def test_details_name_only_members_the_interface_describes(error: errors.CardVaultError) -> None:
    described = SPEC["components"]["schemas"]["ErrorDetails"]["properties"]
    assert error.details and set(error.details) <= set(described)
    assert error.message and str(error) == error.message


def test_details_say_what_was_wrong() -> None:
    assert errors.FileTooLarge(limit=10, actual=11, kind="image").details == {
        "limitBytes": 10,
        "actualBytes": 11,
    }
    assert errors.InsufficientScope("keys", []).details == {"scope": "keys", "heldScopes": []}
    assert "none" in errors.InsufficientScope("keys", []).message
    assert errors.UnsupportedType("Refused.").details is None  # a type not known is not named
    assert errors.QuotaExceeded("storedFiles", limit=10, used=8, requested=3).details == {
        "quota": "storedFiles",
        "limitBytes": 10,
        "usedBytes": 8,
        "requestedBytes": 3,
    }
    assert "may have been saved" in errors.ServiceUnavailable(maybe_saved=True).message
    assert "nothing was changed" in errors.ServiceUnavailable().message
    assert errors.ExportQuotaUsed("exp_1", retry_at=5).details == {
        "policy": "export-quota",
        "exportId": "exp_1",
    }


def test_errors_that_pass_by_themselves_say_when_to_retry_and_no_other_does() -> None:
    before = int(time.time() * 1000)
    for passing in (
        errors.IdempotencyKeyInUse(),
        errors.ServiceBusy(),
        errors.ServiceUnavailable(),
        errors.ServiceUnavailable(maybe_saved=True),
    ):
        assert passing.retry_at is not None and before < passing.retry_at <= before + 2_000
    full = errors.StorageFull().retry_at
    assert full is not None and before < full <= before + (errors.STORAGE_FULL_RETRY_SECONDS + 1) * 1000
    assert errors.RateLimited("cards", limit=3, window_seconds=60, retry_at=7).retry_at == 7
    for made in _made_with_details()[:7]:
        assert made.retry_at is None
    assert errors.Conflict("x").retry_at is None and errors.IdempotencyKeyReused().retry_at is None


def test_a_write_that_found_no_room_is_storage_full_and_no_other_error_is() -> None:
    for no_room in (errno.ENOSPC, errno.EDQUOT):
        assert errors.is_storage_full(OSError(no_room, "No space left on device"))
    assert errors.is_storage_full(errors.StorageFull())
    for other in (OSError(errno.EIO, "I/O error"), FileNotFoundError("gone"), ValueError("no")):
        assert not errors.is_storage_full(other)
