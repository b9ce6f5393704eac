"""Engines (cardvault.domain.engines): the pool counts the connections in use and times a
checkout that waited. A pooled PostgreSQL connection the server closed is refused before use:
tests/unit/domain/test_db_disconnects.py kills one."""

from __future__ import annotations

import threading
from pathlib import Path

from prometheus_client import REGISTRY
from sqlalchemy import create_engine

from cardvault.domain import engines


def test_the_pool_counts_connections_in_use_and_times_a_wait(tmp_path: Path) -> None:
    def sample(name: str) -> float:
        return REGISTRY.get_sample_value(name) or 0.0

    engine = engines._counted(
        create_engine(
            f"sqlite:///{tmp_path / 'pool.db'}", poolclass=engines._CountedPool, pool_size=1, max_overflow=0
        )
    )
    in_use, waits = sample("cardvault_db_connections_in_use"), sample("cardvault_db_pool_wait_seconds_count")
    held = engine.connect()
    assert sample("cardvault_db_connections_in_use") == in_use + 1
    released = threading.Timer(0.05, held.close)  # the second checkout waits for this one
    released.start()
    with engine.connect():
        assert sample("cardvault_db_pool_wait_seconds_count") == waits + 1
    released.join()
    assert sample("cardvault_db_connections_in_use") == in_use
    engine.dispose()
