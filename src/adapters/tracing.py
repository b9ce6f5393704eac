"""Traces (OpenTelemetry), off unless an OTLP endpoint is configured
(``CARDVAULT_OTLP_ENDPOINT``, or OpenTelemetry's own ``OTEL_EXPORTER_OTLP_ENDPOINT``).

On, a process keeps a tracer provider of its own (``use``), sampling ``CARDVAULT_TRACE_SAMPLE``
of the traces that start in it (a trace begun elsewhere keeps its parent's choice) and sending
spans in batches over OTLP/HTTP. Spans: a request (its operationId, status, the account's id
hashed), each SQL statement, each outbound fetch, each blob store call, and each actor's run,
whose message carries the context of the span that sent it (``inject`` and ``extract``), so a
request and the work it queued are one trace. Off, every call here is a no-op span.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import Token
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, SamplingResult, TraceIdRatioBased
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from cardvault.logs import redact
from cardvault.settings import Settings

T = TypeVar("T")
P = ParamSpec("P")

_provider: TracerProvider | None = None
_NOOP = trace.NoOpTracer()


def configure(settings: Settings, service: str) -> None:
    """Trace this process when an OTLP endpoint is configured (a process's start)."""
    if settings.otlp_endpoint is None or _provider is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint.rstrip("/") + "/v1/traces")
    key = settings.secret_key.encode()
    use(BatchSpanProcessor(exporter), sample=settings.trace_sample, service=service, key=key)


class KeyedRatio(TraceIdRatioBased):
    """Keep ``rate`` of the traces, chosen by a keyed hash of the whole trace id. The SDK's own
    sampler compares the id's last 64 bits as they are, so a caller who picks the id (a
    traceparent ending in sixteen zeros) picks the outcome; under the service's secret, the
    same in every process, the API and its workers still keep the same traces."""

    def __init__(self, rate: float, key: bytes) -> None:
        super().__init__(rate)
        self._key = key

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        digest = hmac.new(self._key, trace_id.to_bytes(16, "big"), hashlib.sha256).digest()
        mixed = int.from_bytes(digest[:8], "big")
        return super().should_sample(parent_context, mixed, name, kind, attributes, links, trace_state)


def use(
    processor: SpanProcessor, *, sample: float = 1.0, service: str = "cardvault", key: bytes = b"cardvault"
) -> TracerProvider:
    """Trace through ``processor`` from now on (``configure``, or a test's in-memory exporter)."""
    global _provider
    # A caller's traceparent cannot force a trace past the share: its sampled flag is heeded
    # at the same ratio (a caller's unsampled trace is left unsampled).
    ratio = KeyedRatio(sample, key)
    provider = TracerProvider(
        resource=Resource.create({"service.name": service}),
        sampler=ParentBased(ratio, remote_parent_sampled=ratio),
    )
    provider.add_span_processor(processor)
    _provider = provider
    return provider


def stop() -> None:
    """Stop tracing (the spans sent first); every call is a no-op again."""
    global _provider
    if _provider is not None:
        _provider.shutdown()
    _provider = None


def provider() -> TracerProvider | None:
    return _provider


def tracer() -> trace.Tracer:
    return _NOOP if _provider is None else _provider.get_tracer("cardvault")


def on() -> bool:
    return _provider is not None


def recording() -> bool:
    """Whether the current span is kept (sampled): a statement run outside one needs no span."""
    return _provider is not None and trace.get_current_span().is_recording()


def hashed(account_id: str) -> str:
    """An account's id as spans carry it: not the id, but the same for every span of it."""
    return hashlib.sha256(account_id.encode()).hexdigest()[:16]


@contextmanager
def span(name: str, kind: SpanKind = SpanKind.INTERNAL, **attributes: Any) -> Iterator[Span]:
    """A span around the block; an exception marks it failed and passes on."""
    # The SDK's own recording would keep the exception's text as it is (``failed`` redacts it).
    with tracer().start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            failed(current, exc)
            raise


def traced(name: str, kind: SpanKind = SpanKind.CLIENT) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A method traced as ``name`` (a blob store's calls)."""

    def decorate(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            if _provider is None:
                return method(*args, **kwargs)
            with span(name, kind):
                return method(*args, **kwargs)

        return run

    return decorate


def inject() -> dict[str, str]:
    """The current span's context as W3C headers, for a message to carry (empty when off)."""
    carrier: dict[str, str] = {}
    if _provider is not None:
        propagate.inject(carrier)
    return carrier


@contextmanager
def extracted(carrier: dict[str, str] | None) -> Iterator[None]:
    """Run the block in the context a caller's headers carried (W3C Trace Context)."""
    if _provider is None or not carrier:
        yield
        return
    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


Opened = tuple[Span, list[Token[Context]]]  # a span begun by ``begin``, and the contexts it attached


def begin(name: str, carrier: dict[str, str] | None, **attributes: Any) -> Opened | None:
    """Begin a span, current on this thread until ``end``, as a child of the context a message
    carried (``inject``): for hooks that run before and after the work, where a block cannot
    span them (Dramatiq's). None when tracing is off."""
    if _provider is None:
        return None
    tokens = [otel_context.attach(propagate.extract(carrier or {}))]
    current = tracer().start_span(name, kind=SpanKind.CONSUMER, attributes=attributes)
    tokens.append(otel_context.attach(trace.set_span_in_context(current)))
    return current, tokens


def end(opened: Opened | None, exc: BaseException | None = None) -> None:
    if opened is None:
        return
    current, tokens = opened
    if exc is not None:
        failed(current, exc)
    current.end()
    for token in reversed(tokens):
        otel_context.detach(token)


def failed(current: Span, exc: BaseException) -> None:
    """Mark the span failed, with the exception as the logs would show it: its message and
    traceback redacted (a token in a URL, a password in a database URL)."""
    if not current.is_recording():
        return
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    current.add_event(
        "exception",
        {
            "exception.type": type(exc).__qualname__,
            "exception.message": redact(str(exc)),
            "exception.stacktrace": redact(stack),
            "exception.escaped": True,
        },
    )
    current.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def instrument_engine(engine: Any) -> None:
    """Trace every statement the engine runs through SQLAlchemy's execution, in a span of its
    own when its trace is kept (when tracing is on): a statement outside a kept trace costs one
    check. (The hot reads, sent through the driver, make their own: cardvault.domain.statements.)"""
    if _provider is None or getattr(engine, "_cardvault_traced", None):
        return
    from sqlalchemy import event

    def before(
        connection: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if recording():
            said = {"db.statement": statement, "db.system": connection.dialect.name}
            context._cardvault_span = tracer().start_span(
                statement.split(None, 1)[0], kind=SpanKind.CLIENT, attributes=said
            )

    def after(
        connection: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        opened = getattr(context, "_cardvault_span", None)
        if opened is not None:
            opened.end()

    def failed_statement(exception_context: Any) -> None:
        context = exception_context.execution_context
        opened = getattr(context, "_cardvault_span", None) if context is not None else None
        if opened is not None:
            failed(opened, exception_context.original_exception)
            opened.end()

    listeners = (
        ("before_cursor_execute", before),
        ("after_cursor_execute", after),
        ("handle_error", failed_statement),
    )
    for name, listener in listeners:
        event.listen(engine, name, listener)
    engine._cardvault_traced = listeners


def uninstrument_engine(engine: Any) -> None:
    """Stop tracing the engine's statements (a test that traced a shared engine)."""
    from sqlalchemy import event

    for name, listener in getattr(engine, "_cardvault_traced", None) or ():
        event.remove(engine, name, listener)
    engine._cardvault_traced = None
