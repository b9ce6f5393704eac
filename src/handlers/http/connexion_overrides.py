"""Every place the service overrides a Connexion internal (a private method, attribute or
behaviour that Connexion does not document as an extension point), held here and only here.

Each one is tested in tests/unit/handlers/http/test_connexion_overrides.py: a check that the
Connexion internal it relies on is still there and still used as we expect (so an upgrade that
changes it fails a test rather than silently dropping the override), and a check of its effect.

- ``OnceDecorator`` (subclasses ``connexion.decorators.StarletteDecorator``, replaces
  ``__call__``): relies on ``BaseDecorator.decorate(function)``, ``BaseDecorator.uri_parser`` and
  ``framework.get_request(uri_parser=, scope=, receive=)``, which Connexion's ``__call__`` runs
  per request. Why: Connexion wraps the handler in its parameter and response decorators, and
  builds a URI parser, again on every request (inspecting the handler's signature each time): a
  tenth of a list request's CPU. This does both once per operation.
- ``OnceDecoratedOperation`` (subclasses ``connexion.apps.asynchronous.AsyncOperation``, replaces
  the ``fn`` property): relies on ``AsyncOperation.__call__`` calling ``self.fn()`` and on the
  ``_fn``, ``pythonic_params`` and ``jsonifier`` attributes. Why: ``fn`` builds the decorated
  handler per request; this builds it once (with ``OnceDecorator``).
- ``OnceDecoratedApi`` (subclasses ``AsyncApi``, replaces ``make_operation``) and
  ``use_once_decorated_operations`` (sets ``AsyncApp.middleware.app.api_cls``): relies on
  ``AsyncASGIApp.api_cls`` naming the API class ``add_api`` instantiates, and on
  ``AsyncOperation.from_operation(operation, pythonic_params=, jsonifier=)``. Why: the only way
  to have Connexion make ``OnceDecoratedOperation`` instead of its own.
- ``DocsUI`` (subclasses ``connexion.middleware.swagger_ui.SwaggerUIMiddleware``, wraps
  ``__call__``; placed in the middleware stack instead of Connexion's): relies on its ``app``
  attribute (the next ASGI app). Why: Connexion sends every request through a router of its own
  to find the few it serves (the docs UI and the spec document): 3% of a list request's CPU.
  This sends it only requests under those paths.
- ``init_spec_once`` (replaces ``Specification.__init__``, installed by ``build_specs_once``,
  which the app factory calls; nothing is patched at import): relies on
  it setting ``_raw_spec`` (a deep copy of the document), ``_spec`` (the document with its
  references resolved, once validated against the OpenAPI schema) and ``_base_uri``, and on
  Connexion changing them afterwards only at the top level (``base_path`` sets ``servers``).
  Why: Connexion copies, validates and resolves the whole document for every app it builds,
  twice (``from_dict``, then ``clone`` for the base path): half a second of jsonschema and a
  tenth of deep copies paid again by every app a process builds (tests build hundreds). This
  does it once per distinct document per process.
- ``shared_extensions``, ``routed_operation`` and ``routed_user`` (read the ASGI scope's
  ``extensions``): rely on Connexion's routing setting ``extensions["connexion_routing"]
  ["operation_id"]`` on the scope it was given (``ROUTING_CONTEXT``, on a shallow copy of the
  outer scope, so only a dict already there is shared outward), and on its security middleware
  putting the verified ``user`` in ``extensions["connexion_context"]``. Why: the request's log
  line, metrics and span name the operation and the account, known only inside Connexion's
  stack, after the outermost layer has passed the request in.
- ``Bearer`` (subclasses ``connexion.security.BearerSecurityHandler``, replaces
  ``_resolve_func``): relies on ``get_fn`` taking the verifying function from
  ``self._resolve_func(security_scheme)``. Why: the verifier is wired here, not named in the
  spec (``x-bearerInfoFunc``), which client developers read.
- ``SameBearer`` (subclasses ``connexion.security.AbstractSecurityHandler``, replaces
  ``get_fn``): relies on ``get_fn(security_scheme, required_scopes)`` returning a function of
  the request, and on ``NO_VALUE`` meaning "not found here, try the next scheme". Why: the
  spec's ``oauth2`` scheme carries the same bearer value ``Bearer`` already checked.
- ``JSONBodyValidator`` (subclasses ``connexion.validators.JSONRequestBodyValidator``, replaces
  ``_validator``, ``_parse`` and ``_validate``): relies on ``wrap_receive`` calling
  ``_parse(stream, scope)`` then ``_validate(body)``, and on ``_schema`` and ``_nullable``.
  Why: Connexion reports only the first problem (as jsonschema's long message, which can echo a
  whole 512 KiB field), turns a non-UTF-8 body into a 500, and validates on the event loop.
- ``FieldParameterValidator`` (subclasses ``connexion.validators.ParameterValidator``, replaces
  ``validate_request``): relies on ``validate_query_parameter_list``, ``security_query_params``,
  ``parameters`` and ``strict_validation``. Why: every problem listed, field by field.
- ``VALIDATORS``: Connexion's ``VALIDATOR_MAP`` with the two above (its keys ``parameter`` and
  ``body``, a ``MediaTypeDict`` by media type), passed as ``validator_map``.
- ``WholeValuesParser`` (subclasses ``connexion.uri_parsing.OpenAPIURIParser``, replaces the
  static ``_resolve_param_duplicates`` and ``_split``; passed as ``uri_parser_class``): relies on
  ``resolve_params`` calling the first with the query values' list, then the second with what it
  returned. Why: Connexion joins a repeated parameter's values with commas and splits them again,
  so ``tag=a,b`` would be two tags; a query parameter that declares ``explode: true`` keeps each
  repeated value whole, as OpenAPI's form style means (``include``, which declares no
  ``explode``, keeps Connexion's comma-separated form).
"""

from __future__ import annotations

import functools
import hashlib
import typing as t
from collections.abc import Callable
from functools import cached_property

import orjson
from connexion.apps.asynchronous import AsyncApi, AsyncOperation
from connexion.context import receive, scope
from connexion.datastructures import MediaTypeDict
from connexion.decorators import StarletteDecorator
from connexion.middleware.abstract import ROUTING_CONTEXT
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.security import NO_VALUE, AbstractSecurityHandler, BearerSecurityHandler
from connexion.spec import Specification
from connexion.uri_parsing import OpenAPIURIParser
from connexion.validators import VALIDATOR_MAP, JSONRequestBodyValidator, ParameterValidator
from starlette.types import Receive, Scope, Send

from cardvault.handlers.http import auth, validation
from cardvault.handlers.http.errors import InvalidRequest

BASE_PATH = "/v1"


class OnceDecorator(StarletteDecorator):
    """Connexion's decorator, wrapping the handler and making the URI parser once per operation."""

    def __call__(self, function: Callable[..., t.Any]) -> Callable[..., t.Any]:
        decorated = self.decorate(function)
        parsers: list[t.Any] = []  # made on the first request: it needs the operation's context

        @functools.wraps(function)
        async def wrapper(*_args: t.Any, **_kwargs: t.Any) -> t.Any:
            if not parsers:
                parsers.append(self.uri_parser)
            request = self.framework.get_request(uri_parser=parsers[0], scope=scope, receive=receive)
            return await decorated(request)

        return wrapper


class OnceDecoratedOperation(AsyncOperation):
    @functools.cached_property
    def fn(self) -> Callable[..., t.Any]:
        return OnceDecorator(pythonic_params=self.pythonic_params, jsonifier=self.jsonifier)(self._fn)


class OnceDecoratedApi(AsyncApi):
    def make_operation(self, operation: t.Any) -> AsyncOperation:
        return OnceDecoratedOperation.from_operation(
            operation, pythonic_params=self.pythonic_params, jsonifier=self.jsonifier
        )


def use_once_decorated_operations(app: t.Any) -> None:
    """Have the app's ``add_api`` build ``OnceDecoratedApi`` (call before ``add_api``)."""
    app.middleware.app.api_cls = OnceDecoratedApi


_DOCS_PATHS = (f"{BASE_PATH}/ui", f"{BASE_PATH}/openapi.")


class DocsUI(SwaggerUIMiddleware):
    """Connexion's Swagger UI middleware, sent only the requests under the paths it serves."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(_DOCS_PATHS):
            await super().__call__(scope, receive, send)
        else:
            await self.app(scope, receive, send)


_CONNEXION_SPEC_INIT = Specification.__init__
# Per distinct document and base URI: the document as given (a deep copy), and resolved.
_BUILT_SPECS: dict[tuple[bytes, str], tuple[dict[str, t.Any], dict[str, t.Any]]] = {}


def init_spec_once(self: Specification, raw_spec: dict[str, t.Any], *, base_uri: str = "") -> None:
    """Connexion's ``Specification.__init__`` (copy, set defaults, validate, resolve), run once
    per distinct document per process (a document with any difference is built in full); each
    instance gets top-level copies, so that setting its base path changes no other."""
    key = (hashlib.sha256(orjson.dumps(raw_spec, option=orjson.OPT_SORT_KEYS)).digest(), base_uri)
    if key not in _BUILT_SPECS:
        _CONNEXION_SPEC_INIT(self, raw_spec, base_uri=base_uri)
        _BUILT_SPECS[key] = (self._raw_spec, self._spec)
    raw, resolved = _BUILT_SPECS[key]
    self._raw_spec, self._spec, self._base_uri = dict(raw), dict(resolved), base_uri


def build_specs_once() -> None:
    """Have Connexion build each distinct spec once per process (``init_spec_once``); called by
    the app factory before it builds an app. It replaces ``Specification.__init__`` for the
    whole process: the cache keys on the document's whole content, so any other document is
    still built (and validated) in full."""
    Specification.__init__ = init_spec_once


def shared_extensions(scope: Scope) -> dict[str, t.Any]:
    """The scope's ``extensions``, created here if missing, so that what Connexion's layers put
    in it (on their shallow copies of this scope) is seen by the layer holding this one."""
    extensions: dict[str, t.Any] = scope.setdefault("extensions", {})
    return extensions


def routed_operation(scope: Scope) -> str | None:
    """The name of the function Connexion routed the request to (None when it routed none)."""
    routed = (scope.get("extensions") or {}).get(ROUTING_CONTEXT) or {}
    name = routed.get("operation_id")
    return name if isinstance(name, str) else None


def routed_user(scope: Scope) -> str | None:
    """The account Connexion's security middleware verified the request's credential as."""
    user = ((scope.get("extensions") or {}).get("connexion_context") or {}).get("user")
    return user if isinstance(user, str) else None


class Bearer(BearerSecurityHandler):
    """Connexion's bearer handler, verifying with ``auth.authenticate``. An API key and an OAuth
    2.0 access token travel alike, so this one handler checks both; the operation runner checks
    the scopes of either, answering 403 INSUFFICIENT_SCOPE. A token issued for /mcp is taken
    only on the MCP tool dispatch's own requests (``auth.authenticate_api``)."""

    def _resolve_func(self, security_scheme: t.Any) -> t.Any:
        return auth.authenticate_api


class SameBearer(AbstractSecurityHandler):
    """The spec's ``oauth2`` scheme, which Connexion tries after ``bearerAuth``: the bearer
    value was checked there already (a second check would look a bad credential up twice), so
    this one only says it found nothing, and Connexion answers with the first one's error."""

    def get_fn(self, security_scheme: t.Any, required_scopes: t.Any) -> t.Any:
        def nothing(request: t.Any) -> t.Any:
            return NO_VALUE

        return nothing


class JSONBodyValidator(JSONRequestBodyValidator):
    """JSON bodies: strict UTF-8, strict JSON, bounded depth, every schema problem listed.

    Parsing and validation cost time linear in the body (at most 4 MiB); a body over
    INLINE_BODY_BYTES is checked in a worker thread so the event loop keeps serving."""

    @cached_property
    def _validator(self) -> t.Any:
        return validation.body_validator(type(super()._validator), self._schema)

    async def _parse(self, stream: t.AsyncGenerator[bytes, None], scope: t.Any) -> t.Any:
        raw = b"".join([chunk async for chunk in stream])
        return await validation.check_body(raw, self._validator)

    def _validate(self, body: t.Any) -> dict[str, t.Any] | None:
        # A non-empty body was validated while parsing (_parse); only emptiness is left.
        if body is None and not self._nullable:
            raise InvalidRequest("The request body must not be empty: send a JSON object.")
        return None


class FieldParameterValidator(ParameterValidator):
    """Query, path and header parameters, every problem listed."""

    def validate_request(self, request: t.Any) -> None:
        if self.strict_validation:
            extra = self.validate_query_parameter_list(request, security_params=self.security_query_params)
            if extra:
                validation.raise_unknown_query_parameters(extra)
        validation.check_parameters(self.parameters, request)


VALIDATORS = {
    **VALIDATOR_MAP,
    "parameter": FieldParameterValidator,
    "body": MediaTypeDict({**VALIDATOR_MAP["body"], "*/*json": JSONBodyValidator}),
}


class WholeValuesParser(OpenAPIURIParser):
    """Connexion's parser, keeping each value of a query parameter declaring ``explode: true``
    whole (its commas are the value's own)."""

    @staticmethod
    def _resolve_param_duplicates(values: t.Any, param_defn: dict[str, t.Any], _in: str) -> t.Any:
        if _in == "query" and param_defn.get("explode") is True and isinstance(values, list):
            return list(values)
        return OpenAPIURIParser._resolve_param_duplicates(values, param_defn, _in)

    @staticmethod
    def _split(value: t.Any, param_defn: dict[str, t.Any], _in: str) -> t.Any:
        if isinstance(value, list):  # kept whole above
            return value
        return OpenAPIURIParser._split(value, param_defn, _in)
