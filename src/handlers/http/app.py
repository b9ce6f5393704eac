"""The HTTP app's composition root: create_app(settings) bootstraps the process's services
(cardvault.bootstrap) and builds the Connexion AsyncApp on them."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from connexion import AsyncApp
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
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolution, Resolver
from starlette.exceptions import HTTPException

from cardvault import heap
from cardvault.adapters import metrics
from cardvault.bootstrap import bootstrap
from cardvault.domain.database import open_database
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError
from cardvault.handlers.http import operations, runtime
from cardvault.handlers.http.connexion_overrides import (
    BASE_PATH,
    VALIDATORS,
    Bearer,
    DocsUI,
    SameBearer,
    WholeValuesParser,
    build_specs_once,
    use_once_decorated_operations,
)
from cardvault.handlers.http.deprecation import Deprecations, notices_from_spec
from cardvault.handlers.http.errors import error_response, render_exception
from cardvault.handlers.http.files import FileRoutes
from cardvault.handlers.http.mcp_calls import ApiTarget
from cardvault.handlers.http.mcp_endpoint import McpRoute
from cardvault.handlers.http.mcp_server import Agents
from cardvault.handlers.http.middleware import Docs, RequestGuard, ResponseRequestId
from cardvault.handlers.http.observed import MetricsRoute, RequestEdge
from cardvault.handlers.web.routes import WebRoutes
from cardvault.services import Services
from cardvault.settings import Settings
from cardvault.spec import spec_document
from cardvault.workers import broker as worker_broker
from cardvault.workers import embedded

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
        return self.function_of(operation.operation_id)

    def function_of(self, operation_id: str) -> str:
        return f"cardvault.handlers.{self.modules[operation_id]}.{_snake(operation_id)}"

    def resolve(self, operation: Any) -> Resolution:
        resolution = super().resolve(operation)
        handler = operations.run_with(self.rules[operation.operation_id], resolution.function)
        return Resolution(handler, resolution.operation_id)


def _allowed_methods(spec: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    """For each path template of the spec, a matcher and the methods it documents."""
    table = []
    for template, item in spec["paths"].items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(BASE_PATH + template))
        methods = [m.upper() for m in _HTTP_METHODS if m in item]
        table.append((re.compile(pattern), ", ".join(methods)))
    return table


def _lifespan(services: Services | None) -> Any:
    """The app's lifespan: with ``services``, the embedded worker runs on them while it lives."""

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        if services is not None:
            await anyio.to_thread.run_sync(embedded.start, services)
        try:
            yield
        finally:
            if services is not None:
                await anyio.to_thread.run_sync(embedded.stop)

    return lifespan


def create_app(settings: Settings, db: Database | None = None) -> AsyncApp:
    """Build the API app over the database named in the settings (or the one given)."""
    db = db or open_database(settings.database_url, lock_timeout_ms=settings.lock_timeout_ms)
    services = bootstrap(settings, database=db, traced_as="cardvault-api")
    build_specs_once()
    spec_text, spec = spec_document()
    allowed = _allowed_methods(spec)
    resolver = TagResolver(spec, operations.rules_from_spec(spec, settings))
    rt = runtime.Runtime(
        settings=settings,
        db=services.database,
        limiter=services.limiter,
        store=services.blobs,
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

    target = ApiTarget()
    agents = Agents(spec, target)

    # The layers a request passes through, outermost first: Connexion's stack (its
    # ConnexionMiddleware.default_middlewares, in its order, with its Swagger UI middleware
    # replaced by DocsUI) with ours placed in it.
    middlewares: list[Any] = [
        # Connexion's: any exception left is a 500 in our error body (render_exception).
        ServerErrorMiddleware,
        # The request's id, runtime, trace, metrics and log line, under the spec's operationIds.
        functools.partial(
            RequestEdge,
            runtime=rt,
            names={resolver.function_of(name): name for name in resolver.modules},
            counting=settings.metrics,
        ),
        # GET /metrics, with its own bearer token.
        functools.partial(MetricsRoute, settings=settings, read_now=(metrics.Queues(worker_broker.queues),)),
        # What the spec deprecates: Deprecation and Sunset headers on its answers, errors included.
        functools.partial(Deprecations, notices=notices_from_spec(spec, resolver.function_of)),
        # Connexion's: exceptions raised further in become error responses (render_exception).
        ExceptionMiddleware,
        # Signed file URLs (/files/...), then the browser's pages (sign-in, OAuth, card pages).
        functools.partial(FileRoutes, runtime=rt),
        WebRoutes,
        # /mcp: the API's operations as MCP tools, each call sent back through this app.
        functools.partial(McpRoute, agents=agents),
        # What every API request must be before Connexion reads it (sizes, framing, JSON).
        RequestGuard,
        # The spec as written, and the docs UI's headers; then Swagger UI itself.
        functools.partial(Docs, spec=spec, spec_text=spec_text),
        DocsUI,
        # Connexion's: routing, security, request and response validation, lifespan.
        RoutingMiddleware,
        SecurityMiddleware,
        RequestValidationMiddleware,
        ResponseValidationMiddleware,
        LifespanMiddleware,
        # Only the response validator needs the header this early.
        *([ResponseRequestId] if settings.validate_responses else []),
        # Connexion's: the operation's context for the handler.
        ContextMiddleware,
    ]
    app = AsyncApp(
        __name__,
        lifespan=_lifespan(services if worker_broker.is_embedded() else None),
        middlewares=middlewares,
        swagger_ui_options=SwaggerUIOptions(
            swagger_ui=settings.swagger_ui,
            serve_spec=True,
            # The Authorize button's OAuth flow sends PKCE, which this server requires.
            swagger_ui_template_arguments={"initOAuth": {"usePkceWithAuthorizationCodeGrant": True}},
        ),
    )
    target.app = app
    use_once_decorated_operations(app)
    app.add_api(
        spec,  # Connexion copies what it changes
        base_path=BASE_PATH,
        resolver=resolver,
        pythonic_params=True,
        strict_validation=True,
        validate_responses=settings.validate_responses,
        validator_map=VALIDATORS,
        uri_parser_class=WholeValuesParser,
        security_map={"bearer": Bearer, "oauth2": SameBearer},
    )
    for exc in (CardVaultError, ProblemException, HTTPException, Exception):
        app.add_error_handler(exc, render_exception)
    app.add_error_handler(405, method_not_allowed)
    return app


def app_from_env() -> AsyncApp:
    """App factory for ASGI servers: ``uvicorn --factory cardvault.handlers.http.app:app_from_env``.
    Runs once per server process, so it settles the process's heap (cardvault.heap) once the
    app is built."""
    app = create_app(Settings.from_env())
    heap.settle()
    return app
