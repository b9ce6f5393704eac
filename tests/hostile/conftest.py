"""The hostile corpora's fixtures: databases of their own, and the pages' browser-like client,
people who sign in and an OAuth client, which are the page tests' (tests/unit/handlers/web/
conftest.py), imported here so they are written once; the rest come from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cardvault.domain.db import Database
from tests.conftest import BACKENDS, migrated_database
from tests.unit.handlers.web.conftest import browser, make_person, oauth_client, person

__all__ = ["browser", "database", "make_person", "oauth_client", "person"]


@pytest.fixture(scope="package", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A migrated database of each backend for the corpora alone: what other tests leave in a
    shared one (a pending export, a stage waiting to retry) would be taken up by the embedded
    worker mid-corpus and change the snapshot the corpus compares."""
    with migrated_database(request.param, tmp_path_factory, "cardvault_hostile") as db:
        yield db
