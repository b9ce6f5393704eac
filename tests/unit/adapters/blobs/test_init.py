"""What every blob store does (cardvault.adapters.blobs), on local disk and on S3 on a real S3
server (SeaweedFS) of the tests' own; and the Content-Disposition both answer with."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cardvault.adapters.blobs import BlobStore, content_disposition, store_from_settings
from cardvault.adapters.blobs.s3 import S3Store


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest) -> BlobStore:
    if request.param == "local":
        return request.getfixturevalue("local_store")
    made = store_from_settings(request.getfixturevalue("s3_settings"))
    assert isinstance(made, S3Store)
    made.delete(made.keys())  # the package's tests share the bucket
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
