"""The blob stores: local disk, and S3 on a real S3 server (SeaweedFS) of the test's own."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from cardvault.adapters.blobs import (
    BlobStore,
    LocalDiskStore,
    S3Store,
    UploadRefused,
    content_disposition,
    store_from_settings,
)
from cardvault.settings import Settings
from tests.contract.servers import seaweedfs_server

SECRET = "k" * 48


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with seaweedfs_server(tmp_path_factory.mktemp("s3")) as env:
        yield env


def _local(tmp_path: Path) -> LocalDiskStore:
    return LocalDiskStore(tmp_path / "blobs", secret_key=SECRET, public_url="http://127.0.0.1:9")


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return _local(tmp_path)
    env = request.getfixturevalue("s3_env")
    settings = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_SECRET_KEY": SECRET, **env})
    made = store_from_settings(settings)
    assert isinstance(made, S3Store)
    made.delete(made.keys())  # the module's tests share the bucket
    return made


def test_put_stat_read_and_delete(store: BlobStore) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    stored = store.put("a/one.bin", data, content_type="image/png")
    assert stored.etag == f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'
    seen = store.stat("a/one.bin")
    assert seen is not None
    assert (seen.size, seen.etag, seen.content_type) == (len(data), stored.etag, "image/png")
    assert store.read("a/one.bin", 8) == data[:8]
    assert store.read("a/one.bin", 1 << 20) == data
    store.put("a/two.bin", b"x", content_type="text/plain")
    store.put("b/three.bin", b"y", content_type="text/plain")
    assert sorted(store.keys("a/")) == ["a/one.bin", "a/two.bin"]
    store.delete(["a/one.bin", "a/missing.bin"])
    assert store.stat("a/one.bin") is None
    assert sorted(store.keys()) == ["a/two.bin", "b/three.bin"]


def test_download_copies_the_object_to_a_file(store: BlobStore, tmp_path: Path) -> None:
    store.put("c/file.bin", b"hello" * 1000, content_type="application/octet-stream")
    store.download("c/file.bin", tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b"hello" * 1000


def test_content_disposition_keeps_the_exact_name_and_an_ascii_fallback() -> None:
    assert content_disposition('rép "x";.pdf', attachment=True) == (
        "attachment; filename=\"r_p _x__.pdf\"; filename*=UTF-8''r%C3%A9p%20%22x%22%3B.pdf"
    )
    assert content_disposition("a.png", attachment=False).startswith('inline; filename="a.png"')


class TestS3:
    def test_a_presigned_put_binds_size_and_type(self, s3_env: dict[str, str], tmp_path: Path) -> None:
        settings = Settings.from_env(
            {"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_SECRET_KEY": SECRET, **s3_env}
        )
        store = store_from_settings(settings)
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
        self, s3_env: dict[str, str], tmp_path: Path
    ) -> None:
        settings = Settings.from_env(
            {"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_SECRET_KEY": SECRET, **s3_env}
        )
        store = store_from_settings(settings)
        store.put("dl/page.html", b"<script>alert(1)</script>", content_type="text/html")
        url = store.download_url(
            "dl/page.html", file_name="page.html", content_type="text/plain", attachment=True, expires_in=60
        )
        got = httpx.get(url)
        assert got.status_code == 200 and got.content == b"<script>alert(1)</script>"
        assert got.headers["Content-Type"] == "text/plain"
        assert got.headers["Content-Disposition"].startswith('attachment; filename="page.html"')
        assert httpx.get(url.replace("Signature=", "Signature=0")).status_code == 403


class TestLocalReceive:
    @staticmethod
    async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    def test_stores_exactly_the_declared_bytes_with_an_s3_shaped_etag(self, tmp_path: Path) -> None:
        store = _local(tmp_path)
        stored = asyncio.run(
            store.receive("k/x", self._chunks(b"ab", b"cd"), size=4, content_type="text/plain")
        )
        assert stored.etag == f'"{hashlib.md5(b"abcd", usedforsecurity=False).hexdigest()}"'
        assert store.stat("k/x") == stored

    @pytest.mark.parametrize(
        ("parts", "status"), [((b"abc", b"de"), 413), ((b"abc",), 400)], ids=["longer", "shorter"]
    )
    def test_refuses_a_body_of_another_length_and_keeps_nothing(
        self, tmp_path: Path, parts: tuple[bytes, ...], status: int
    ) -> None:
        store = _local(tmp_path)
        with pytest.raises(UploadRefused) as refused:
            asyncio.run(store.receive("k/x", self._chunks(*parts), size=4, content_type="text/plain"))
        assert refused.value.status == status
        assert store.stat("k/x") is None
        assert list((tmp_path / "blobs" / "tmp").iterdir()) == []

    def test_two_bodies_for_one_url_at_once_store_one(self, tmp_path: Path) -> None:
        store = _local(tmp_path)

        async def slow(*parts: bytes) -> AsyncIterator[bytes]:
            for part in parts:
                await asyncio.sleep(0.05)
                yield part

        async def both() -> list[object]:
            first = store.receive("k/x", slow(b"ab", b"cd"), size=4, content_type="text/plain")
            second = store.receive("k/x", self._chunks(b"wxyz"), size=4, content_type="text/plain")
            return await asyncio.gather(first, second, return_exceptions=True)

        stored, refused = asyncio.run(both())
        assert isinstance(refused, UploadRefused) and refused.status == 409
        assert store.stat("k/x") == stored and store.read("k/x", 4) == b"abcd"

    def test_upload_tokens_are_signed_and_expire(self, tmp_path: Path) -> None:
        store = _local(tmp_path)
        target = store.upload_target("k/x", size=4, content_type="text/plain", expires_in=60)
        token = target.url.rsplit("/", 1)[1]
        assert store.upload_claims(token)["k"] == "k/x"
        with pytest.raises(UploadRefused, match="signature"):
            store.upload_claims(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1])
        with pytest.raises(UploadRefused, match="signature"):
            store.download_claims(token)  # an upload token is no download token
        expired = store.upload_target("k/x", size=4, content_type="text/plain", expires_in=-1)
        with pytest.raises(UploadRefused, match="expired"):
            store.upload_claims(expired.url.rsplit("/", 1)[1])

    @pytest.mark.parametrize("key", ["", "/etc/passwd", "a/../../b", "a//b", "./a"])
    def test_refuses_keys_that_leave_its_directory(self, tmp_path: Path, key: str) -> None:
        with pytest.raises(ValueError, match="not an object key"):
            _local(tmp_path).put(key, b"x", content_type="text/plain")
