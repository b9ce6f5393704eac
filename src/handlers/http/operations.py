"""How every operation runs around its handler, as the spec declares it: the account's rate
limit (an operation's ``x-cardvault-rate-limit`` names its policy), the Idempotency-Key (on the
operations that declare the header), the retries of a busy database, and the JSON serialized
where the handler runs, in a worker thread."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
from connexion.context import context, scope
from connexion.lifecycle import ConnexionResponse

from cardvault.adapters.limiter import Allowance, Policy
from cardvault.domain.errors import InsufficientScope, RateLimited, ServiceBusy, ServiceUnavailable
from cardvault.domain.guards import idempotency, rate_limits
from cardvault.domain.guards.idempotency import StoredResponse
from cardvault.handlers.http import runtime
from cardvault.settings import Settings

_HTTP_METHODS = ("get", "put", "post", "delete", "patch")
_KEPT_HEADERS = ("Location", "ETag")  # what a replay repeats besides the status and body


@dataclasses.dataclass(frozen=True)
class Rules:
    """What runs around one operation's handler."""

    operation_id: str
    policy: Policy | None = None
    card_policy: Policy | None = None  # counted per card (the path's cardId), after ``policy``
    # A bulk operation's: each body operation's policy (its single operation's), counted per item.
    item_policies: Mapping[str, Policy] = dataclasses.field(default_factory=dict)
    idempotent: bool = False
    scopes: tuple[str, ...] = ()  # what the credential must hold (the spec's oauth2 requirement)


def rules_from_spec(spec: Mapping[str, Any], settings: Settings) -> dict[str, Rules]:
    """Each operation's rules: its rate-limit policy (as configured; none when turned off) and
    whether it takes an Idempotency-Key."""
    table = {}
    for item in spec["paths"].values():
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            name = operation.get("x-cardvault-rate-limit")
            limit = settings.rate_limits[name] if name else None
            per_card = operation.get("x-cardvault-rate-limit-per-card")
            card_limit = settings.rate_limits[per_card] if per_card else None
            singles = operation.get("x-cardvault-bulk-operations", {})
            table[operation["operationId"]] = Rules(
                item_policies={
                    name: policy
                    for name, single in singles.items()
                    if (policy := _policy_of(spec, single, settings)) is not None
                },
                operation_id=operation["operationId"],
                policy=Policy.parse(name, limit) if name and limit else None,
                card_policy=Policy.parse(per_card, card_limit) if per_card and card_limit else None,
                idempotent=any(
                    p.get("$ref") == "#/components/parameters/IdempotencyKey"
                    for p in operation.get("parameters", [])
                ),
                scopes=_scopes(operation, spec),
            )
    return table


def _policy_of(spec: Mapping[str, Any], operation_id: str, settings: Settings) -> Policy | None:
    """The rate-limit policy of the operation named ``operation_id`` (None: it has none)."""
    for item in spec["paths"].values():
        for method in _HTTP_METHODS:
            operation = item.get(method) or {}
            if operation.get("operationId") == operation_id:
                name = operation.get("x-cardvault-rate-limit")
                limit = settings.rate_limits[name] if name else None
                return Policy.parse(name, limit) if name and limit else None
    raise SpecError(f"x-cardvault-bulk-operations names {operation_id}, which the spec does not declare")


def _scopes(operation: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The scopes an operation's credential must hold: its oauth2 requirement's. An operation
    that needs a credential and names none would let any credential through, so the app refuses
    to start on one (SpecError)."""
    security = operation.get("security", spec.get("security", []))
    scopes = next((tuple(r["oauth2"]) for r in security if "oauth2" in r), ())
    if security and not scopes:
        raise SpecError(
            f"{operation['operationId']} needs a credential but declares no oauth2 scopes: add"
            " security: [{bearerAuth: []}, {oauth2: [<scope>]}] to it."
        )
    return scopes


class SpecError(Exception):
    """The spec asks for something the server cannot enforce."""


def run_with(rules: Rules, handler: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a handler in its operation's rules."""

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Any:
        rt = runtime.current()
        account_id = kwargs.get("user")
        if rules.scopes:
            _check_scopes(rules.scopes)
        key = _header(b"idempotency-key") if rules.idempotent else None
        card_id = kwargs.get("card_id")
        spent: list[_Spent] = []  # the rate limit is counted once, whatever the retries

        def spend() -> dict[str, str]:
            if not spent:
                spent.append(_spend(rt, rules, account_id, card_id, kwargs.get("body")))
            return spent[0].headers

        if account_id is None or key is None:
            rate_headers = spend()
            with _uncounted_if_passing(rt, spent):
                return rt.db.run(lambda: _response(handler(*args, **kwargs), rate_headers))
        arguments = {name: value for name, value in kwargs.items() if name != "user"}
        fingerprint = idempotency.fingerprint(rules.operation_id, arguments)

        def attempt() -> Any:
            with rt.db.unit() as session:
                stored = idempotency.claim(session, account_id=account_id, key=key, fingerprint=fingerprint)
                if stored is not None:  # a replay does no work and counts against no limit
                    return _replay(stored, _peek(rt, rules, account_id))
                response = _response(handler(*args, **kwargs), spend())
                if isinstance(response, ConnexionResponse) and 200 <= response.status_code < 300:
                    kept = {n: response.headers[n] for n in _KEPT_HEADERS if n in response.headers}
                    idempotency.record(
                        session,
                        account_id=account_id,
                        key=key,
                        fingerprint=fingerprint,
                        response=StoredResponse(
                            status=response.status_code, body=response.body, headers=kept
                        ),
                    )
                return response

        with rt.in_flight.hold(account_id, key), _uncounted_if_passing(rt, spent):
            return rt.db.run(attempt)

    return run


def held_grant() -> str | None:
    """The app's grant behind the current request's access token (None for an API key an
    account made itself)."""
    grant = (context.get("token_info") or {}).get("grant")
    return str(grant) if grant else None


def held_credential() -> str | None:
    """The API key (its id) or, for an access token, the grant the current request came with:
    what a webhook it makes belongs to."""
    info = context.get("token_info") or {}
    held = info.get("key") or info.get("grant")
    return str(held) if held else None


def held_scopes() -> tuple[str, ...]:
    """The scopes of the API key or access token the current request came with."""
    return tuple((context.get("token_info") or {}).get("scope") or ())


def _check_scopes(needed: tuple[str, ...]) -> None:
    """Refuse a credential without a scope the operation needs (403 INSUFFICIENT_SCOPE)."""
    held = list(held_scopes())
    for scope_name in needed:
        if scope_name not in held:
            raise InsufficientScope(scope_name, held)


def _header(name: bytes) -> str | None:
    for header, value in scope["headers"]:
        if header.lower() == name:
            return str(value.decode("latin-1").strip())
    return None


@dataclasses.dataclass(frozen=True)
class _Spent:
    """What counting a request did: its RateLimit headers, and the (policy, key) pairs it was
    counted against (none for a limiter that could not be reached)."""

    headers: dict[str, str]
    counted: tuple[tuple[Policy, str], ...] = ()
    cost: int = 1  # counted as that many requests (a bulk request's items)


def _spend(
    rt: runtime.Runtime, rules: Rules, account_id: str | None, card_id: str | None, body: Any = None
) -> _Spent:
    """Count the request against its operation's policy, then its per-card policy; return the
    RateLimit headers, which every response to it carries (the error renderer adds them to
    errors). A card over its own limit is refused before the account's policy counts it. A
    bulk request counts its items against its body operation's policy (the single operation's)."""
    if account_id is None:
        return _Spent({})
    policy_of_request, cost = rules.policy, 1
    if rules.item_policies and isinstance(body, dict):
        policy_of_request, cost = (
            rules.item_policies.get(body.get("operation", "")),
            len(body.get("items", ())),
        )
    counted = [(policy_of_request, account_id)] if policy_of_request is not None else []
    if rules.card_policy is not None and card_id is not None:
        counted.append((rules.card_policy, f"{account_id}:{card_id}"))
    allowances: list[Allowance | None] = []
    policy = counted[-1][0] if counted else None
    try:
        if len(counted) == 2:
            rate_limits.ensure_room(rt.limiter, counted[1][0], account_id=counted[1][1])
        for policy, key in counted:
            allowances.append(rate_limits.spend(rt.limiter, policy, account_id=key, cost=cost))
    except RateLimited as refused:
        # The window is full until retry_at: nothing remains till then (no second round trip).
        assert refused.retry_at is not None and policy is not None
        left = Allowance(policy, allowed=False, remaining=0, reset_at=refused.retry_at / 1000)
        _remember_headers(_rate_headers(*allowances, left))
        raise
    headers = _rate_headers(*allowances)
    _remember_headers(headers)
    return _Spent(
        headers,
        tuple(pair for pair, allowance in zip(counted, allowances, strict=True) if allowance is not None),
        cost,
    )


@contextlib.contextmanager
def _uncounted_if_passing(rt: runtime.Runtime, spent: list[_Spent]) -> Iterator[None]:
    """Give back what the request was counted against when it ends in a passing fault of the
    database (503 SERVICE_BUSY or SERVICE_UNAVAILABLE, nothing written): the answer tells the
    client to retry in a moment, and the retries must not find its limit used up by the
    failures (a 2 s outage used up a day's 10 export starts). One that may have been saved
    (its connection lost in COMMIT) stays counted."""
    try:
        yield
    except (ServiceBusy, ServiceUnavailable) as exc:
        if spent and not getattr(exc, "maybe_saved", False):
            for policy, key in spent[0].counted:
                rt.limiter.give_back(policy, key, cost=spent[0].cost)
        raise


def _peek(rt: runtime.Runtime, rules: Rules, account_id: str) -> dict[str, str]:
    return _rate_headers(rt.limiter.peek(rules.policy, account_id)) if rules.policy is not None else {}


def _remember_headers(headers: dict[str, str]) -> None:
    scope.setdefault("state", {})["response_headers"] = headers


def _rate_headers(*allowances: Allowance | None) -> dict[str, str]:
    """The IETF RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers),
    one item per policy counted."""
    counted = [a for a in allowances if a is not None]  # None: the limiter could not be reached
    if not counted:
        return {}
    now = time.time()
    return {
        "RateLimit-Policy": ", ".join(
            f'"{a.policy.name}";q={a.policy.limit};w={a.policy.window_seconds}' for a in counted
        ),
        "RateLimit": ", ".join(
            f'"{a.policy.name}";r={a.remaining};t={max(0, math.ceil(a.reset_at - now))}' for a in counted
        ),
    }


def _replay(stored: StoredResponse, rate_headers: dict[str, str]) -> ConnexionResponse:
    headers = {**stored.headers, **rate_headers, "Idempotent-Replayed": "true"}
    return ConnexionResponse(
        status_code=stored.status, body=stored.body, content_type="application/json", headers=headers
    )


def _response(result: Any, rate_headers: dict[str, str]) -> Any:
    """Serialize the handler's JSON here, in the worker thread: Connexion would serialize it on
    the event loop, where a 50 MB page (100 cards of 512 KiB) would hold every other request for
    a fifth of a second. orjson writes a page of 50 cards in a tenth of the time the json module
    takes (15% of a list request's CPU before)."""
    body, status, headers = (*result, None, None)[:3] if isinstance(result, tuple) else (result, 200, None)
    headers = {**(headers or {}), **rate_headers}
    if body is None:
        return None, status, headers
    return ConnexionResponse(
        status_code=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )
