"""Schemathesis hooks for the contract tier (SCHEMATHESIS_HOOKS=tests.contract.hooks).

A valid Idempotency-Key is replaced, just before the request is sent, by a fresh one, as a
client sends a new key for each new request: Schemathesis sends the same short keys again and
again with different bodies, which the server rightly answers 422 IDEMPOTENCY_KEY_REUSED (or
with a replay of a card deleted since), and its checks read those as valid input refused.
Invalid keys are kept, so their refusal is still checked. Replays and reuse are tested in
tests/unit/handlers/http/test_operations_idempotency.py.

ensure_resource_availability (ST302) takes any 404 that follows a POST under the created
resource's path as the resource's. A 404 whose code is UPLOAD_NOT_FOUND is about the upload the
request's body names (a stateful run sends a made-up fileKey to replaceCardThumbnail and
replaceCardCaptions), not the card: that one failure, and only it, is dropped. The card's own
404 is the unit tier's to assert."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import schemathesis
from schemathesis import GenerationMode
from schemathesis.openapi.checks import EnsureResourceAvailability

_VALID_KEY = re.compile(r"[ -~]{1,255}")


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.meta is None or case.meta.generation.mode != GenerationMode.POSITIVE or not case.headers:
        return  # negative cases are sent as drawn
    key = case.headers.get("Idempotency-Key")
    if isinstance(key, str) and _VALID_KEY.fullmatch(key):
        case.headers["Idempotency-Key"] = str(uuid.uuid4())


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    if not isinstance(failure, EnsureResourceAvailability):
        return True
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        return True
    return bool(code != "UPLOAD_NOT_FOUND")
