"""The local disk store (cardvault.adapters.blobs.local): an upload's body as it arrives, its
signed URLs, the keys it refuses, and its writes on a full disk."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cardvault.adapters.blobs.local import LocalDiskStore, UploadRefused
from harness.faults.disk import Filler


class TestLocalReceive:
    @staticmethod
    async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    def test_stores_exactly_the_declared_bytes_with_an_s3_shaped_etag(
        self, local_store: LocalDiskStore
    ) -> None:
        store = local_store
        stored = asyncio.run(
            store.receive("k/x", self._chunks(b"ab", b"cd"), size=4, content_type="text/plain")
        )
        assert stored.etag == f'"{hashlib.md5(b"abcd", usedforsecurity=False).hexdigest()}"'
        assert store.stat("k/x") == stored

    @pytest.mark.parametrize(
        ("parts", "status"), [((b"abc", b"de"), 413), ((b"abc",), 400)], ids=["longer", "shorter"]
    )
    def test_refuses_a_body_of_another_length_and_keeps_nothing(
        self, tmp_path: Path, local_store: LocalDiskStore, parts: tuple[bytes, ...], status: int
    ) -> None:
        store = local_store
        with pytest.raises(UploadRefused) as refused:
            asyncio.run(store.receive("k/x", self._chunks(*parts), size=4, content_type="text/plain"))
        assert refused.value.status == status
        assert store.stat("k/x") is None
        assert list((tmp_path / "blobs" / "tmp").iterdir()) == []

    def test_two_bodies_for_one_url_at_once_store_one(self, local_store: LocalDiskStore) -> None:
        store = local_store

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

    def test_upload_tokens_are_signed_and_expire(self, local_store: LocalDiskStore) -> None:
        store = local_store
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
    def test_refuses_keys_that_leave_its_directory(self, local_store: LocalDiskStore, key: str) -> None:
        with pytest.raises(ValueError, match="not an object key"):
            local_store.put(key, b"x", content_type="text/plain")


async def _body(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _left_behind(store: LocalDiskStore) -> list[str]:
    """What failed writes left in the store's own folders (nothing may stay of them)."""
    return [str(p.relative_to(store.root)) for p in store.root.rglob("*") if p.is_file()]


class TestLocalOnAFullDisk:
    """Every write that finds the disk full fails with ENOSPC, keeps nothing of itself (no
    partial file holding space, nothing taken for whole), and works once room is made."""

    @pytest.fixture
    def store(self, blobs_disk: Path, local_store: LocalDiskStore) -> LocalDiskStore:
        assert local_store.root == blobs_disk
        return local_store

    def test_a_put_fails_and_leaves_no_partial_file(self, store: LocalDiskStore) -> None:
        with Filler(store.root), pytest.raises(OSError) as failed:
            store.put("k/x", b"x" * 20_000, content_type="text/plain")
        assert failed.value.errno == errno.ENOSPC
        assert _left_behind(store) == []
        assert store.put("k/x", b"x" * 20_000, content_type="text/plain").size == 20_000

    def test_an_upload_body_fails_and_its_url_takes_it_again(self, store: LocalDiskStore) -> None:
        with Filler(store.root), pytest.raises(OSError) as failed:
            asyncio.run(store.receive("k/x", _body(b"ab" * 10_000), size=20_000, content_type="text/plain"))
        assert failed.value.errno == errno.ENOSPC
        assert _left_behind(store) == []
        stored = asyncio.run(
            store.receive("k/x", _body(b"ab" * 10_000), size=20_000, content_type="text/plain")
        )
        assert store.stat("k/x") == stored

    def test_a_disk_that_reports_no_room_only_at_fsync_gets_no_etag_answered(
        self, store: LocalDiskStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # As an NFS share or a thin volume may: the bytes are taken, the room is found missing
        # when they are flushed to the disk.
        def no_room(fd: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", no_room)
        with pytest.raises(OSError, match="No space"):
            asyncio.run(store.receive("k/x", _body(b"abcd"), size=4, content_type="text/plain"))
        assert store.stat("k/x") is None and _left_behind(store) == []

    def test_a_copy_fails_and_leaves_no_partial_file(self, store: LocalDiskStore) -> None:
        source = store.put("k/source", b"x" * 20_000, content_type="text/plain")
        with Filler(store.root), pytest.raises(OSError) as failed:
            store.copy("k/source", "k/copy", etag=source.etag)
        assert failed.value.errno == errno.ENOSPC
        assert store.stat("k/copy") is None
        assert sorted(_left_behind(store)) == ["meta/k/source", "objects/k/source"]
        store.copy("k/source", "k/copy", etag=source.etag)
        assert store.read("k/copy", 20_000) == b"x" * 20_000
