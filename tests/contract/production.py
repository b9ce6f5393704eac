"""What the crash tests share: the service in production's shape (PostgreSQL, Redis, SeaweedFS
as S3, an API process with no worker of its own) and `cardvault worker` processes to start and
kill -9."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from harness.servers import BIN, prepared, redis_server, seaweedfs_server, server_env, serving
from tests.conftest import fresh_postgres_database


@contextlib.contextmanager
def production(tmp_path: Path, name: str) -> Iterator[tuple[dict[str, str], str, str, Database]]:
    """The environment, base URL and API key of an API process with no worker of its own, over
    a database ``name`` of its own, and that database opened here."""
    url = fresh_postgres_database(name, f"the test over {name}")
    with seaweedfs_server(tmp_path) as s3, redis_server(tmp_path) as (redis_url, _):
        env = {
            **server_env(tmp_path, url),
            **s3,
            "CARDVAULT_REDIS_URL": redis_url,
            "CARDVAULT_STALE_SECONDS": "3",  # a killed worker's job is taken over soon
            "CARDVAULT_SWEEP_SECONDS": "0.5",
        }
        key = prepared(env)
        db = open_database(url)
        try:
            with serving(env, tmp_path / "server.log") as base:
                yield env, base, key, db
        finally:
            db.dispose()


def worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A `cardvault worker` logging to ``log``."""
    with log.open("ab") as out:
        # A session of its own: Dramatiq's worker processes are children of the command's, and
        # a machine that dies takes them all.
        return subprocess.Popen(
            [str(BIN / "cardvault"), "worker", "--threads", "2"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(process: subprocess.Popen[bytes]) -> None:
    """kill -9 the worker and its processes (nothing when they ended), and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
