"""The hostile corpora's fixtures: the pages' browser-like client, people who sign in and an
OAuth client are the page tests' own (tests/unit/handlers/web/conftest.py), imported here so
they are written once; the rest come from tests/conftest.py."""

from __future__ import annotations

from tests.unit.handlers.web.conftest import browser, make_person, oauth_client, person

__all__ = ["browser", "make_person", "oauth_client", "person"]
