"""OpenTelemetry traces: a span for each request, workflow run, step and model call,
exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, so Jaeger, Grafana Tempo, Langfuse or
Phoenix can show a run. The exporter reads the standard `OTEL_*` variables itself
(headers, timeout, compression); `OTEL_SERVICE_NAME` names the service.

**Off by default, and then free**: every hook starts with one check of a module global
and returns a shared do-nothing object; no OpenTelemetry SDK is imported.

**A run is one trace whose id is the run's id** (its UUID as 128 bits): paste a run id
into the tracing UI's search. The run's span has an id derived from the run id, so any
worker on any host can parent a step's span to it without asking anyone; it is
emitted when the run finishes, spanning the run's life. A request or command that
starts a run links to that span. Spans and attributes follow the OpenTelemetry
semantic conventions (HTTP server spans; GenAI client spans: `gen_ai.operation.name`,
`gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`, …).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from contextvars import ContextVar
from datetime import datetime
from typing import Any

logger = logging.getLogger(__name__)

_tracer: Any = None  # an SDK tracer when tracing is on, else None
_provider: Any = None
_FORCED_IDS: ContextVar[tuple[int, int] | None] = ContextVar("forced_span_ids", default=None)


# --- off: one shared object that does nothing -------------------------------------------
class _Nothing:
    __slots__ = ()

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def done(self, *args: object, **kwargs: object) -> None:
        return None

    def set_status(self, *args: object, **kwargs: object) -> None:
        return None


NOTHING = _Nothing()


def enabled() -> bool:
    return _tracer is not None


# --- setup -------------------------------------------------------------------------------
def configure(*, service_name: str = "aihummer", exporter: Any = None) -> bool:
    """Turn tracing on for this process when an OTLP endpoint is configured (or an
    exporter is given); returns whether it is on. Called once from the app's ready()."""
    global _tracer, _provider
    from django.conf import settings

    if exporter is None and not settings.AIHUMMER_TRACING:
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class RunAwareIds(RandomIdGenerator):
        """Random ids, except for the span of a run: the ids its steps already use."""

        def generate_trace_id(self) -> int:
            forced = _FORCED_IDS.get()
            return forced[0] if forced else super().generate_trace_id()

        def generate_span_id(self) -> int:
            forced = _FORCED_IDS.get()
            return forced[1] if forced else super().generate_span_id()

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    _provider = TracerProvider(resource=Resource.create({"service.name": service_name}), id_generator=RunAwareIds())
    _provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(_provider)
    _tracer = _provider.get_tracer("aihummer")
    return True


def flush(timeout_millis: int = 10_000) -> None:
    if _provider is not None:
        _provider.force_flush(timeout_millis)


def shut_down() -> None:
    """Flush and turn tracing off (tests; a process's exit does it by itself)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer = _provider = None


# --- ids of a run's trace --------------------------------------------------------------
def run_trace_id(run_id: uuid.UUID | str) -> int:
    return uuid.UUID(str(run_id)).int


def run_span_id(run_id: uuid.UUID | str) -> int:
    digest = hashlib.sha256(str(run_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def _run_context(run_id: uuid.UUID | str) -> Any:
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parent = SpanContext(
        trace_id=run_trace_id(run_id),
        span_id=run_span_id(run_id),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def _ns(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1_000_000_000) if moment is not None else None


# --- hooks -------------------------------------------------------------------------------
def request_span(request: Any) -> Any:
    """The server span of one HTTP request (the request middleware); it continues a
    caller's trace given in `traceparent`."""
    if _tracer is None:
        return NOTHING
    return _RequestSpan(request)


class _RequestSpan:
    def __init__(self, request: Any) -> None:
        self.request = request

    def __enter__(self) -> _RequestSpan:
        from opentelemetry import propagate, trace

        context = propagate.extract(self.request.headers)
        method = self.request.method
        self._scope = _tracer.start_as_current_span(
            method,
            context=context,
            kind=trace.SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": self.request.path,
                "url.scheme": self.request.scheme,
            },
        )
        self.span = self._scope.__enter__()
        return self

    def done(self, route: str, status: int) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.span.update_name(f"{self.request.method} {route}")
        self.span.set_attribute("http.route", route)
        self.span.set_attribute("http.response.status_code", status)
        if status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))

    def __exit__(self, *exc: object) -> None:
        self._scope.__exit__(*exc)


def run_started(run: Any) -> None:
    """A run was just created: the current span (a request, a command) links to the
    run's trace, which its steps will fill."""
    if _tracer is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import SpanContext, TraceFlags

    current = trace.get_current_span()
    if not current.is_recording():
        return
    run_context = SpanContext(run_trace_id(run.pk), run_span_id(run.pk), True, TraceFlags(TraceFlags.SAMPLED))
    current.add_link(run_context, {"aihummer.link": "started run"})
    current.set_attribute("aihummer.run.id", str(run.pk))


def step_span(*, run_id: Any, step: str, agent_key: str, attempt: int) -> Any:
    """The span of one attempt of a step, a child of its run's span."""
    if _tracer is None:
        return NOTHING
    return _tracer.start_as_current_span(
        f"step {step}",
        context=_run_context(run_id),
        attributes={
            "aihummer.run.id": str(run_id),
            "aihummer.step.name": step,
            "aihummer.step.attempt": attempt,
            "gen_ai.agent.name": agent_key,
        },
    )


def run_finished(run_id: Any) -> None:
    """The run ended (completed, failed, cancelled): once that commits, its span, from
    creation to end, with the ids its steps used as their parent. One query, only when
    tracing is on."""
    if _tracer is None:
        return
    from django.db import transaction

    transaction.on_commit(lambda: _emit_run_span(run_id))


def _emit_run_span(run_id: Any) -> None:
    from opentelemetry.context import Context
    from opentelemetry.trace import Status, StatusCode

    from workflows.models import WorkflowRun

    run = WorkflowRun.all_objects.filter(pk=run_id).select_related("workspace").first()
    if run is None or not run.is_finished:
        return
    token = _FORCED_IDS.set((run_trace_id(run.pk), run_span_id(run.pk)))
    try:
        span = _tracer.start_span(
            f"run {run.workflow_key}",
            context=Context(),  # a root, whatever span is current where the run ended
            start_time=_ns(run.created_at),
            attributes={
                "aihummer.run.id": str(run.pk),
                "aihummer.workflow.key": run.workflow_key,
                "aihummer.workflow.version": run.workflow_version,
                "aihummer.workspace": run.workspace.slug,
                "aihummer.run.status": run.status,
                "gen_ai.usage.input_tokens": run.input_tokens,
                "gen_ai.usage.output_tokens": run.output_tokens,
            },
        )
    finally:
        _FORCED_IDS.reset(token)
    if run.status != "completed":
        span.set_status(Status(StatusCode.ERROR, run.error[:500]))
    span.end(end_time=_ns(run.finished_at))


def model_call(provider: Any, request: Any) -> Any:
    """The client span of one model call, named and attributed as the GenAI semantic
    conventions say; `done(response)` or `failed(error)` completes it."""
    if _tracer is None:
        return NOTHING
    return _ModelCall(provider, request)


class _ModelCall:
    def __init__(self, provider: Any, request: Any) -> None:
        self.provider, self.request = provider, request

    def __enter__(self) -> _ModelCall:
        from opentelemetry import trace

        request, name = self.request, getattr(self.provider, "name", "unknown")
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": name,
            "gen_ai.system": name,  # the convention's former name, still read by several backends
            "gen_ai.request.model": request.model,
            "gen_ai.request.temperature": request.temperature,
            "gen_ai.request.top_p": request.top_p,
        }
        if request.max_output_tokens:
            attributes["gen_ai.request.max_tokens"] = request.max_output_tokens
        if request.base_url:
            from urllib.parse import urlsplit

            attributes["server.address"] = urlsplit(request.base_url).hostname or ""
        self._scope = _tracer.start_as_current_span(
            f"chat {request.model}", kind=trace.SpanKind.CLIENT, attributes=attributes
        )
        self.span = self._scope.__enter__()
        return self

    def done(self, response: Any) -> None:
        self.span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
        self.span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        model = (response.raw or {}).get("model") if isinstance(response.raw, dict) else None
        self.span.set_attribute("gen_ai.response.model", model or self.request.model)

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", getattr(exc, "kind", type(exc).__name__))
            self.span.set_status(Status(StatusCode.ERROR, str(getattr(exc, "message", exc))[:500]))
        self._scope.__exit__(None, None, None)  # the error is recorded above, without a traceback
