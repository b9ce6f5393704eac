"""The HTTP edge's observability (cardvault.adapters.metrics, cardvault.adapters.tracing,
cardvault.logs): each request counted, timed, traced and logged by its operation, and
``GET /metrics``."""

from __future__ import annotations

import hmac
import logging
import time

import anyio.to_thread
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from prometheus_client.registry import Collector
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cardvault import logs
from cardvault.adapters import metrics, tracing
from cardvault.handlers.http import connexion_overrides
from cardvault.handlers.http.errors import error_response
from cardvault.handlers.http.middleware import UI_PREFIX, start_request, with_request_id
from cardvault.handlers.http.runtime import Runtime
from cardvault.settings import Settings

_requests = logging.getLogger("cardvault.requests")
_TRACE_HEADERS = (b"traceparent", b"tracestate")  # a caller's trace, continued (W3C Trace Context)


def _describe(span: Span, scope: Scope, operation: str, status: int, account_id: str | None) -> None:
    """Name the request's span after its operation and say how it ended."""
    span.update_name(f"{scope['method']} {operation}")
    span.set_attribute("http.request.method", scope["method"])
    span.set_attribute("url.path", logs.redact(scope["path"]))  # a signed file URL's token is its path
    span.set_attribute("http.response.status_code", status)
    span.set_attribute("cardvault.operation", operation)
    if account_id:
        span.set_attribute("cardvault.account", tracing.hashed(account_id))
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR, str(status)))


def _operation(scope: Scope, names: dict[str, str]) -> str:
    """The label a request is counted under: the spec's operationId of the function Connexion
    routed it to, else the kind of path (a small closed set: a label never holds a request's
    own values)."""
    routed = connexion_overrides.routed_operation(scope)
    if routed is not None and routed in names:
        return names[routed]
    path = scope["path"]
    if path == METRICS_PATH:
        return "metrics"
    if path.startswith("/files/"):
        return "files"
    if path.startswith("/s/"):  # a share's page and feeds: a label never holds the token
        return "share"
    if path.startswith((UI_PREFIX, "/v1/openapi")):
        return "docs"
    if path.startswith(("/sign-", "/oauth/", "/.well-known/", "/cards/", "/static/")):
        return "web"
    return "unrouted"


class RequestEdge:
    """Where every request enters: give it an id (echoed as X-Request-Id, named by every line it
    logs) and the app's runtime (cardvault.handlers.http.middleware.start_request); trace it,
    continuing a caller's trace; count and time it by operation and status
    (cardvault.adapters.metrics) and log it (cardvault.requests: its id, method, path without
    the query, operation, status, time and account). A request whose handling raised is
    counted as the 500 it is answered with."""

    def __init__(self, app: ASGIApp, runtime: Runtime, names: dict[str, str], counting: bool = True) -> None:
        self.app = app
        self.runtime = runtime
        self.names = names  # each operation's function (as Connexion names it) -> its operationId
        self.counting = counting  # CARDVAULT_METRICS=false: logged and traced, not counted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        connexion_overrides.shared_extensions(scope)  # uvicorn's scope has none
        request_id = start_request(scope, self.runtime)

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = with_request_id(message, request_id)
            await send(message)

        carried = {
            k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in _TRACE_HEADERS
        }
        with tracing.extracted(carried), tracing.span(f"{scope['method']} request", SpanKind.SERVER) as span:
            try:
                with logs.bound(requestId=request_id):  # every line the request logs names it
                    await self.app(scope, receive, send_counted)
            finally:
                operation = _operation(scope, self.names)
                account_id = connexion_overrides.routed_user(scope)
                if span.is_recording():
                    _describe(span, scope, operation, status, account_id)
                seconds = time.perf_counter() - started
                if self.counting:
                    metrics.HTTP_REQUESTS.labels(operation, str(status)).inc()
                    metrics.HTTP_DURATION.labels(operation).observe(seconds)
                _record(scope, operation, status, seconds, account_id)


def _record(scope: Scope, operation: str, status: int, seconds: float, account_id: str | None) -> None:
    """Log the request's line."""
    _requests.info(
        "%s %s %s %s",
        scope["method"],
        scope["path"],
        status,
        operation,
        extra={
            "requestId": (scope.get("state") or {}).get("request_id"),
            "method": scope["method"],
            "path": scope["path"],
            "operation": operation,
            "status": status,
            "durationMs": round(seconds * 1000, 1),
            "accountId": account_id,
        },
    )


METRICS_PATH = "/metrics"


class MetricsRoute:
    """``GET /metrics``: the Prometheus text format. Open in the embedded default; with
    CARDVAULT_METRICS_TOKEN set it asks for that bearer token; in production without one, and
    with CARDVAULT_METRICS=false, there is no such path (404)."""

    def __init__(self, app: ASGIApp, settings: Settings, read_now: tuple[Collector, ...] = ()) -> None:
        self.app = app
        self.read_now = read_now  # collected as they are scraped (the broker's queues)
        self.token = settings.metrics_token
        self.served = settings.metrics and (settings.metrics_token is not None or settings.redis_url is None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != METRICS_PATH or not self.served:
            await self.app(scope, receive, send)
            return
        request_id = (scope.get("state") or {}).get("request_id")
        refused = None
        if scope["method"] not in ("GET", "HEAD"):
            refused = error_response(
                request_id,
                405,
                "METHOD_NOT_ALLOWED",
                f"{scope['method']} is not allowed on this path.",
                details={"allowed": ["GET", "HEAD"]},
                headers={"Allow": "GET, HEAD"},
            )
        elif self.token is not None and not _bearer_is(scope, self.token):
            refused = error_response(
                request_id,
                401,
                "UNAUTHENTICATED",
                "The metrics need the bearer token set in CARDVAULT_METRICS_TOKEN.",
                headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
        if refused is not None:
            response = Response(
                refused.body, refused.status_code, headers=refused.headers, media_type="application/json"
            )
        else:
            # Files to read with several processes, the broker to ask: not on the event loop.
            body = await anyio.to_thread.run_sync(metrics.exposition, *self.read_now)
            response = Response(
                body, 200, headers={"Cache-Control": "no-store"}, media_type=metrics.CONTENT_TYPE
            )
        await response(scope, receive, send)


def _bearer_is(scope: Scope, token: str) -> bool:
    sent = dict(scope["headers"]).get(b"authorization", b"")
    scheme, _, value = sent.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), token.encode())
