"""The HTTP app's composition root: create_app(settings) builds the Connexion AsyncApp."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
import orjson
from connexion import AsyncApp
from connexion.apps.asynchronous import AsyncApi, AsyncOperation
from connexion.context import receive, scope
from connexion.decorators import StarletteDecorator
from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware.context import ContextMiddleware
from connexion.middleware.exceptions import ExceptionMiddleware
from connexion.middleware.lifespan import LifespanMiddleware
from connexion.middleware.request_validation import RequestValidationMiddleware
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.routing import RoutingMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.middleware.server_error import ServerErrorMiddleware
from connexion.middleware.swagger_ui import SwaggerUIMiddleware
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolution, Resolver
from connexion.spec import OpenAPISpecification
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from cardvault.adapters.blobs import store_from_settings
from cardvault.adapters.limiter import Limiter
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError
from cardvault.handlers import operations, runtime
from cardvault.handlers.auth import Bearer, SameBearer
from cardvault.handlers.errors import error_response, render_exception
from cardvault.handlers.files import FileRoutes
from cardvault.handlers.middleware import RequestContext, RequestGuard, ResponseRequestId, SpecDocument
from cardvault.handlers.validation import VALIDATORS
from cardvault.handlers.web.routes import WebRoutes
from cardvault.settings import Settings, spec_document
from cardvault.workers import broker as worker_broker
from cardvault.workers import embedded

BASE_PATH = "/v1"
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class TagResolver(Resolver):
    """operationId ``listCards`` tagged ``cards`` -> ``cardvault.handlers.cards.list_cards``."""

    def __init__(self, spec: dict[str, Any], rules: dict[str, operations.Rules]) -> None:
        super().__init__()
        self.rules = rules
        self.modules = {
            operation["operationId"]: operation["tags"][0]
            for item in spec["paths"].values()
            for method, operation in item.items()
            if method in _HTTP_METHODS
        }

    def resolve_operation_id(self, operation: Any) -> str:
        name = operation.operation_id
        return f"cardvault.handlers.{self.modules[name]}.{_snake(name)}"

    def resolve(self, operation: Any) -> Resolution:
        resolution = super().resolve(operation)
        handler = operations.run_with(self.rules[operation.operation_id], resolution.function)
        return Resolution(handler, resolution.operation_id)


class _OnceDecorator(StarletteDecorator):
    """Connexion's decorator wraps the handler in its parameter and response decorators, and
    builds a URI parser, again on every request (inspecting the handler's signature each time):
    a tenth of a list request's CPU. This one does both once per operation."""

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        decorated = self.decorate(function)
        parsers: list[Any] = []  # made on the first request: it needs the operation's context

        @functools.wraps(function)
        async def wrapper(*_args: Any, **_kwargs: Any) -> Any:
            if not parsers:
                parsers.append(self.uri_parser)
            request = self.framework.get_request(uri_parser=parsers[0], scope=scope, receive=receive)
            return await decorated(request)

        return wrapper


class _OnceDecoratedOperation(AsyncOperation):
    @functools.cached_property
    def fn(self) -> Callable[..., Any]:  # type: ignore[override]
        return _OnceDecorator(pythonic_params=self.pythonic_params, jsonifier=self.jsonifier)(self._fn)


class _OnceDecoratedApi(AsyncApi):
    def make_operation(self, operation: Any) -> AsyncOperation:
        return _OnceDecoratedOperation.from_operation(
            operation, pythonic_params=self.pythonic_params, jsonifier=self.jsonifier
        )


_DOCS_PATHS = (f"{BASE_PATH}/ui", f"{BASE_PATH}/openapi.")


class _DocsUI(SwaggerUIMiddleware):
    """Connexion's Swagger UI middleware sends every request through a router of its own to
    find the few it serves (the docs UI and the spec document): 3% of a list request's CPU.
    This one sends it only requests under those paths."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(_DOCS_PATHS):
            await super().__call__(scope, receive, send)
        else:
            await self.app(scope, receive, send)


# Connexion validates the whole spec against the OpenAPI schema for every app it builds
# (``Specification._validate_spec``, a classmethod): half a second of jsonschema on ours, paid
# again by every app a process builds. This validates each distinct document once per process;
# a document with any difference is validated in full.
_VALIDATED_SPECS: set[bytes] = set()
_connexion_validate_spec = OpenAPISpecification._validate_spec.__func__  # type: ignore[attr-defined]


def _validate_spec_once(spec_cls: type[OpenAPISpecification], spec: dict[str, Any]) -> None:
    digest = hashlib.sha256(orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)).digest()
    if digest not in _VALIDATED_SPECS:
        _connexion_validate_spec(spec_cls, spec)
        _VALIDATED_SPECS.add(digest)


OpenAPISpecification._validate_spec = classmethod(_validate_spec_once)  # type: ignore[method-assign,assignment]


def _allowed_methods(spec: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    """For each path template of the spec, a matcher and the methods it documents."""
    table = []
    for template, item in spec["paths"].items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(BASE_PATH + template))
        methods = [m.upper() for m in _HTTP_METHODS if m in item]
        table.append((re.compile(pattern), ", ".join(methods)))
    return table


def _lifespan(embedded_worker: bool) -> Any:
    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        if embedded_worker:
            await anyio.to_thread.run_sync(embedded.start)
        try:
            yield
        finally:
            if embedded_worker:
                await anyio.to_thread.run_sync(embedded.stop)

    return lifespan


def create_app(settings: Settings, db: Database | None = None) -> AsyncApp:
    """Build the API app over the database named in the settings (or the one given)."""
    db = db or Database.from_url(settings.database_url, lock_timeout_ms=settings.lock_timeout_ms)
    store = store_from_settings(settings)
    worker_broker.bind(settings, db, store)
    spec_text, spec = spec_document()
    allowed = _allowed_methods(spec)
    rt = runtime.Runtime(
        settings=settings,
        db=db,
        limiter=Limiter.from_settings(settings),
        store=store,
        passwords=runtime.passwords_from_settings(settings),
    )

    def method_not_allowed(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
        # Starlette reports only the first matching route's methods in Allow; the spec knows all.
        methods = next(
            (m for p, m in allowed if p.fullmatch(request.url.path)),
            (getattr(exc, "headers", None) or {}).get("Allow", ""),  # the spec and the docs UI
        )
        return error_response(
            (request.scope.get("state") or {}).get("request_id"),
            405,
            "METHOD_NOT_ALLOWED",
            f"{request.method} is not allowed on this path.",
            details={"allowed": methods.split(", ") if methods else []},
            headers={"Allow": methods},
        )

    # Connexion's stack, with ours placed in it and its Swagger UI middleware replaced.
    middlewares: list[Any] = [
        ServerErrorMiddleware,
        functools.partial(RequestContext, runtime=rt),
        ExceptionMiddleware,
        functools.partial(FileRoutes, runtime=rt),
        WebRoutes,
        RequestGuard,
        functools.partial(SpecDocument, spec=spec, spec_text=spec_text),
        _DocsUI,
        RoutingMiddleware,
        SecurityMiddleware,
        RequestValidationMiddleware,
        ResponseValidationMiddleware,
        LifespanMiddleware,
        # Only the response validator needs the header this early.
        *([ResponseRequestId] if settings.validate_responses else []),
        ContextMiddleware,
    ]
    app = AsyncApp(
        __name__,
        lifespan=_lifespan(worker_broker.is_embedded()),
        middlewares=middlewares,
        swagger_ui_options=SwaggerUIOptions(
            swagger_ui=settings.swagger_ui,
            serve_spec=True,
            # The Authorize button's OAuth flow sends PKCE, which this server requires.
            swagger_ui_template_arguments={"initOAuth": {"usePkceWithAuthorizationCodeGrant": True}},
        ),
    )
    app.middleware.app.api_cls = _OnceDecoratedApi  # type: ignore[attr-defined]
    app.add_api(
        spec,  # Connexion copies what it changes
        base_path=BASE_PATH,
        resolver=TagResolver(spec, operations.rules_from_spec(spec, settings)),
        pythonic_params=True,
        strict_validation=True,
        validate_responses=settings.validate_responses,
        validator_map=VALIDATORS,
        security_map={"bearer": Bearer, "oauth2": SameBearer},
    )
    for exc in (CardVaultError, ProblemException, HTTPException, Exception):
        app.add_error_handler(exc, render_exception)
    app.add_error_handler(405, method_not_allowed)
    return app


def app_from_env() -> AsyncApp:
    """App factory for ASGI servers: ``uvicorn --factory cardvault.handlers.app:app_from_env``."""
    return create_app(Settings.from_env())
