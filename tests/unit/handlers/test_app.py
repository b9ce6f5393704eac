"""The app factory: every app a process builds serves the same spec, checked once per process."""

from __future__ import annotations

import copy
import inspect

import pytest
from connexion.exceptions import InvalidSpecification
from connexion.spec import OpenAPISpecification, Specification

import cardvault.handlers.app  # noqa: F401  (replaces Connexion's spec check)
from cardvault.settings import spec_document


def test_connexion_still_validates_a_spec_through_the_classmethod_the_app_replaces() -> None:
    # The app replaces OpenAPISpecification._validate_spec; an upgrade that stops calling it
    # (or renames it) would silently drop our once-per-process check and this must fail.
    assert "self._validate_spec(raw_spec)" in inspect.getsource(Specification.__init__)
    assert isinstance(inspect.getattr_static(OpenAPISpecification, "_validate_spec"), classmethod)


def test_a_spec_that_differs_from_the_validated_one_is_still_validated_in_full() -> None:
    _, spec = spec_document()
    OpenAPISpecification.from_dict(copy.deepcopy(spec))  # ours, validated (once)
    broken = copy.deepcopy(spec)
    broken["paths"]["/cards"]["get"]["responses"] = "none"
    with pytest.raises(InvalidSpecification):
        OpenAPISpecification.from_dict(broken)
