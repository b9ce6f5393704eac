"""Deprecation (RFC 9745) and Sunset (RFC 8594) on the answers of what a spec deprecates, shown
on a test-only spec whose operations and parameters are deprecated on purpose (nothing of the
real spec is), served by a Connexion app with the layer where create_app places it."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any

import pytest
from connexion import AsyncApp
from connexion.middleware.exceptions import ExceptionMiddleware
from connexion.middleware.main import ConnexionMiddleware
from connexion.middleware.routing import RoutingMiddleware
from starlette.testclient import TestClient

from cardvault.domain.db import Database
from cardvault.handlers.http.app import create_app
from cardvault.handlers.http.deprecation import Deprecations, notices_from_spec
from cardvault.settings import Settings
from cardvault.spec import spec_document

HERE = __name__  # the fixture's operationIds name this module's functions


def old_thing() -> dict[str, Any]:
    return {"ok": True}


def current_thing() -> dict[str, Any]:
    return {"ok": True}


def _ok() -> dict[str, Any]:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    return {"200": {"description": "Fine.", "content": {"application/json": {"schema": schema}}}}


FIXTURE: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Deprecated on purpose", "version": "1.0.0"},
    "paths": {
        "/old": {
            "get": {
                "operationId": f"{HERE}.old_thing",
                "deprecated": True,
                "x-deprecated-at": "2026-01-31",
                "x-sunset": "2027-01-31",
                "parameters": [{"name": "n", "in": "query", "schema": {"type": "integer"}}],
                "responses": _ok(),
            }
        },
        "/current": {
            "parameters": [{"$ref": "#/components/parameters/OldMode"}],
            "get": {
                "operationId": f"{HERE}.current_thing",
                "parameters": [
                    {
                        "name": "legacy",
                        "in": "query",
                        "deprecated": True,
                        "x-deprecated-at": "2026-03-01T12:00:00Z",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": _ok(),
            },
        },
    },
    "components": {
        "parameters": {
            "OldMode": {
                "name": "X-Old-Mode",
                "in": "header",
                "deprecated": True,
                "x-deprecated-at": "2026-02-01",
                "x-sunset": "2027-06-01",
                "schema": {"type": "string"},
            }
        }
    },
}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    notices = notices_from_spec(FIXTURE, lambda operation_id: operation_id)
    # Connexion's own stack, with the layer where create_app places it: outside ExceptionMiddleware.
    stack = list(ConnexionMiddleware.default_middlewares)
    stack.insert(stack.index(ExceptionMiddleware), functools.partial(Deprecations, notices=notices))
    app = AsyncApp(__name__, middlewares=stack)
    app.add_api(copy.deepcopy(FIXTURE), base_path="/v1", strict_validation=True, validate_responses=True)
    with TestClient(app) as test_client:
        yield test_client


def test_a_deprecated_operation_says_since_when_and_its_sunset(client: TestClient) -> None:
    answer = client.get("/v1/old")
    assert answer.status_code == 200
    assert answer.headers["Deprecation"] == "@1769817600"  # 2026-01-31T00:00:00Z
    assert answer.headers["Sunset"] == "Sun, 31 Jan 2027 00:00:00 GMT"


def test_a_deprecated_operation_says_so_on_its_errors_too(client: TestClient) -> None:
    answer = client.get("/v1/old", params={"n": "not a number"})
    assert answer.status_code == 400
    assert answer.headers["Deprecation"] == "@1769817600"
    assert answer.headers["Sunset"] == "Sun, 31 Jan 2027 00:00:00 GMT"


def test_an_operation_used_without_its_deprecated_parameters_says_nothing(client: TestClient) -> None:
    answer = client.get("/v1/current")
    assert answer.status_code == 200
    assert "Deprecation" not in answer.headers and "Sunset" not in answer.headers


def test_a_deprecated_query_parameter_sent_is_said_without_a_sunset_it_has_none_of(
    client: TestClient,
) -> None:
    answer = client.get("/v1/current", params={"legacy": "1"})
    assert answer.status_code == 200
    assert answer.headers["Deprecation"] == "@1772366400"  # 2026-03-01T12:00:00Z
    assert "Sunset" not in answer.headers


def test_a_deprecated_header_parameter_of_the_path_is_said_whatever_its_case(client: TestClient) -> None:
    answer = client.get("/v1/current", headers={"x-old-MODE": "yes"})
    assert answer.headers["Deprecation"] == "@1769904000"  # 2026-02-01
    assert answer.headers["Sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"


def test_two_deprecated_parameters_say_the_soonest_dates(client: TestClient) -> None:
    answer = client.get("/v1/current", params={"legacy": ""}, headers={"X-Old-Mode": "yes"})
    assert answer.headers.get_list("Deprecation") == ["@1769904000"]
    assert answer.headers["Sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"


def test_a_spec_that_deprecates_without_a_date_or_sunsets_first_is_refused() -> None:
    undated = copy.deepcopy(FIXTURE)
    del undated["paths"]["/old"]["get"]["x-deprecated-at"]
    with pytest.raises(ValueError, match="GET /old is deprecated: say since when"):
        notices_from_spec(undated, str)
    backwards = copy.deepcopy(FIXTURE)
    backwards["components"]["parameters"]["OldMode"]["x-sunset"] = "2025-01-01"
    with pytest.raises(ValueError, match="x-sunset is before x-deprecated-at"):
        notices_from_spec(backwards, str)


def test_nothing_of_the_real_spec_is_deprecated_yet() -> None:
    assert notices_from_spec(spec_document()[1], str) == {}


def test_the_app_places_the_layer_outside_the_one_that_renders_errors(
    settings: Settings, database: Database
) -> None:
    layers = [getattr(m, "func", m) for m in create_app(settings, database).middleware.middlewares]
    assert layers.index(Deprecations) < layers.index(ExceptionMiddleware) < layers.index(RoutingMiddleware)
