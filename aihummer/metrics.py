"""Prometheus metrics (`prometheus-client`).

Two kinds, exposed together on the web's `/metrics` (`Authorization: Bearer
$AIHUMMER_METRICS_TOKEN`; 404 while no token is set):

- **Counted where they happen**, in each process: requests by route and status (the
  request middleware), agent turns with their tokens, cost and duration by provider and
  model (the runtime, one call at the end of a turn), workflow steps by how they ended
  (the engine, one call), Celery tasks by name and state and evidence runs by how they
  ended (Celery's signals). Web processes
  under gunicorn share them through `PROMETHEUS_MULTIPROC_DIR` (`deploy/bin/web`);
  each worker serves its own on `AIHUMMER_WORKER_METRICS_PORT`, bound to
  `AIHUMMER_WORKER_METRICS_ADDR` (an internal address: that port has no token).
- **Read from the database and the broker at scrape time**, the same from any web
  process: queue depth, unfinished runs and running steps, prompt versions by status
  and the age of the oldest pending one, unfinished evidence runs. A handful of
  indexed queries per scrape (`StateCollector`).
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import logging
import os
import time
from collections.abc import Iterator

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_LONG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUESTS = Counter(
    "aihummer_http_requests", "HTTP requests answered, by method, route and status.", ["method", "route", "status"]
)
HTTP_DURATION = Histogram(
    "aihummer_http_request_duration_seconds",
    "Time to answer an HTTP request, by method and route.",
    ["method", "route"],
    buckets=_LATENCY_BUCKETS,
)
TURNS = Counter(
    "aihummer_turns", "Agent turns finished, by provider, model and status.", ["provider", "model", "status"]
)
TURN_TOKENS = Counter(
    "aihummer_turn_tokens",
    "Tokens of finished agent turns, by provider, model and kind (input, output, cached_input).",
    ["provider", "model", "kind"],
)
TURN_COST = Counter("aihummer_turn_cost_usd", "Cost of finished agent turns in USD.", ["provider", "model"])
TURN_DURATION = Histogram(
    "aihummer_turn_duration_seconds",
    "Wall-clock time of agent turns, by provider and model.",
    ["provider", "model"],
    buckets=_LONG_BUCKETS,
)
TASKS = Counter("aihummer_celery_tasks", "Celery tasks run, by task name and final state.", ["task", "state"])
TASK_DURATION = Histogram(
    "aihummer_celery_task_duration_seconds", "Time Celery tasks ran, by task name.", ["task"], buckets=_LONG_BUCKETS
)
STEPS = Counter(
    "aihummer_workflow_steps",
    "Workflow step attempts, by how they ended (completed, failed, skipped; pending: retried later).",
    ["status"],
)
EVIDENCE_RUNS = Counter("aihummer_evidence_runs", "Evidence runs finished, by status (done, failed).", ["status"])

EVIDENCE_TASK = "agents.evidence_run_execute"


# --- counted where they happen ---------------------------------------------------------
# Label lookups cost more than the increments (a lock and a validation each): the
# children are looked up once per label set and kept. Every label set is bounded
# (routes, task names, configured models, statuses).
@functools.lru_cache(maxsize=4096)
def _request_children(method: str, route: str, status: int) -> tuple:
    return HTTP_REQUESTS.labels(method, route, str(status)), HTTP_DURATION.labels(method, route)


@functools.lru_cache(maxsize=4096)
def _turn_children(provider: str, model: str, status: str) -> tuple:
    tokens = tuple(TURN_TOKENS.labels(provider, model, kind) for kind in ("input", "output", "cached_input"))
    return (
        TURNS.labels(provider, model, status),
        tokens,
        TURN_COST.labels(provider, model),
        TURN_DURATION.labels(provider, model),
    )


@functools.lru_cache(maxsize=4096)
def _task_children(name: str, state: str) -> tuple:
    return TASKS.labels(name, state), TASK_DURATION.labels(name)


_step_child = functools.lru_cache(maxsize=64)(STEPS.labels)


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    count, duration = _request_children(method if method in _METHODS else "OTHER", route, status)
    count.inc()
    duration.observe(seconds)


def observe_turn(turn: object) -> None:
    """A finished AgentTurn: counted with its tokens, cost and duration."""
    count, tokens, cost, duration = _turn_children(turn.provider_name or "none", turn.model or "none", turn.status)
    count.inc()
    for counter, value in zip(tokens, (turn.input_tokens, turn.output_tokens, turn.cached_input_tokens), strict=True):
        if value:
            counter.inc(value)
    if turn.cost_usd:
        cost.inc(float(turn.cost_usd))
    if turn.started_at and turn.finished_at:
        duration.observe((turn.finished_at - turn.started_at).total_seconds())


def observe_step(status: str) -> None:
    """A step attempt was recorded (the engine; a task may run several steps)."""
    _step_child(status).inc()


def observe_task(name: str, state: str, seconds: float | None, result: object) -> None:
    """A Celery task ended (task_postrun); an evidence run's task returns the status it
    ended with."""
    count, duration = _task_children(name, state)
    count.inc()
    if seconds is not None:
        duration.observe(seconds)
    if state == "SUCCESS" and name == EVIDENCE_TASK and result in ("done", "failed"):
        EVIDENCE_RUNS.labels(result).inc()


# --- read at scrape time -----------------------------------------------------------------
class StateCollector(Collector):
    """What the database and the broker hold now; the same from every web process."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from agents.models import EvidenceRun, PromptVersion
        from workflows.models import RunStatus, StepRun, StepStatus, WorkflowRun

        yield _by_status(
            "aihummer_workflow_runs_unfinished",
            "Workflow runs not finished, by status (pending: waiting to start).",
            WorkflowRun.all_objects.unfinished(),
            [RunStatus.PENDING, RunStatus.RUNNING],
        )
        running = GaugeMetricFamily("aihummer_workflow_steps_running", "Workflow steps running now (leased).")
        running.add_metric([], StepRun.objects.filter(status=StepStatus.RUNNING).count())
        yield running
        versions = PromptVersion.objects.all()  # sandbox versions never wait for anyone
        yield _by_status(
            "aihummer_prompt_versions", "Prompt versions, by status.", versions, PromptVersion.Status.values
        )
        oldest = versions.pending().order_by("created_at").values_list("created_at", flat=True).first()
        age = GaugeMetricFamily(
            "aihummer_approvals_oldest_pending_age_seconds",
            "Age of the oldest proposal waiting for review (0 when none waits).",
        )
        age.add_metric([], max(0.0, time.time() - oldest.timestamp()) if oldest else 0.0)
        yield age
        yield _by_status(
            "aihummer_evidence_runs_unfinished",
            "Evidence runs queued or running.",
            EvidenceRun.objects.filter(status__in=[EvidenceRun.Status.QUEUED, EvidenceRun.Status.RUNNING]),
            [EvidenceRun.Status.QUEUED, EvidenceRun.Status.RUNNING],
        )
        yield from _broker_families()


def _by_status(name: str, documentation: str, queryset: object, statuses: list[str]) -> GaugeMetricFamily:
    from django.db.models import Count

    counts = dict(queryset.order_by().values_list("status").annotate(n=Count("pk")))
    family = GaugeMetricFamily(name, documentation, labels=["status"])
    for status in statuses:
        family.add_metric([str(status)], counts.get(status, 0))
    return family


def _broker_families() -> Iterator[GaugeMetricFamily]:
    up = GaugeMetricFamily("aihummer_broker_up", "1 when the broker answered this scrape.")
    depth = GaugeMetricFamily("aihummer_celery_queue_length", "Messages waiting in a Celery queue.", labels=["queue"])
    if not settings.CELERY_BROKER_URL:
        return
    from kombu import Connection

    queues = [getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")]
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=2) as connection:
            connection.ensure_connection(max_retries=0, timeout=2)
            for queue in queues:
                depth.add_metric([queue], _queue_length(connection, queue))
        up.add_metric([], 1)
    except Exception as exc:  # a scrape reports the broker down; it never fails for it
        logger.warning("Metrics: the broker did not answer (%s)", exc)
        up.add_metric([], 0)
    yield up
    yield depth


def _queue_length(connection: object, queue: str) -> int:
    channel = connection.channel()
    try:
        return channel.queue_declare(queue=queue, passive=True).message_count
    except Exception:  # no such queue yet: nothing was ever sent to it
        return 0
    finally:
        with contextlib.suppress(Exception):  # a channel the broker closed after a failed passive declare
            channel.close()


# --- exposition ------------------------------------------------------------------------
_STATE = CollectorRegistry(auto_describe=False)
_STATE.register(StateCollector())


def process_registry() -> CollectorRegistry:
    """This process's counters, or every web process's with PROMETHEUS_MULTIPROC_DIR."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def metrics_view(request: HttpRequest) -> HttpResponse:
    """`/metrics`: the counters and the state, for a scraper holding the token."""
    token = settings.AIHUMMER_METRICS_TOKEN
    if not token:
        raise Http404("Metrics are off: set AIHUMMER_METRICS_TOKEN.")
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse("A scraper sends Authorization: Bearer <AIHUMMER_METRICS_TOKEN>.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body = generate_latest(process_registry()) + generate_latest(_STATE)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


def serve_worker_metrics() -> None:
    """A worker's counters on its own port (`worker_ready`), when one is configured."""
    port = settings.AIHUMMER_WORKER_METRICS_PORT
    if not port:
        return
    from prometheus_client import start_http_server

    start_http_server(port, addr=settings.AIHUMMER_WORKER_METRICS_ADDR, registry=process_registry())
    logger.info("Worker metrics on http://%s:%d/metrics", settings.AIHUMMER_WORKER_METRICS_ADDR, port)
