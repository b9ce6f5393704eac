"""The S3 store (cardvault.adapters.blobs.s3) on a real S3 server (SeaweedFS) of the tests' own:
what its presigned URLs bind."""

from __future__ import annotations

import hashlib

import httpx

from cardvault.adapters.blobs import store_from_settings
from cardvault.settings import Settings


class TestS3:
    def test_a_presigned_put_binds_size_and_type(self, s3_settings: Settings) -> None:
        store = store_from_settings(s3_settings)
        data = b"%PDF-1.7\n" + b"0" * 100
        target = store.upload_target(
            "up/doc.pdf", size=len(data), content_type="application/pdf", expires_in=60
        )
        assert target.headers == {"Content-Type": "application/pdf"}
        other_type = httpx.put(target.url, content=data, headers={"Content-Type": "text/html"})
        longer = httpx.put(target.url, content=data + b"1", headers=target.headers)
        assert (other_type.status_code, longer.status_code) == (403, 403)
        assert store.stat("up/doc.pdf") is None
        done = httpx.put(target.url, content=data, headers=target.headers)
        assert done.status_code == 200
        assert done.headers["ETag"] == f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
        stored = store.stat("up/doc.pdf")
        assert stored is not None and stored.etag == done.headers["ETag"]

    def test_a_download_url_answers_with_the_type_and_disposition_it_names(
        self, s3_settings: Settings
    ) -> None:
        store = store_from_settings(s3_settings)
        store.put("dl/page.html", b"<script>alert(1)</script>", content_type="text/html")
        url = store.download_url(
            "dl/page.html", file_name="page.html", content_type="text/plain", attachment=True, expires_in=60
        )
        got = httpx.get(url)
        assert got.status_code == 200 and got.content == b"<script>alert(1)</script>"
        assert got.headers["Content-Type"] == "text/plain"
        assert got.headers["Content-Disposition"].startswith('attachment; filename="page.html"')
        assert httpx.get(url.replace("Signature=", "Signature=0")).status_code == 403
