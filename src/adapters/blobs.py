"""The blob store: where uploaded files and their renditions are kept. Two implementations,
chosen by settings: ``LocalDiskStore`` under the data directory (the embedded default) and
``S3Store`` on S3-compatible object storage (production).

Both follow S3's model. An upload is a PUT of the bytes to a short-lived URL that binds the
object's key, size and content type (a presigned PUT on S3; on local disk a signed URL the app
itself serves, see cardvault.handlers.files); the PUT answers the object's ``ETag`` (the MD5 of
its bytes, quoted, as S3 sends it). A download is a short-lived signed GET URL. Keys are made by
the domain, never by clients."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import anyio
import itsdangerous

from cardvault.settings import Settings

_UPLOAD_SALT = "cardvault.upload"
_DOWNLOAD_SALT = "cardvault.download"
IMMUTABLE = "private, max-age=31536000, immutable"
CHUNK = 1024 * 1024  # bytes read at a time
PART = 16 * 1024 * 1024  # bytes of each part of an S3 multipart upload (S3 takes 5 MiB to 5 GiB)


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


class UploadRefused(Exception):
    """A PUT to a local upload URL that the URL does not allow."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ObjectChanged(Exception):
    """The object is missing, or is not the one the caller names by its ETag."""


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

    def stream(self, key: str, *, start: int = 0) -> Iterator[bytes]:
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
    if settings.s3 is not None:
        return S3Store(settings.s3)
    return LocalDiskStore(
        settings.data_dir / "blobs", secret_key=settings.secret_key, public_url=settings.public_url
    )


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
        meta_tmp = self.root / "tmp" / f"{uuid.uuid4().hex}.meta"
        meta_tmp.write_text(f"{etag}\n{content_type}\n")
        os.replace(meta_tmp, meta)
        os.replace(tmp, data)

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

    def read(self, key: str, length: int, *, etag: str | None = None) -> bytes:
        # An object is written once (its upload URL takes one body): its ETag cannot change.
        with self._path("objects", key).open("rb") as f:
            return f.read(length)

    def download(self, key: str, path: Path) -> None:
        shutil.copyfile(self._path("objects", key), path)

    def put(self, key: str, data: bytes, *, content_type: str) -> StoredObject:
        tmp = self.root / "tmp" / uuid.uuid4().hex
        tmp.write_bytes(data)
        etag = f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
        try:
            self._commit(tmp, key, etag, content_type)
        finally:
            tmp.unlink(missing_ok=True)
        return StoredObject(key=key, size=len(data), etag=etag, content_type=content_type)

    def stream(self, key: str, *, start: int = 0) -> Iterator[bytes]:
        with self._path("objects", key).open("rb") as f:
            f.seek(start)
            while chunk := f.read(CHUNK):
                yield chunk

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
            shutil.copyfile(self._path("meta", source), meta)
            os.replace(linked, data)
        finally:
            linked.unlink(missing_ok=True)

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


class S3Store:
    """Objects in one bucket of an S3-compatible service, through boto3."""

    def __init__(self, s3: Any) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = s3.bucket
        self._client = boto3.client(
            "s3",
            endpoint_url=s3.endpoint_url,
            region_name=s3.region,
            aws_access_key_id=s3.access_key_id,
            aws_secret_access_key=s3.secret_access_key,
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path" if s3.path_style else "auto"},
                connect_timeout=5,
                read_timeout=60,
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )

    def _missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        return code in ("404", "NoSuchKey", "NotFound")

    def upload_target(self, key: str, *, size: int, content_type: str, expires_in: int) -> UploadTarget:
        # Content-Length and Content-Type are signed: a PUT of another size or type is refused.
        url = self._client.generate_presigned_url(
            "put_object",
            Params={"Bucket": self.bucket, "Key": key, "ContentType": content_type, "ContentLength": size},
            ExpiresIn=expires_in,
        )
        return UploadTarget(
            url=url, headers={"Content-Type": content_type}, expires_at=time.time() + expires_in
        )

    def download_url(
        self, key: str, *, file_name: str, content_type: str, attachment: bool, expires_in: int
    ) -> str:
        return str(
            self._client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self.bucket,
                    "Key": key,
                    "ResponseContentType": content_type,
                    "ResponseContentDisposition": content_disposition(file_name, attachment=attachment),
                    "ResponseCacheControl": IMMUTABLE,  # an object's bytes never change under its key
                },
                ExpiresIn=expires_in,
            )
        )

    def stat(self, key: str) -> StoredObject | None:
        from botocore.exceptions import ClientError

        try:
            head = self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if self._missing(exc):
                return None
            raise
        return StoredObject(
            key=key,
            size=int(head["ContentLength"]),
            etag=head["ETag"],
            content_type=head.get("ContentType") or "application/octet-stream",
        )

    def read(self, key: str, length: int, *, etag: str | None = None) -> bytes:
        from botocore.exceptions import ClientError

        extra = {"IfMatch": etag} if etag else {}
        try:
            answer = self._client.get_object(
                Bucket=self.bucket, Key=key, Range=f"bytes=0-{max(length, 1) - 1}", **extra
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                raise ObjectChanged(key) from exc
            raise
        return bytes(answer["Body"].read())[:length]

    def download(self, key: str, path: Path) -> None:
        self._client.download_file(self.bucket, key, str(path))

    def put(self, key: str, data: bytes, *, content_type: str) -> StoredObject:
        answer = self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        return StoredObject(key=key, size=len(data), etag=answer["ETag"], content_type=content_type)

    def copy(self, source: str, target: str, *, etag: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self._client.copy_object(
                Bucket=self.bucket,
                Key=target,
                CopySource={"Bucket": self.bucket, "Key": source},
                CopySourceIfMatch=etag,
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "412", "NoSuchKey", "404"):
                raise ObjectChanged(source) from exc
            raise

    def stream(self, key: str, *, start: int = 0) -> Iterator[bytes]:
        from botocore.exceptions import ClientError

        extra = {"Range": f"bytes={start}-"} if start else {}
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=key, **extra)
        except ClientError as exc:
            if self._missing(exc):
                raise FileNotFoundError(key) from exc
            raise
        body = answer["Body"]
        try:
            yield from body.iter_chunks(CHUNK)
        finally:
            body.close()

    def write(self, key: str, chunks: Iterable[bytes], *, content_type: str) -> StoredObject:
        # Parts of PART bytes as they fill (boto3's upload_fileobj over a stream buffered
        # far more); on any error the upload is aborted, so no part is kept.
        upload = self._client.create_multipart_upload(Bucket=self.bucket, Key=key, ContentType=content_type)
        upload_id, parts, size = upload["UploadId"], [], 0
        buffer = bytearray()
        try:
            for chunk in chunks:
                buffer += chunk
                size += len(chunk)
                # Parts grow by PART every 1,000, so S3's 10,000 parts hold 880 GiB.
                while len(buffer) >= (size_now := PART * (1 + len(parts) // 1000)):
                    parts.append(self._part(key, upload_id, len(parts) + 1, bytes(buffer[:size_now])))
                    del buffer[:size_now]
            if buffer or not parts:
                parts.append(self._part(key, upload_id, len(parts) + 1, bytes(buffer)))
            answer = self._client.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            self._client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise
        return StoredObject(key=key, size=size, etag=answer["ETag"], content_type=content_type)

    def _part(self, key: str, upload_id: str, number: int, data: bytes) -> dict[str, Any]:
        answer = self._client.upload_part(
            Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data
        )
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def forget_partial_writes(self, older_than_seconds: float, *, prefix: str) -> int:
        cutoff, removed = time.time() - older_than_seconds, 0
        pages = self._client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        for page in pages:
            for upload in page.get("Uploads", []):
                if upload["Initiated"].timestamp() < cutoff:
                    self._client.abort_multipart_upload(
                        Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )
                    removed += 1
        return removed

    def delete(self, keys: Iterable[str]) -> None:
        batch: list[str] = []
        for key in keys:
            batch.append(key)
            if len(batch) == 1000:  # the most one DeleteObjects takes
                self._delete(batch)
                batch = []
        if batch:
            self._delete(batch)

    def _delete(self, keys: list[str]) -> None:
        answer = self._client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
        )
        failed = [e for e in answer.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if failed:
            raise OSError(f"S3 did not delete {len(failed)} objects, first: {failed[0]}")

    def keys(self, prefix: str = "") -> Iterator[str]:
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                yield item["Key"]
