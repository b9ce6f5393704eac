"""The file tests' app: on each database, with files on local disk (on a disk of their own
when a test fills it) and on a real S3 server (SeaweedFS)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cardvault.adapters.blobs import BlobStore, store_from_settings
from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.settings import Settings
from harness.faults.disk import small_disk
from harness.servers import S3_ACCESS_KEY, S3_BUCKET, S3_SECRET_KEY, free_port, seaweedfs_server
from tests.conftest import Api, api_of_new_account, app_env


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with seaweedfs_server(tmp_path_factory.mktemp("s3")) as env:
        yield env


@pytest.fixture
def unreachable_s3_env() -> dict[str, str]:
    """The settings of an S3 server out of reach: nothing listens on its port (as when the
    server was stopped), so every connection is refused."""
    return {
        "CARDVAULT_S3_BUCKET": S3_BUCKET,
        "CARDVAULT_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "CARDVAULT_S3_ACCESS_KEY_ID": S3_ACCESS_KEY,
        "CARDVAULT_S3_SECRET_ACCESS_KEY": S3_SECRET_KEY,
    }


@pytest.fixture
def blobs_disk(tmp_path: Path) -> Iterator[Path]:
    """A disk of 1 MiB (a tmpfs) where the data directory keeps its blobs, for a test to fill
    (harness.faults.disk.Filler); ask for it before the app or store, so they make their folders
    on it. Skipped where mounting is not permitted (failed under CI=true)."""
    with small_disk(tmp_path / "blobs", 1) as disk:
        yield disk


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest) -> dict[str, str]:
    return {} if request.param == "local" else request.getfixturevalue("s3_env")


@pytest.fixture
def files_settings(tmp_path: Path, database: Database, storage: dict[str, str]) -> Settings:
    return Settings.from_env({**app_env(tmp_path, database), **storage})


@pytest.fixture
def files_store(files_settings: Settings) -> BlobStore:
    """The store the app uses (the same directory or bucket)."""
    return store_from_settings(files_settings)


@pytest.fixture
def files_app(files_settings: Settings, database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(files_settings, database), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def new_api(files_app: TestClient, database: Database) -> Callable[[], Api]:
    return functools.partial(api_of_new_account, files_app, database, "files")


@pytest.fixture
def files_api(new_api: Callable[[], Api]) -> Api:
    return new_api()
