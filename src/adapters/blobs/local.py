"""Blobs on local disk (the embedded default): objects as files under the data directory,
uploads and downloads through URLs the app signs and serves itself (cardvault.handlers.http.files)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import itsdangerous

from cardvault.adapters import tracing
from cardvault.adapters.blobs import CHUNK, ObjectChanged, StoredObject, UploadTarget

_UPLOAD_SALT = "cardvault.upload"
_DOWNLOAD_SALT = "cardvault.download"


class UploadRefused(Exception):
    """A PUT to a local upload URL that the URL does not allow."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class LocalDiskStore:
    """Objects as files under ``root``: ``objects/<key>`` holds the bytes and ``meta/<key>``
    the ETag and content type. Writes go to ``tmp/`` and are renamed into place, so a reader
    sees a whole object or none."""

    def __init__(self, root: Path, *, secret_key: str, public_url: str) -> None:
        self.root = root
        self.public_url = public_url
        self._signer = itsdangerous.URLSafeSerializer(
            secret_key, signer_kwargs={"digest_method": hashlib.sha256}
        )
        for part in ("objects", "meta", "tmp", "claims"):
            (root / part).mkdir(parents=True, exist_ok=True)

    # -- signed URLs -------------------------------------------------------------------------

    def upload_target(self, key: str, *, size: int, content_type: str, expires_in: int) -> UploadTarget:
        expires_at = time.time() + expires_in
        token = self._signer.dumps(
            {"k": key, "n": size, "t": content_type, "e": expires_at}, salt=_UPLOAD_SALT
        )
        return UploadTarget(
            url=f"{self.public_url}/files/upload/{token}",
            headers={"Content-Type": content_type},
            expires_at=expires_at,
        )

    def download_url(
        self, key: str, *, file_name: str, content_type: str, attachment: bool, expires_in: int
    ) -> str:
        claims = {"k": key, "f": file_name, "t": content_type, "a": attachment, "e": time.time() + expires_in}
        return f"{self.public_url}/files/{self._signer.dumps(claims, salt=_DOWNLOAD_SALT)}"

    def upload_claims(self, token: str) -> dict[str, Any]:
        """The key, size and type an upload URL's token allows; UploadRefused when it was not
        signed by us or has expired."""
        return self._claims(token, _UPLOAD_SALT)

    def download_claims(self, token: str) -> dict[str, Any]:
        """The key, file name, type and disposition a download URL's token names."""
        return self._claims(token, _DOWNLOAD_SALT)

    def _claims(self, token: str, salt: str) -> dict[str, Any]:
        try:
            claims = self._signer.loads(token, salt=salt)
        except itsdangerous.BadData:
            raise UploadRefused(403, "URL_INVALID", "The URL's signature is not valid.") from None
        if not isinstance(claims, dict) or claims.get("e", 0) < time.time():
            raise UploadRefused(403, "URL_EXPIRED", "The URL has expired; ask for a new one.")
        return claims

    # -- objects -----------------------------------------------------------------------------

    def _path(self, part: str, key: str) -> Path:
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in key.split("/")):
            raise ValueError(f"not an object key: {key!r}")
        return self.root / part / key

    async def receive(
        self, key: str, chunks: AsyncIterator[bytes], *, size: int, content_type: str
    ) -> StoredObject:
        """Write an upload's body as it arrives, never more than ``size`` bytes (UploadRefused
        413 at the first byte over; 400 when it ends short); the object appears whole or not
        at all."""
        claim = self._path("claims", key)  # one body per upload URL, even two at once
        claim.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            raise UploadRefused(
                409, "UPLOAD_COMPLETE", "A file was stored, or is being stored, through this URL already."
            ) from None
        digest, received = hashlib.md5(usedforsecurity=False), 0
        tmp = self.root / "tmp" / uuid.uuid4().hex
        stored = False
        try:
            async with await anyio.open_file(tmp, "wb") as out:
                async for chunk in chunks:
                    received += len(chunk)
                    if received > size:
                        raise UploadRefused(
                            413, "FILE_TOO_LARGE", f"The body is longer than the {size} bytes this URL takes."
                        )
                    digest.update(chunk)
                    await out.write(chunk)
                if received != size:
                    raise UploadRefused(
                        400, "INVALID_INPUT", f"The body has {received} bytes; this URL takes exactly {size}."
                    )
                # On disk before the ETag is answered: a disk that defers its errors (a full
                # NFS share or quota, a thin volume) reports them here, not after the answer.
                await out.flush()
                await anyio.to_thread.run_sync(os.fsync, out.wrapped.fileno())
            etag = f'"{digest.hexdigest()}"'
            await anyio.to_thread.run_sync(self._commit, tmp, key, etag, content_type)
            stored = True
        finally:
            tmp.unlink(missing_ok=True)
            if not stored:
                claim.unlink(missing_ok=True)  # a failed body leaves the URL usable
        return StoredObject(key=key, size=size, etag=etag, content_type=content_type)

    def _commit(self, tmp: Path, key: str, etag: str, content_type: str) -> None:
        data, meta = self._path("objects", key), self._path("meta", key)
        data.parent.mkdir(parents=True, exist_ok=True)
        meta.parent.mkdir(parents=True, exist_ok=True)
        self._write_meta(key, etag, content_type)
        os.replace(tmp, data)

    def _write_meta(self, key: str, etag: str, content_type: str) -> None:
        meta_tmp = self.root / "tmp" / f"{uuid.uuid4().hex}.meta"
        try:  # a full disk fails the write part-way: nothing of it may stay behind
            meta_tmp.write_text(f"{etag}\n{content_type}\n")
            os.replace(meta_tmp, self._path("meta", key))
        finally:
            meta_tmp.unlink(missing_ok=True)

    @tracing.traced("blob stat")
    def stat(self, key: str) -> StoredObject | None:
        try:
            size = self._path("objects", key).stat().st_size
            etag, content_type = self._path("meta", key).read_text().splitlines()[:2]
        except (FileNotFoundError, ValueError):
            return None
        return StoredObject(key=key, size=size, etag=etag, content_type=content_type)

    def open(self, key: str) -> Path:
        """The file holding the object (for the download route)."""
        return self._path("objects", key)

    @tracing.traced("blob read")
    def read(self, key: str, length: int, *, etag: str | None = None) -> bytes:
        # An object is written once (its upload URL takes one body): its ETag cannot change.
        with self._path("objects", key).open("rb") as f:
            return f.read(length)

    @tracing.traced("blob download")
    def download(self, key: str, path: Path) -> None:
        shutil.copyfile(self._path("objects", key), path)

    @tracing.traced("blob put")
    def put(self, key: str, data: bytes, *, content_type: str) -> StoredObject:
        tmp = self.root / "tmp" / uuid.uuid4().hex
        etag = f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
        try:
            tmp.write_bytes(data)
            self._commit(tmp, key, etag, content_type)
        finally:
            tmp.unlink(missing_ok=True)
        return StoredObject(key=key, size=len(data), etag=etag, content_type=content_type)

    def stream(self, key: str, *, start: int = 0) -> Generator[bytes, None, None]:
        with self._path("objects", key).open("rb") as f:
            f.seek(start)
            while chunk := f.read(CHUNK):
                yield chunk

    @tracing.traced("blob write")
    def write(self, key: str, chunks: Iterable[bytes], *, content_type: str) -> StoredObject:
        tmp = self.root / "tmp" / f"{key.split('/', 1)[0]}-{uuid.uuid4().hex}.part"
        size = 0
        try:
            with tmp.open("wb") as out:
                for chunk in chunks:
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())  # on disk before the name says it is whole
            # Not an MD5 (a gigabyte's took longer than zipping it): the object is written
            # once under its key, so the write's own id tells it apart, as on S3 multipart.
            etag = f'"{uuid.uuid4().hex}-1"'
            self._commit(tmp, key, etag, content_type)
        finally:
            tmp.unlink(missing_ok=True)
        return StoredObject(key=key, size=size, etag=etag, content_type=content_type)

    def forget_partial_writes(self, older_than_seconds: float, *, prefix: str) -> int:
        cutoff, removed = time.time() - older_than_seconds, 0
        for path in (self.root / "tmp").glob(f"{prefix.split('/', 1)[0]}-*.part"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                pass  # its write ended meanwhile
        return removed

    @tracing.traced("blob copy")
    def copy(self, source: str, target: str, *, etag: str) -> None:
        found = self.stat(source)
        if found is None or found.etag != etag:
            raise ObjectChanged(source)
        data, meta = self._path("objects", target), self._path("meta", target)
        data.parent.mkdir(parents=True, exist_ok=True)
        meta.parent.mkdir(parents=True, exist_ok=True)
        linked = self.root / "tmp" / uuid.uuid4().hex
        # A hard link shares the bytes without copying them; an upload replaces its file by
        # renaming a new one over it, which leaves the link's bytes as they were.
        os.link(self._path("objects", source), linked)
        try:
            self._write_meta(target, found.etag, found.content_type)
            os.replace(linked, data)
        finally:
            linked.unlink(missing_ok=True)

    @tracing.traced("blob delete")
    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            for part in ("objects", "meta", "claims"):
                self._path(part, key).unlink(missing_ok=True)

    def keys(self, prefix: str = "") -> Iterator[str]:
        objects = self.root / "objects"
        for path in sorted(objects.rglob("*")):
            key = path.relative_to(objects).as_posix()
            if path.is_file() and key.startswith(prefix):
                yield key
