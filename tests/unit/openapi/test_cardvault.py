"""The contract document itself."""

import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from connexion.json_schema import Draft4ResponseValidator
from jsonschema import Draft4Validator

from cardvault.domain.auth.credentials import SCOPES
from cardvault.settings import RATE_LIMITS
from cardvault.spec import SPEC_PATH, spec_document


def test_the_spec_validates_as_openapi_3_0() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openapi_spec_validator", "--schema", "3.0", str(SPEC_PATH)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert spec_document()[1]["openapi"] == "3.0.3"


def test_every_operation_has_a_camel_case_id_one_tag_and_declares_its_errors() -> None:
    spec = spec_document()[1]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation["operationId"][0].islower() and "." not in operation["operationId"]
            assert len(operation["tags"]) == 1
            assert "500" in operation["responses"], f"{method} {path}"
            if operation.get("security", spec["security"]):
                assert "401" in operation["responses"], f"{method} {path}"
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(operation["responses"]), f"{method} {path}"
                schema = operation["requestBody"]["content"]["application/json"]["schema"]
                name = schema["$ref"].rsplit("/", 1)[1]
                assert spec["components"]["schemas"][name]["additionalProperties"] is False


def test_every_link_names_an_existing_operation() -> None:
    spec = spec_document()[1]
    ids = {
        op["operationId"] for item in spec["paths"].values() for m, op in item.items() if m != "parameters"
    }
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for response in operation["responses"].values():
                for link in response.get("links", {}).values():
                    assert link["operationId"] in ids


def _resolved(spec: dict[str, Any], node: Any) -> Any:
    """The node a local ``$ref`` points to (followed until it is not a reference)."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


_SPEC: dict[str, Any] = spec_document()[1]


def _media_types(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Every JSON request and response body: operation id, status (or "request"), the request
    body or response object, and its media type."""
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            bodies = {"request": operation.get("requestBody", {})}
            bodies.update(operation["responses"])
            for status, body in bodies.items():
                body = _resolved(spec, body)
                if "application/json" in body.get("content", {}):
                    yield operation["operationId"], status, body, body["content"]["application/json"]


def test_every_success_response_has_an_example_and_every_example_fits_its_schema() -> None:
    # The validator the server's response checks use: Draft 4 with OpenAPI's nullable.
    schemas = {"components": _SPEC["components"]}
    checked = 0
    for operation, status, _, media in _media_types(_SPEC):
        examples = [_resolved(_SPEC, e)["value"] for e in media.get("examples", {}).values()]
        examples += [media["example"]] if "example" in media else []
        assert examples or not status.startswith("2"), f"{operation} {status} has no example"
        validator = Draft4ResponseValidator(
            {**media["schema"], **schemas}, format_checker=Draft4Validator.FORMAT_CHECKER
        )
        for example in examples:
            errors = [error.message for error in validator.iter_errors(example)]
            assert not errors, f"{operation} {status}: {errors[:3]}"
            checked += 1
    assert checked >= 26


def test_no_schema_asks_for_unique_items() -> None:
    # typescript-fetch turns a uniqueItems array into a Set that clients must build, and
    # jsonschema checks uniqueItems pairwise (quadratic in the array); lists say instead how
    # a repeated value is handled.
    assert "uniqueItems" not in SPEC_PATH.read_text()


def test_every_error_response_names_its_codes_with_an_example_of_each() -> None:
    for operation, status, response, media in _media_types(_SPEC):
        if status == "request" or status.startswith("2"):
            continue
        assert media["schema"] == {"$ref": "#/components/schemas/ApiError"}, (operation, status)
        named = set(re.findall(r"`([A-Z][A-Z_]{2,})`", response["description"]))
        examples = [_resolved(_SPEC, example) for example in media.get("examples", {}).values()]
        shown = {example["value"]["code"] for example in examples}
        assert named and named == shown, f"{operation} {status}: {sorted(named)} vs {sorted(shown)}"


def test_every_one_of_is_a_nullable_reference() -> None:
    # Validation messages read a failed oneOf as "what the type asks for, or null"
    # (cardvault.handlers.http.validation._describe); another use of oneOf needs its own wording.
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "oneOf" in node:
                found.append(node["oneOf"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_SPEC)
    null = {"$ref": "#/components/schemas/NullValue"}
    assert found and all(len(o) == 2 and o[1] == null and "$ref" in o[0] for o in found), found
    assert "anyOf" not in SPEC_PATH.read_text()


def _operations(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method != "parameters":
                yield method, operation


def _success_headers(operation: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for status, response in operation["responses"].items():
        if status.startswith("2"):
            names |= set(_resolved(_SPEC, response).get("headers", {}))
    return names


# Counted by the sign-in page, which is no operation of the API.
# Policies of what is served outside /v1 (the pages, and agent clients' registration).
_PAGE_POLICIES = {
    "sign-in-account",
    "sign-in-address",
    "sign-in-all",
    "share",
    "share-address",
    "client-registrations",
}
_KEY_OPERATIONS = {"listApiKeys", "createApiKey", "revokeApiKey"}


def test_every_authenticated_operation_takes_both_credentials_names_its_scope_and_declares_403() -> None:
    for method, operation in _operations(_SPEC):
        security = operation.get("security", _SPEC["security"])
        if not security:
            assert "403" not in operation["responses"], operation["operationId"]
            continue
        scope = "read" if method == "get" else "write"
        scope = "keys" if operation["operationId"] in _KEY_OPERATIONS else scope
        assert security == [{"bearerAuth": []}, {"oauth2": [scope]}], operation["operationId"]
        assert operation["responses"]["403"] == {"$ref": "#/components/responses/InsufficientScope"}
    flow = _SPEC["components"]["securitySchemes"]["oauth2"]["flows"]["authorizationCode"]
    assert flow["scopes"] == SCOPES


def test_every_rate_limited_operation_names_a_configured_policy_and_declares_its_answers() -> None:
    used = set()
    for _method, operation in _operations(_SPEC):
        policy = operation.get("x-cardvault-rate-limit")
        if "x-cardvault-bulk-operations" in operation:  # counted per item, by the single operations'
            assert policy is None and "429" in operation["responses"], operation["operationId"]
            assert {"RateLimit-Policy", "RateLimit"} <= _success_headers(operation), operation["operationId"]
            continue
        if policy is None:
            assert "429" not in operation["responses"], operation["operationId"]
            assert "x-cardvault-rate-limit-per-card" not in operation, operation["operationId"]
            continue
        per_card = operation.get("x-cardvault-rate-limit-per-card")
        if per_card is not None:
            assert per_card in RATE_LIMITS, operation["operationId"]
            assert f"`{per_card}`" in _SPEC["info"]["description"]
            used.add(per_card)
        used.add(policy)
        assert policy in RATE_LIMITS, operation["operationId"]
        # startExport's 429 is also its weekly rule's (ExportRateLimited states both).
        assert operation["responses"]["429"] in (
            {"$ref": "#/components/responses/RateLimited"},
            {"$ref": "#/components/responses/ExportRateLimited"},
        )
        assert {"RateLimit-Policy", "RateLimit"} <= _success_headers(operation), operation["operationId"]
        assert f"`{policy}`" in _SPEC["info"]["description"]
    assert used == set(RATE_LIMITS) - _PAGE_POLICIES


def test_every_operation_taking_an_idempotency_key_declares_replays_reuse_and_keys_in_use() -> None:
    takers = []
    for method, operation in _operations(_SPEC):
        refs = [p.get("$ref") for p in operation.get("parameters", [])]
        if "#/components/parameters/IdempotencyKey" not in refs:
            continue
        takers.append(operation["operationId"])
        # startExport has no body: its key stands for "this account's export", sent again.
        assert method in ("post", "delete") and (
            "requestBody" in operation or operation["operationId"] == "startExport"
        )
        assert operation["responses"]["422"] == {"$ref": "#/components/responses/IdempotencyKeyReused"}
        conflict = _resolved(_SPEC, operation["responses"]["409"])
        assert "IDEMPOTENCY_KEY_IN_USE" in conflict["content"]["application/json"]["examples"]
        assert "Retry-After" in conflict["headers"]
        assert "Idempotent-Replayed" in _success_headers(operation)
    # Every operation that creates something, and the folder membership changes.
    assert sorted(takers) == sorted(
        [
            "createCard",
            "createUpload",
            "createCardThumbnailUpload",
            "createCardCaptionsUpload",
            "createFolder",
            "renameTag",
            "mergeTag",
            "deleteTag",
            "addFolderCards",
            "removeFolderCards",
            "startExport",
            "startImport",
            "bulkCards",  # the whole request, each of its items
            "createAnnotation",
            "createSubscription",
        ]
    )
    # Every other operation that answers 201 (creates) shows a secret once, which a stored
    # answer would keep.
    creators = {
        operation["operationId"]
        for _method, operation in _operations(_SPEC)
        if "201" in operation["responses"]
    }
    assert creators - set(takers) == {"createApiKey", "createShare", "createWebhook"}


def test_a_bulk_operation_names_each_body_operation_s_single_operation() -> None:
    ids = {operation["operationId"]: operation for _method, operation in _operations(_SPEC)}
    bulk = ids["bulkCards"]
    singles = bulk["x-cardvault-bulk-operations"]
    assert list(singles) == _SPEC["components"]["schemas"]["CardBulkOperation"]["enum"]
    assert set(singles.values()) <= set(ids)
    limited = {ids[single].get("x-cardvault-rate-limit") for single in singles.values()} - {None}
    assert limited == {"cards"}


def test_every_operation_on_the_database_declares_service_busy() -> None:
    for _method, operation in _operations(_SPEC):
        if operation.get("security", _SPEC["security"]):
            assert operation["responses"]["503"] == {"$ref": "#/components/responses/ServiceBusy"}


def test_every_operation_declares_the_503_of_a_database_it_cannot_reach() -> None:
    # Every operation reads the database (health too); one that cannot be reached answers 503
    # SERVICE_UNAVAILABLE, which the shared ServiceBusy response describes.
    missing = [
        operation["operationId"]
        for _method, operation in _operations(_SPEC)
        if operation["responses"].get("503") != {"$ref": "#/components/responses/ServiceBusy"}
    ]
    assert missing == []
