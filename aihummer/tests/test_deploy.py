"""Issue 34: the production recipe, as deploy/ writes it, on Redis and on RabbitMQ.

release (once for both brokers), web (gunicorn + uvicorn workers), a worker and beat are
started with the recipe's own commands (deploy/bin/*) and a production environment; then the probes,
a workflow run through the REST API, the JSON log lines, the web's and the worker's
metrics and the traces they export are read from the outside, as an operator would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from aihummer.telemetry import run_span_id
from aihummer.tests.factories import make_fan_out
from aihummer.tests.otlp_receiver import OtlpReceiver
from aihummer.tests.ports import free_port
from aihummer.tests.recipe import METRICS_TOKEN, Recipe, http, production_environ, wait_until

pytestmark = pytest.mark.django_db(transaction=True)
# What Celery prints itself, outside logging: its warning about running as root (the
# tests run as root; the recipe's units and image run as `aihummer`) and its farewell.
CELERY_CONSOLE = re.compile(
    r"^$|SecurityWarning: You're running the worker with superuser|^absolutely not recommended|--uid option|"
    r"^User information: uid=0|_warn_or_raise_security_error|^worker: Warm shutdown"
)


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture(scope="module")
def released(tmp_path_factory, django_db_setup, django_db_blocker, redis_url) -> Path:
    """The recipe's release (check --deploy, migrate, collectstatic) on the test database,
    once for the module: it reaches no broker, so Redis's and RabbitMQ's tests share it.
    Its STATIC_ROOT."""
    static = tmp_path_factory.mktemp("static")
    with django_db_blocker.unblock():
        environ = production_environ(database_url=database_url(), broker_url=redis_url, STATIC_ROOT=str(static))
    Recipe(tmp_path_factory.mktemp("release-logs"), environ).run("release")
    assert (static / "admin").is_dir()
    return static


@pytest.fixture
def fan_out(workspace):
    """An API key, an echo default preset and a three-step workflow with two parallel steps."""
    return make_fan_out(workspace)


def test_the_recipe_runs_web_worker_and_beat(tmp_path, released, broker_url, fan_out) -> None:
    port, worker_port = free_port(), free_port()
    collector = OtlpReceiver().__enter__()
    recipe = Recipe(
        tmp_path / "logs",
        production_environ(
            database_url=database_url(),
            broker_url=broker_url,
            PORT=str(port),
            HOST="127.0.0.1",
            STATIC_ROOT=str(released),
            PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "web-metrics"),
            AIHUMMER_WORKER_NAME=f"worker-{port}@%h",
            AIHUMMER_WORKER_METRICS_PORT=str(worker_port),
            AIHUMMER_BEAT_SCHEDULE_FILE=str(tmp_path / "beat" / "schedule"),
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
            OTEL_BSP_SCHEDULE_DELAY="200",
        ),
    )
    base = f"http://127.0.0.1:{port}"
    api = {"Authorization": f"Bearer {fan_out}"}
    try:
        recipe.start("web", "web", OTEL_SERVICE_NAME="aihummer-web")
        recipe.start("worker", "worker", OTEL_SERVICE_NAME="aihummer-worker")
        recipe.start("beat", "beat")
        wait_until(lambda: http(f"{base}/healthz")[0] == 200, timeout=90, what="web", diagnostics=recipe.diagnostics)
        assert "answers" in recipe.run("worker-ready", "90")

        status, ready = http(f"{base}/readyz")
        assert (status, ready["status"]) == (200, "ok"), ready
        assert {name: check["status"] for name, check in ready["checks"].items()} == {
            "database": "ok",
            "broker": "ok",
            "cache": "ok",
        }

        status, run = http(f"{base}/v1/admin/workflows/fan/runs", method="POST", body={"message": "go"}, headers=api)
        assert status == 202, run

        def finished() -> dict | None:
            _, body = http(f"{base}/v1/admin/runs/{run['id']}", headers=api)
            return body if body["status"] in ("completed", "failed") else None

        run = wait_until(finished, timeout=60, what="the run", diagnostics=recipe.diagnostics)
        assert run["status"] == "completed", run
        assert http(f"{base}/nowhere", headers={"X-Request-Id": "recipe-404"})[0] == 404

        # Beat sends the sweep every second (AIHUMMER_REVIVE_INTERVAL_SEC); the worker runs it.
        def worker_samples() -> dict | None:
            found = samples(http(f"http://127.0.0.1:{worker_port}/metrics")[1]["text"])
            revive = ("aihummer_celery_tasks_total", (("state", "SUCCESS"), ("task", "workflows.workflow_runs_revive")))
            return found if found.get(revive, 0) >= 1 else None

        worker = wait_until(
            worker_samples, timeout=30, what="beat's sweep on the worker", diagnostics=recipe.diagnostics
        )
        status, scraped = http(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert status == 200
        web = samples(scraped["text"])
        # Traces, exported by web and worker processes to the collector the environment names,
        # each process in its own batches: every span read below is waited for (the web's
        # request span once came after the worker's run span).
        trace_id = run["id"].replace("-", "")

        def traced() -> bool:
            names = {span.name for span in collector.spans if span.trace_id == trace_id}
            request = any(span.name == "POST v1:workflow-runs" for span in collector.spans)
            return request and {"run fan", "step join", "chat echo-1"} <= names

        wait_until(traced, timeout=30, what="the run's spans at the collector", diagnostics=recipe.diagnostics)
    finally:
        recipe.stop()
        collector.__exit__()

    assert worker[("aihummer_workflow_steps_total", (("status", "completed"),))] == 3
    assert worker[("aihummer_turns_total", (("model", "echo-1"), ("provider", "echo"), ("status", "succeeded")))] == 3
    assert web[("aihummer_http_requests_total", (("method", "POST"), ("route", "v1:workflow-runs"), ("status", "202")))]
    assert web[("aihummer_workflow_runs_unfinished", (("status", "running"),))] == 0
    assert web[("aihummer_broker_up", ())] == 1

    web_lines, worker_lines, beat_lines = (recipe.json_lines(name) for name in ("web", "worker", "beat"))
    not_json = [line["unparsed"] for line in web_lines + worker_lines + beat_lines if "unparsed" in line]
    assert not [line for line in not_json if not CELERY_CONSOLE.search(line)], "every log line is JSON"
    [not_found] = [line for line in web_lines if line.get("request_id") == "recipe-404"]
    assert (not_found["level"], not_found["logger"], not_found["status"]) == ("WARNING", "aihummer.request", 404)
    [started] = [line for line in web_lines if line.get("route") == "v1:workflow-runs"]
    assert (started["status"], started["workspace"]) == (202, "acme")
    assert not [line for line in web_lines if line.get("logger") in ("uvicorn.access", "gunicorn.access")]
    step_lines = [line for line in worker_lines if line.get("run_id") == run["id"]]
    # A task per branch, each line with its task id; the join, the last branch's lone
    # successor, runs in that branch's task (issue 26).
    assert len({line["task_id"] for line in step_lines}) == 2, step_lines
    assert any(line["logger"] == "celery.beat" and "workflow-runs-revive" in line["message"] for line in beat_lines)
    services = {(span.name, span.service) for span in collector.spans if span.trace_id == trace_id}
    assert {
        ("run fan", "aihummer-worker"),
        ("step join", "aihummer-worker"),
        ("chat echo-1", "aihummer-worker"),
    } <= services
    [request] = [span for span in collector.spans if span.name == "POST v1:workflow-runs"]
    assert (request.service, request.links) == ("aihummer-web", [(trace_id, f"{run_span_id(run['id']):016x}")])
