"""What the blob store tests share: one real S3 server (SeaweedFS) for the package's tests, its
settings, and a local disk store in the test's own directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cardvault.adapters.blobs.local import LocalDiskStore
from cardvault.settings import Settings
from harness.servers import seaweedfs_server

SECRET = "k" * 48


@pytest.fixture(scope="package")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with seaweedfs_server(tmp_path_factory.mktemp("s3")) as env:
        yield env


@pytest.fixture
def s3_settings(s3_env: dict[str, str], tmp_path: Path) -> Settings:
    return Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_SECRET_KEY": SECRET, **s3_env})


@pytest.fixture
def local_store(tmp_path: Path) -> LocalDiskStore:
    return LocalDiskStore(tmp_path / "blobs", secret_key=SECRET, public_url="http://127.0.0.1:9")
