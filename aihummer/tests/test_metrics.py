"""Issue 34: /metrics, scraped after requests, a workflow run on a real worker and an
approval, says what happened (values, not only names); it needs its token."""

from __future__ import annotations

import time

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from agents.models import EvidenceRun
from agents.services import (
    agent_create,
    agent_test_case_create,
    prompt_version_approve,
    prompt_version_propose,
)
from aihummer.actors import Actor
from aihummer.celery import app
from aihummer.tests.brokers import point_app_at
from aihummer.tests.factories import PIPELINE, make_echo_preset
from workflows.services import workflow_create, workflow_run_start, workflow_run_wait

TOKEN = "scrape-token-0123456789abcdef"


@pytest.fixture
def scrape(client, settings):
    settings.AIHUMMER_METRICS_TOKEN = TOKEN

    def scrape() -> dict[tuple[str, tuple], float]:
        response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith("text/plain; version=")
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return scrape


@pytest.fixture
def echo_agents(workspace):
    """An echo default preset and the pipeline's two agents."""
    operator = Actor.for_operator(name="tests")
    make_echo_preset(workspace, by=operator)
    for key in ("lecteur", "critique"):
        agent_create(
            workspace=workspace, actor=operator, key=key, name=key.title(), snapshot={"system_prompt": f"You {key}."}
        )


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_off_without_a_token(client, db, settings):
    settings.AIHUMMER_METRICS_TOKEN = ""

    assert client.get("/metrics").status_code == 404


@pytest.mark.parametrize("header", ["", "Bearer wrong", f"Bearer {TOKEN}x", TOKEN])
def test_metrics_need_the_token(client, db, settings, header):
    settings.AIHUMMER_METRICS_TOKEN = TOKEN

    response = client.get("/metrics", headers={"Authorization": header} if header else {})

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"aihummer_" not in response.content


def test_requests_are_counted_by_route_and_status(client, db, scrape):
    before = scrape()
    client.get("/v1/admin/agents")
    client.get("/v1/admin/agents")
    client.get("/no/such/page")
    after = scrape()

    labels = {"method": "GET", "route": "v1:agent-list", "status": "401"}
    assert value(after, "aihummer_http_requests_total", **labels) - value(
        before, "aihummer_http_requests_total", **labels
    ) == pytest.approx(2)
    unmatched = {"method": "GET", "route": "unmatched", "status": "404"}
    assert value(after, "aihummer_http_requests_total", **unmatched) - value(
        before, "aihummer_http_requests_total", **unmatched
    ) == pytest.approx(1)
    duration = {"method": "GET", "route": "v1:agent-list"}
    assert value(after, "aihummer_http_request_duration_seconds_count", **duration) - value(
        before, "aihummer_http_request_duration_seconds_count", **duration
    ) == pytest.approx(2)


@pytest.mark.django_db(transaction=True)
def test_a_run_on_a_worker_counts_its_steps_turns_tokens_and_tasks(worker_on_redis, scrape, workspace, echo_agents):
    operator = Actor.for_operator(name="tests")
    workflow = workflow_create(workspace=workspace, actor=operator, key="p", name="P", definition=PIPELINE)
    before = scrape()

    run = workflow_run_wait(run=workflow_run_start(workflow=workflow, actor=operator, message="Bonjour"), timeout=30)
    after = scrape()

    assert run.status == "completed", run.error

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    echo = {"provider": "echo", "model": "echo-1"}
    assert delta("aihummer_workflow_steps_total", status="completed") == 2
    assert delta("aihummer_turns_total", status="succeeded", **echo) == 2
    assert delta("aihummer_turn_tokens_total", kind="input", **echo) == run.input_tokens > 0
    assert delta("aihummer_turn_tokens_total", kind="output", **echo) == run.output_tokens > 0
    assert delta("aihummer_turn_duration_seconds_count", **echo) == 2
    # The critique, lecture's lone successor, runs in lecture's task (issue 26).
    assert delta("aihummer_celery_tasks_total", task="workflows.workflow_step_run", state="SUCCESS") == 1
    assert delta("aihummer_celery_task_duration_seconds_count", task="workflows.workflow_step_run") == 1
    assert value(after, "aihummer_workflow_runs_unfinished", status="running") == 0
    assert value(after, "aihummer_workflow_steps_running") == 0
    assert value(after, "aihummer_broker_up") == 1


@pytest.mark.django_db(transaction=True)
def test_a_proposal_and_its_approval_move_the_approval_and_evidence_figures(
    worker_on_redis, scrape, workspace, alice, bob, echo_agents
):
    agent = workspace.agents.get(key="lecteur")
    agent_test_case_create(agent=agent, actor=Actor.for_user(alice), name="says hi", message="hi")
    before = scrape()

    version = prompt_version_propose(
        agent=agent, changes={"system_prompt": "Hello"}, actor=Actor.for_user(alice), reason="warmer"
    )
    pending = scrape()
    evidence = EvidenceRun.objects.get(version=version)
    for _ in range(300):
        evidence.refresh_from_db()
        if evidence.status == "done":
            break
        time.sleep(0.05)
    prompt_version_approve(version=version, actor=Actor.for_user(bob))
    after = scrape()

    assert value(before, "aihummer_prompt_versions", status="pending") == 0
    assert value(pending, "aihummer_prompt_versions", status="pending") == 1
    assert value(pending, "aihummer_approvals_oldest_pending_age_seconds") > 0
    assert value(after, "aihummer_prompt_versions", status="pending") == 0
    assert (
        value(after, "aihummer_prompt_versions", status="approved")
        == value(before, "aihummer_prompt_versions", status="approved") + 1
    )
    assert value(after, "aihummer_approvals_oldest_pending_age_seconds") == 0
    assert evidence.status == "done"
    assert (
        value(after, "aihummer_evidence_runs_total", status="done")
        - value(before, "aihummer_evidence_runs_total", status="done")
        == 1
    )
    assert value(after, "aihummer_evidence_runs_unfinished", status="queued") == 0


def test_queue_depth_is_read_from_the_broker(scrape, settings, redis_url, db):
    redis.Redis.from_url(redis_url).flushdb()
    settings.CELERY_BROKER_URL = redis_url
    point_app_at(redis_url)
    try:
        for _ in range(3):
            app.send_task("workflows.workflow_runs_revive")
        samples = scrape()
    finally:
        point_app_at(None)

    assert value(samples, "aihummer_celery_queue_length", queue="celery") == 3
    assert value(samples, "aihummer_broker_up") == 1


def test_a_broker_that_does_not_answer_is_reported_not_raised(scrape, settings, db):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    point_app_at(settings.CELERY_BROKER_URL)
    try:
        samples = scrape()
    finally:
        point_app_at(None)

    assert value(samples, "aihummer_broker_up") == 0
    assert not [key for key in samples if key[0] == "aihummer_celery_queue_length"]
