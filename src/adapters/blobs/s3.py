"""Blobs on S3-compatible object storage (production), through boto3: presigned PUT and GET
URLs, streamed multipart writes, and batched deletes."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardvault.adapters.blobs import (
    CHUNK,
    IMMUTABLE,
    ObjectChanged,
    StoredObject,
    UploadTarget,
    content_disposition,
)

if TYPE_CHECKING:  # boto3's generated stubs, installed with the test tools
    from types_boto3_s3.type_defs import CompletedPartTypeDef, GetObjectRequestTypeDef

PART = 16 * 1024 * 1024  # bytes of each part of an S3 multipart upload (S3 takes 5 MiB to 5 GiB)


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

        request: GetObjectRequestTypeDef = {
            "Bucket": self.bucket,
            "Key": key,
            "Range": f"bytes=0-{max(length, 1) - 1}",
        }
        if etag:
            request["IfMatch"] = etag
        try:
            answer = self._client.get_object(**request)
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

    def stream(self, key: str, *, start: int = 0) -> Generator[bytes, None, None]:
        from botocore.exceptions import ClientError

        request: GetObjectRequestTypeDef = {"Bucket": self.bucket, "Key": key}
        if start:
            request["Range"] = f"bytes={start}-"
        try:
            answer = self._client.get_object(**request)
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
            answer = self._client.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            self._client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise
        return StoredObject(key=key, size=size, etag=answer["ETag"], content_type=content_type)

    def _part(self, key: str, upload_id: str, number: int, data: bytes) -> CompletedPartTypeDef:
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
