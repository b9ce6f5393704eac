"""Blobs on S3-compatible object storage (production), through boto3: presigned PUT and GET
URLs, streamed multipart writes, and batched deletes. A server out of reach is StoreUnreachable,
after boto3's own retries, within bounds short enough for an API request to answer in time."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardvault.adapters import tracing
from cardvault.adapters.blobs import (
    CHUNK,
    IMMUTABLE,
    ObjectChanged,
    StoredObject,
    StoreUnreachable,
    UploadTarget,
    content_disposition,
)

if TYPE_CHECKING:  # boto3's generated stubs, installed with the test tools
    from types_boto3_s3.client import S3Client
    from types_boto3_s3.type_defs import CompletedPartTypeDef, GetObjectRequestTypeDef

PART = 16 * 1024 * 1024  # bytes of each part of an S3 multipart upload (S3 takes 5 MiB to 5 GiB)
# A server out of reach costs a call at most ATTEMPTS tries, each of CONNECT_SECONDS to connect
# and READ_SECONDS without a byte, and boto3's backoff between them (at most 1 s, then 2 s):
# about 20 s, so a request of the API that meets a server gone quiet still answers (503) in
# time. The calls a server answers only once its work is done (a copy, a part stored, a
# multipart upload completed) wait WORK_SECONDS for a byte instead.
CONNECT_SECONDS = 3
READ_SECONDS = 5
WORK_SECONDS = 60
ATTEMPTS = 3


@contextmanager
def _reaching() -> Iterator[None]:
    """Turn the errors of a server out of reach (no connection, a connection that broke or
    went quiet, a 5xx answer through every retry) into StoreUnreachable."""
    from boto3.exceptions import RetriesExceededError
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as NoConnection

    try:
        yield
    except (NoConnection, HTTPClientError, RetriesExceededError) as exc:  # the last: a download's
        raise StoreUnreachable(str(exc)) from exc
    except ClientError as exc:
        if int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0) >= 500:
            raise StoreUnreachable(str(exc)) from exc
        raise


class S3Store:
    """Objects in one bucket of an S3-compatible service, through boto3."""

    def __init__(self, s3: Any) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = s3.bucket

        def client(read_seconds: float) -> S3Client:
            return boto3.client(
                "s3",
                endpoint_url=s3.endpoint_url,
                region_name=s3.region,
                aws_access_key_id=s3.access_key_id,
                aws_secret_access_key=s3.secret_access_key,
                config=Config(
                    signature_version="s3v4",
                    s3={"addressing_style": "path" if s3.path_style else "auto"},
                    connect_timeout=CONNECT_SECONDS,
                    read_timeout=read_seconds,
                    retries={"max_attempts": ATTEMPTS, "mode": "standard"},
                ),
            )

        self._client = client(READ_SECONDS)
        self._working = client(WORK_SECONDS)  # for the calls answered once their work is done

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

    @tracing.traced("blob stat")
    def stat(self, key: str) -> StoredObject | None:
        from botocore.exceptions import ClientError

        try:
            with _reaching():
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

    @tracing.traced("blob read")
    def read(self, key: str, length: int, *, etag: str | None = None) -> bytes:
        from botocore.exceptions import ClientError

        request: GetObjectRequestTypeDef = {
            "Bucket": self.bucket,
            "Key": key,
            "Range": f"bytes=0-{max(length, 1) - 1}",
        }
        if etag:
            request["IfMatch"] = etag
        try:
            with _reaching():
                answer = self._client.get_object(**request)
                return bytes(answer["Body"].read())[:length]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                raise ObjectChanged(key) from exc
            raise

    @tracing.traced("blob download")
    def download(self, key: str, path: Path) -> None:
        with _reaching():
            self._client.download_file(self.bucket, key, str(path))

    @tracing.traced("blob put")
    def put(self, key: str, data: bytes, *, content_type: str) -> StoredObject:
        with _reaching():
            answer = self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        return StoredObject(key=key, size=len(data), etag=answer["ETag"], content_type=content_type)

    @tracing.traced("blob copy")
    def copy(self, source: str, target: str, *, etag: str) -> None:
        from botocore.exceptions import ClientError

        try:
            with _reaching():
                self._working.copy_object(
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

    def stream(self, key: str, *, start: int = 0) -> Generator[bytes, None, None]:
        from botocore.exceptions import ClientError

        request: GetObjectRequestTypeDef = {"Bucket": self.bucket, "Key": key}
        if start:
            request["Range"] = f"bytes={start}-"
        try:
            with _reaching():
                answer = self._client.get_object(**request)
        except ClientError as exc:
            if self._missing(exc):
                raise FileNotFoundError(key) from exc
            raise
        body = answer["Body"]
        try:
            with _reaching():
                yield from body.iter_chunks(CHUNK)
        finally:
            body.close()

    @tracing.traced("blob write")
    def write(self, key: str, chunks: Iterable[bytes], *, content_type: str) -> StoredObject:
        from botocore.exceptions import BotoCoreError, ClientError

        # Parts of PART bytes as they fill (boto3's upload_fileobj over a stream buffered
        # far more); on any error the upload is aborted, so no part is kept.
        with _reaching():
            upload = self._client.create_multipart_upload(
                Bucket=self.bucket, Key=key, ContentType=content_type
            )
        upload_id, size = upload["UploadId"], 0
        parts: list[CompletedPartTypeDef] = []
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
            with _reaching():
                answer = self._working.complete_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
                )
        except BaseException:
            # The error that ended the write is the one to raise: an abort that fails too (the
            # server out of reach) leaves the parts to forget_partial_writes.
            with suppress(BotoCoreError, ClientError):
                self._client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise
        return StoredObject(key=key, size=size, etag=answer["ETag"], content_type=content_type)

    def _part(self, key: str, upload_id: str, number: int, data: bytes) -> CompletedPartTypeDef:
        with _reaching():
            answer = self._working.upload_part(
                Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data
            )
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def forget_partial_writes(self, older_than_seconds: float, *, prefix: str) -> int:
        cutoff, removed = time.time() - older_than_seconds, 0
        with _reaching():
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

    @tracing.traced("blob delete")
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
        with _reaching():
            answer = self._client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
            )
        failed = [e for e in answer.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if failed:
            raise OSError(f"S3 did not delete {len(failed)} objects, first: {failed[0]}")

    def keys(self, prefix: str = "") -> Iterator[str]:
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        with _reaching():
            for page in pages:
                yield from (item["Key"] for item in page.get("Contents", []))
