"""Each operation's scopes come from its oauth2 security requirement, and the server refuses to
start on an operation that needs a credential but names no scope (it would let any through)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cardvault.handlers.http.operations import SpecError, rules_from_spec
from cardvault.settings import Settings
from cardvault.spec import spec_document


def _spec() -> dict[str, Any]:
    return copy.deepcopy(spec_document()[1])


def test_every_operation_of_the_spec_that_needs_a_credential_names_its_scopes(settings: Settings) -> None:
    rules = rules_from_spec(_spec(), settings)
    assert rules["createCard"].scopes == ("write",)
    assert rules["listCards"].scopes == ("read",)
    assert rules["getHealth"].scopes == ()  # security: [] — no credential at all


def test_an_operation_left_with_the_default_requirement_stops_the_start(settings: Settings) -> None:
    spec = _spec()
    del spec["paths"]["/cards"]["get"]["security"]  # inherits bearerAuth alone: no scope
    with pytest.raises(SpecError, match=r"^listCards needs a credential but declares no oauth2 scopes"):
        rules_from_spec(spec, settings)


def test_an_empty_scope_list_stops_the_start_too(settings: Settings) -> None:
    spec = _spec()
    spec["paths"]["/cards"]["post"]["security"] = [{"bearerAuth": []}, {"oauth2": []}]
    with pytest.raises(SpecError, match=r"^createCard "):
        rules_from_spec(spec, settings)
