"""The blob store: where uploaded files and their renditions are kept. Two implementations,
chosen by settings (``store_from_settings``): cardvault.adapters.blobs.local under the data
directory (the embedded default) and cardvault.adapters.blobs.s3 on S3-compatible object
storage (production). This module holds the protocol both follow and what they share.

Both follow S3's model. An upload is a PUT of the bytes to a short-lived URL that binds the
object's key, size and content type (a presigned PUT on S3; on local disk a signed URL the app
itself serves, see cardvault.handlers.http.files); the PUT answers the object's ``ETag`` (the MD5 of
its bytes, quoted, as S3 sends it). A download is a short-lived signed GET URL. Keys are made by
the domain, never by clients.

An S3 store's operations that reach its server raise StoreUnreachable while the server is out
of reach (signing a URL does not reach it)."""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Protocol

from cardvault.settings import Settings

IMMUTABLE = "private, max-age=31536000, immutable"
CHUNK = 1024 * 1024  # bytes read at a time


@dataclasses.dataclass(frozen=True)
class StoredObject:
    """What the store knows of one object."""

    key: str
    size: int
    # Quoted MD5 hex of the bytes, as S3 sends it ("\"9e107d9d...\""); of an object stored by
    # ``write``, an opaque value ending in "-N", as S3's multipart ETags.
    etag: str
    content_type: str


@dataclasses.dataclass(frozen=True)
class UploadTarget:
    """Where and how a client PUTs the bytes of one upload."""

    url: str
    headers: dict[str, str]  # to send with the PUT, exactly
    expires_at: float  # epoch seconds


class ObjectChanged(Exception):
    """The object is missing, or is not the one the caller names by its ETag."""


class StoreUnreachable(Exception):
    """The store could not be reached, the connection to it broke, it did not answer in time,
    or it answered that it cannot serve now (5xx), through the client's own retries: a passing
    fault, so the caller tries again later rather than treat the object as missing or broken."""


class BlobStore(Protocol):
    """The operations Card Vault needs of an object store."""

    def upload_target(self, key: str, *, size: int, content_type: str, expires_in: int) -> UploadTarget:
        """A URL that takes one PUT of exactly ``size`` bytes of ``content_type`` to ``key``."""
        ...

    def stat(self, key: str) -> StoredObject | None:
        """The object at ``key``, or None."""
        ...

    def read(self, key: str, length: int, *, etag: str | None = None) -> bytes:
        """The first ``length`` bytes of the object (fewer when it is shorter); with ``etag``,
        ObjectChanged unless the object still has it."""
        ...

    def download(self, key: str, path: Path) -> None:
        """Copy the object into a local file (for a worker to decode)."""
        ...

    def put(self, key: str, data: bytes, *, content_type: str) -> StoredObject:
        """Store ``data`` at ``key``, replacing what was there."""
        ...

    def stream(self, key: str, *, start: int = 0) -> Generator[bytes, None, None]:
        """The object's bytes from ``start`` on, a chunk of at most CHUNK bytes at a time
        (FileNotFoundError when it is missing)."""
        ...

    def write(self, key: str, chunks: Iterable[bytes], *, content_type: str) -> StoredObject:
        """Store the bytes ``chunks`` yields at ``key`` as they come, in constant memory; the
        object appears whole once they end, or not at all (an error from ``chunks`` or the
        store leaves nothing behind but what ``forget_partial_writes`` removes)."""
        ...

    def forget_partial_writes(self, older_than_seconds: float, *, prefix: str) -> int:
        """Remove what writes to keys under ``prefix`` that never ended (their process died)
        left, started more than this long ago; return how many."""
        ...

    def copy(self, source: str, target: str, *, etag: str) -> None:
        """Copy the object at ``source`` to ``target`` if its ETag is ``etag`` (ObjectChanged
        otherwise): a later write to ``source`` cannot change ``target``."""
        ...

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the objects; a missing one is no error."""
        ...

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every key that starts with ``prefix``."""
        ...

    def download_url(
        self, key: str, *, file_name: str, content_type: str, attachment: bool, expires_in: int
    ) -> str:
        """A signed GET URL of the object that answers with this type and disposition."""
        ...


def content_disposition(file_name: str, *, attachment: bool) -> str:
    """RFC 6266: the name in ASCII for old clients, and exact in UTF-8 (RFC 8187)."""
    kind = "attachment" if attachment else "inline"
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\;' else "_" for c in file_name)
    quoted = urllib.parse.quote(file_name, safe="")
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quoted}"


def store_from_settings(settings: Settings) -> BlobStore:
    """S3 when the settings name a bucket, else the local disk under the data directory."""
    # Imported here, not above: both stores build on this module's types.
    from cardvault.adapters.blobs.local import LocalDiskStore
    from cardvault.adapters.blobs.s3 import S3Store

    if settings.s3 is not None:
        return S3Store(settings.s3)
    return LocalDiskStore(
        settings.data_dir / "blobs", secret_key=settings.secret_key, public_url=settings.public_url
    )
