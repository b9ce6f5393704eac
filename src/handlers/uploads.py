"""Uploads: the URL a file's bytes are PUT to, before a card takes them."""

from __future__ import annotations

from typing import Any

from cardvault.domain.files import uploads
from cardvault.handlers.http import runtime


def create_upload(body: dict[str, Any], user: str) -> dict[str, Any]:
    rt = runtime.current()
    with rt.db.transaction() as session:
        issued = uploads.issue(
            session,
            rt.store,
            account_id=user,
            file_name=body["fileName"],
            file_size=body["fileSize"],
            mime_type=body["mimeType"],
            quotas=rt.quotas,
        )
    return upload_json(issued)


def upload_json(issued: uploads.Issued) -> dict[str, Any]:
    """Where and how to PUT an upload's bytes."""
    return {
        "fileKey": issued.upload.id,
        "uploadUrl": issued.target.url,
        "method": "PUT",
        "headers": issued.target.headers,
        "expiresAt": int(issued.target.expires_at * 1000),
        "maxFileSize": issued.max_file_size,
    }
