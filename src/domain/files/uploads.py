"""Uploads: a URL to PUT a file's bytes to, then a card (or a link's replaced image) that takes
the stored file. The file is judged by its bytes when it is taken, never by the declared type.

An upload's object lives at ``accounts/<account>/uploads/<fileKey>``. A card that takes it gets
its own copy (``accounts/<account>/files/<fileKey>/<name>``: a hard link on local disk, a copy
in the store on S3), so a second PUT to a still valid URL cannot change a card's file. Uploads
not taken within KEEP_MS are deleted with their objects; a taken one's upload object is deleted
when it is taken."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cardvault.adapters.blobs import BlobStore, ObjectChanged, StoredObject, UploadTarget
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import (
    FileTooLarge,
    InvalidInput,
    UnsupportedType,
    UploadChanged,
    UploadIncomplete,
    UploadNotFound,
    UploadUsed,
)
from cardvault.domain.files import filetypes
from cardvault.domain.files.doomed import doom
from cardvault.domain.files.filetypes import FileType
from cardvault.domain.files.quotas import NO_QUOTAS, Quotas, count_deleted_uploads, ensure_room
from cardvault.domain.ids import is_well_formed, new_id
from cardvault.domain.models import Card, Upload

URL_SECONDS = 15 * 60  # how long an upload URL takes a PUT
KEEP_MS = 24 * 3600 * 1000  # how long an upload waits for a card to take it
_REQUIRED_ETAG = {
    "fields": [{"location": "body", "field": "fileEtag", "message": "is required with fileKey"}],
}
# Declared types refused at once (the bytes decide the rest when a card takes the file).
REFUSED_TYPES = {
    "image/svg+xml": "svg",
    "image/heic": "heic",
    "image/heif": "heic",
    "image/heic-sequence": "heic",
    "image/heif-sequence": "heic",
}
_DECLARED_KINDS = {"image/": "image", "video/": "video", "audio/": "audio", "application/pdf": "pdf"}


@dataclasses.dataclass(frozen=True)
class Issued:
    """A new upload and where its bytes go."""

    upload: Upload
    target: UploadTarget
    max_file_size: int


@dataclasses.dataclass(frozen=True)
class TakenFile:
    """A stored upload, checked, as a card keeps it."""

    upload_id: str
    object_key: str
    etag: str
    size: int
    file_name: str
    file_type: FileType


def max_size_for(declared_type: str) -> int:
    """The most bytes a file of this declared type may have (the kind is checked again from the
    bytes when a card takes it)."""
    for prefix, kind in _DECLARED_KINDS.items():
        if declared_type.lower().startswith(prefix):
            return filetypes.MAX_BYTES[kind]
    return filetypes.LARGEST


def issue(
    session: Session,
    store: BlobStore,
    *,
    account_id: str,
    file_name: str,
    file_size: int,
    mime_type: str,
    purpose: str = "card",
    card_id: str | None = None,
    max_file_size: int | None = None,
    quotas: Quotas = NO_QUOTAS,
) -> Issued:
    """Record an upload and return the URL its bytes go to (QuotaExceeded past a quota)."""
    detected = REFUSED_TYPES.get(mime_type.lower())
    if detected:
        raise UnsupportedType(f"{mime_type} files are not accepted.", detected=detected)
    limit = max_file_size if max_file_size is not None else max_size_for(mime_type)
    if file_size > limit:
        raise FileTooLarge(limit=limit, actual=file_size, kind=mime_type)
    if file_size == 0:
        raise InvalidInput("fileSize is 0: an empty file cannot be uploaded.")
    ensure_room(session, account_id=account_id, file_size=file_size, quotas=quotas)
    upload_id = new_id("upl")
    now = now_ms()
    upload = Upload(
        id=upload_id,
        account_id=account_id,
        purpose=purpose,
        card_id=card_id,
        object_key=f"accounts/{account_id}/uploads/{upload_id}",
        file_name=filetypes.clean_file_name(file_name),
        declared_size=file_size,
        declared_type=mime_type,
        created_at=now,
        expires_at=now + URL_SECONDS * 1000,
    )
    session.add(upload)
    target = store.upload_target(
        upload.object_key, size=file_size, content_type=mime_type, expires_in=URL_SECONDS
    )
    return Issued(upload=upload, target=target, max_file_size=limit)


def issue_for_card(
    session: Session,
    store: BlobStore,
    *,
    card: Card,
    purpose: str,
    accepted: tuple[str, ...],
    refusal: str,
    max_file_size: int,
    file_name: str,
    file_size: int,
    mime_type: str,
    quotas: Quotas = NO_QUOTAS,
) -> Issued:
    """An upload that belongs to one card (its replaced image, its caption file), of one of
    the ``accepted`` declared types (UnsupportedType with ``refusal`` otherwise)."""
    if mime_type.lower() not in accepted:
        raise UnsupportedType(refusal, detected=REFUSED_TYPES.get(mime_type.lower()))
    return issue(
        session,
        store,
        account_id=card.account_id,
        file_name=file_name,
        file_size=file_size,
        mime_type=mime_type,
        purpose=purpose,
        card_id=card.id,
        max_file_size=max_file_size,
        quotas=quotas,
    )


@dataclasses.dataclass(frozen=True)
class CheckedUpload:
    """An upload whose stored file passed the checks, not yet taken."""

    upload: Upload
    stored: StoredObject
    file_type: FileType
    head: bytes  # its first SNIFF_BYTES


def check(
    session: Session,
    store: BlobStore,
    *,
    account_id: str,
    file_key: str,
    file_etag: str | None,
    purpose: str = "card",
    card_id: str | None = None,
    max_file_size: int | None = None,
) -> CheckedUpload:
    """Check an upload and its stored file, in order: the upload is this account's, for this
    purpose, not too old and not taken; the file is stored, with this ETag and the declared
    size; its bytes are an accepted type, within its kind's limit (or ``max_file_size``, the
    limit of what the upload is for)."""
    upload, stored, head = _stored_file(
        session,
        store,
        account_id=account_id,
        file_key=file_key,
        file_etag=file_etag,
        purpose=purpose,
        card_id=card_id,
    )
    try:
        file_type = filetypes.sniff(head, file_name=upload.file_name, complete=stored.size <= len(head))
    except filetypes.Refused as refused:
        raise UnsupportedType(str(refused), detected=refused.detected) from None
    limit = file_type.max_bytes if max_file_size is None else max_file_size
    if stored.size > limit:
        raise FileTooLarge(limit=limit, actual=stored.size, kind=file_type.file_kind)
    return CheckedUpload(upload=upload, stored=stored, file_type=file_type, head=head)


@dataclasses.dataclass(frozen=True)
class StoredUpload:
    """An upload whose stored file an import takes: its bytes are judged by the import's reader."""

    upload: Upload
    stored: StoredObject
    head: bytes  # its first SNIFF_BYTES


def check_for_import(
    session: Session, store: BlobStore, *, account_id: str, file_key: str, file_etag: str, max_file_size: int
) -> StoredUpload:
    """Check an upload for an import as ``check`` does for a card, but for its type: an
    export is judged by its format, not as a card's file."""
    upload, stored, head = _stored_file(
        session,
        store,
        account_id=account_id,
        file_key=file_key,
        file_etag=file_etag,
        purpose="card",
        card_id=None,
    )
    if stored.size > max_file_size:
        raise FileTooLarge(limit=max_file_size, actual=stored.size, kind="import")
    return StoredUpload(upload=upload, stored=stored, head=head)


def copy_for_import(store: BlobStore, checked: StoredUpload, *, import_id: str) -> str:
    """Copy an import's file where the import keeps it until it ends (outside any transaction,
    as ``copy_for_card``); return its key."""
    upload, stored = checked.upload, checked.stored
    kept = f"accounts/{upload.account_id}/imports/{import_id}/{_object_name(upload.file_name)}"
    try:
        store.copy(upload.object_key, kept, etag=stored.etag)
    except ObjectChanged:
        raise UploadChanged("The stored file changed while it was taken; try again.") from None
    return kept


def _stored_file(
    session: Session,
    store: BlobStore,
    *,
    account_id: str,
    file_key: str,
    file_etag: str | None,
    purpose: str,
    card_id: str | None,
) -> tuple[Upload, StoredObject, bytes]:
    """The checks every taker of an upload makes, in order: the upload is this account's, for
    this purpose, not too old and not taken; its file is stored, with this ETag and the
    declared size. Answer it, its stored object and its first SNIFF_BYTES (the bytes the ETag
    names, even if a PUT replaced them since)."""
    upload = _find(session, account_id=account_id, file_key=file_key, purpose=purpose, card_id=card_id)
    if upload.attached_at is not None:
        raise UploadUsed("A card or an import took this upload already; upload the file again.")
    stored = store.stat(upload.object_key)
    if stored is None:
        raise UploadIncomplete("No file has been stored for this upload yet: PUT it to the uploadUrl first.")
    if file_etag is None and purpose == "card":
        raise InvalidInput(
            "fileEtag is required with fileKey: send the ETag the upload's PUT answered.",
            details=_REQUIRED_ETAG,
        )
    if file_etag is not None and stored.etag.strip('"') != file_etag.strip('"'):
        raise UploadChanged(
            "The stored file's ETag is not fileEtag: send the ETag its PUT answered.",
            details={"etag": stored.etag},
        )
    if stored.size != upload.declared_size:
        raise UploadChanged(
            f"The stored file has {stored.size} bytes; the upload declared {upload.declared_size}."
        )
    try:
        head = store.read(upload.object_key, filetypes.SNIFF_BYTES, etag=stored.etag)
    except ObjectChanged:
        raise UploadChanged("The stored file changed while it was checked; try again.") from None
    return upload, stored, head


def copy_for_card(store: BlobStore, checked: CheckedUpload) -> TakenFile:
    """Copy a checked upload's file where a card keeps it (outside any transaction: on S3 a
    copy of 2 GiB takes a while); the card's transaction then marks the upload taken. A copy
    whose card never commits is deleted with its upload after KEEP_MS; a retry makes the same
    one."""
    upload, stored = checked.upload, checked.stored
    kept = f"accounts/{upload.account_id}/files/{upload.id}/{_object_name(upload.file_name)}"
    try:
        store.copy(upload.object_key, kept, etag=stored.etag)
    except ObjectChanged:
        raise UploadChanged("The stored file changed while it was taken; try again.") from None
    return TakenFile(
        upload_id=upload.id,
        object_key=kept,
        etag=stored.etag,
        size=stored.size,
        file_name=upload.file_name,
        file_type=checked.file_type,
    )


def mark_taken(session: Session, *, account_id: str, file_key: str) -> Upload:
    """Mark a checked upload taken, in the transaction that uses it (UploadUsed when another
    request took it meanwhile). The caller then takes its declared size off the account's
    pending bytes (quotas.count), after its other locks."""
    upload = session.scalars(
        select(Upload).where(Upload.id == file_key, Upload.account_id == account_id).with_for_update()
    ).one_or_none()
    if upload is None:
        raise UploadNotFound(f"No upload of this account has the key {file_key[:80]!r}.")
    if upload.attached_at is not None:
        raise UploadUsed("This upload was used meanwhile; upload the file again.")
    upload.attached_at = now_ms()
    doom(session, [upload.object_key])  # what was made of it is kept
    return upload


def replacement_keys(*, account_id: str, card_id: str, upload_id: str) -> tuple[str, str, str]:
    """The objects a link card's replaced image made from this upload is kept as: 1200, 256
    and 48 px WebP."""
    base = f"accounts/{account_id}/renditions/{card_id}/{upload_id}"
    return f"{base}-1200.webp", f"{base}-256.webp", f"{base}-48.webp"


def captions_key(*, account_id: str, card_id: str, upload_id: str) -> str:
    """The object an audio or video card's caption file made from this upload is kept as."""
    return f"accounts/{account_id}/captions/{card_id}/{upload_id}"


def _object_name(file_name: str) -> str:
    """The file name as the last part of an object key: ASCII letters, digits, dot, dash and
    underscore (the exact name is kept in the database)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in file_name)
    return safe.strip(".")[-100:] or "file"


def _find(session: Session, *, account_id: str, file_key: str, purpose: str, card_id: str | None) -> Upload:
    missing = UploadNotFound(f"No upload of this account has the key {file_key[:80]!r}.")
    if not is_well_formed(file_key) or not file_key.startswith("upl_"):
        raise missing
    # No lock: this is the check before the work; the work's transaction locks and checks the
    # upload again when it marks it taken (mark_taken).
    upload = session.scalars(
        select(Upload).where(Upload.id == file_key, Upload.account_id == account_id)
    ).one_or_none()
    if (
        upload is None
        or upload.purpose != purpose
        or upload.card_id != card_id
        or upload.created_at < now_ms() - KEEP_MS
    ):
        raise missing
    return upload


def read_text(store: BlobStore, checked: CheckedUpload) -> str:
    """A Markdown file's text (its size was checked against its limit); UnsupportedType when it
    is not UTF-8 after all (only its start was sniffed)."""
    try:
        data = store.read(checked.upload.object_key, checked.stored.size, etag=checked.stored.etag)
    except ObjectChanged:
        raise UploadChanged("The stored file changed while it was read; try again.") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise UnsupportedType("The Markdown file is not UTF-8 text.") from None


def forget_old(session: Session, *, batch_size: int) -> int:
    """Delete up to batch_size uploads older than KEEP_MS and doom their objects: each one's
    upload object, and the card's copy of one no card took (a copy made by a transaction that
    then failed); those no card took leave their accounts' pending bytes. Return how many were
    deleted."""
    old = session.scalars(
        select(Upload).where(Upload.created_at < now_ms() - KEEP_MS).limit(batch_size).with_for_update()
    ).all()
    if old:
        doom(session, list(_keys_of(old)))
        session.execute(delete(Upload).where(Upload.id.in_([u.id for u in old])))
        count_deleted_uploads(session, old)
    return len(old)


def _keys_of(uploads: Sequence[Upload]) -> Iterator[str]:
    for upload in uploads:
        yield upload.object_key
        if upload.attached_at is None and upload.purpose == "card":
            yield f"accounts/{upload.account_id}/files/{upload.id}/{_object_name(upload.file_name)}"
        elif upload.attached_at is None and upload.card_id is not None and upload.purpose == "thumbnail":
            yield from replacement_keys(
                account_id=upload.account_id, card_id=upload.card_id, upload_id=upload.id
            )
        elif upload.attached_at is None and upload.card_id is not None and upload.purpose == "captions":
            yield captions_key(account_id=upload.account_id, card_id=upload.card_id, upload_id=upload.id)
