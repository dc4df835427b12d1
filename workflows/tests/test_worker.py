"""Workflows on a real Celery worker (threads pool, concurrency 2) over Redis and
PostgreSQL: the seed's pipeline, a fan-in whose parallel steps really overlap, and a
failing step. (On RabbitMQ: test_worker_crash.py and aihummer/tests/test_deploy.py.)"""

from __future__ import annotations

import time

import pytest

from aihummer.tests.factories import make_agent, openai_preset
from workflows.models import StepRun
from workflows.services import workflow_create, workflow_run_start, workflow_run_wait

pytestmark = pytest.mark.django_db(transaction=True)
WAIT = 30


def steps_of(run) -> dict[str, StepRun]:
    return {step.name: step for step in StepRun.objects.filter(run=run)}


def test_the_seed_pipeline_runs_on_a_worker(worker_on_redis, pipeline, alice_actor) -> None:
    run = workflow_run_start(workflow=pipeline, actor=alice_actor, message="Article : Lorem ipsum")
    run = workflow_run_wait(run=run, timeout=WAIT)
    steps = steps_of(run)
    assert run.status == "completed", run.error
    assert steps["critique"].input == steps["lecture"].output["answer"]
    assert steps["lecture"].input == "Article : Lorem ipsum"
    assert run.outputs == {"final": steps["critique"].output["answer"]}


def test_a_failing_step_fails_the_run_on_a_worker(worker_on_redis, pipeline, alice_actor) -> None:
    run = workflow_run_wait(
        run=workflow_run_start(workflow=pipeline, actor=alice_actor, message="@error auth"), timeout=WAIT
    )
    steps = steps_of(run)
    assert run.status == "failed"
    assert run.error.startswith("Step 'lecture' failed: Provider error (auth)")
    assert (steps["lecture"].status, steps["critique"].status) == ("failed", "pending")


def test_a_fan_in_runs_its_parallel_steps_at_the_same_time(worker_on_redis, workspace, slow_preset, operator) -> None:
    for key in ("left", "right", "join"):
        make_agent(workspace, key, f"You are {key}.", preset=slow_preset)
    definition = {
        "version": 1,
        "steps": [
            {"name": "left", "agent_name": "left", "depends_on": []},
            {"name": "right", "agent_name": "right", "depends_on": []},
            {
                "name": "join",
                "agent_name": "join",
                "depends_on": ["left", "right"],
                "input_mapping": {"L": "$.steps.left.output.answer", "R": "$.steps.right.output.answer"},
                "output_key": "joined",
            },
        ],
    }
    workflow = workflow_create(workspace=workspace, actor=operator, key="fan", name="Fan-in", definition=definition)
    run = workflow_run_wait(run=workflow_run_start(workflow=workflow, actor=operator, message="go"), timeout=WAIT)
    steps = steps_of(run)
    assert run.status == "completed", run.error
    left, right, join = steps["left"], steps["right"], steps["join"]
    # Each parallel step started before the other finished: they overlapped.
    assert left.started_at < right.finished_at and right.started_at < left.finished_at
    assert join.started_at >= max(left.finished_at, right.finished_at)
    assert join.input == "## L\nanswer: go\n\n## R\nanswer: go"
    assert run.outputs == {"joined": "answer: ## L\nanswer: go\n\n## R\nanswer: go"}
    step_ms = sum(step.duration_ms for step in (left, right, join))
    assert run.duration_ms < 0.8 * step_ms, (run.duration_ms, step_ms)


def test_the_heartbeat_keeps_a_long_step_leased(worker_on_redis, workspace, operator, settings) -> None:
    from workflows.execution import workflow_runs_revive
    from workflows.tests.fake_openai import FakeOpenAI

    # Renewed every second; the model takes 4 s, so each lease must be renewed at least
    # three times. (A 1 s lease left a loaded machine 0.67 s of slack: a late beat let the
    # sweep take a live step.)
    settings.AIHUMMER_STEP_LEASE_SEC = 3
    with FakeOpenAI(delay=4.0) as server:
        make_agent(workspace, "long", "Long.", preset=openai_preset(workspace, server, by=operator))
        definition = {"version": 1, "steps": [{"name": "long", "agent_name": "long"}]}
        workflow = workflow_create(workspace=workspace, actor=operator, key="long", name="Long", definition=definition)
        run = workflow_run_start(workflow=workflow, actor=operator, message="go")
        swept = []
        while not run.is_finished:
            swept.append(workflow_runs_revive()["steps_recovered"])
            time.sleep(0.25)
            run.refresh_from_db()
    step = steps_of(run)["long"]
    assert run.status == "completed"
    assert step.attempts == 1 and step.duration_ms >= 2000
    assert len(swept) >= 6 and set(swept) == {0}


@pytest.fixture
def step_tasks():
    """The workflow-step tasks the worker (in this process) starts, by step name."""
    from celery.signals import task_prerun

    started: list[str] = []

    def record(sender=None, args=(), **_: object) -> None:
        if sender is not None and sender.name == "workflows.workflow_step_run":
            started.append(args[1])

    task_prerun.connect(record, weak=False)
    yield started
    task_prerun.disconnect(record)


def test_a_lone_successor_runs_in_the_same_task_and_a_fan_out_goes_through_the_broker(
    worker_on_redis, workspace, operator, echo_preset, step_tasks
) -> None:
    make_agent(workspace, "echo", "Repeat.", preset=echo_preset)
    definition = {
        "version": 1,
        "steps": [
            {"name": "first", "agent_name": "echo"},
            {"name": "second", "agent_name": "echo"},  # the lone successor of first
            {"name": "left", "agent_name": "echo", "depends_on": ["second"]},
            {"name": "right", "agent_name": "echo", "depends_on": ["second"]},
        ],
    }
    workflow = workflow_create(workspace=workspace, actor=operator, key="chain", name="Chain", definition=definition)

    run = workflow_run_wait(run=workflow_run_start(workflow=workflow, actor=operator, message="go"), timeout=WAIT)

    assert run.status == "completed", run.error
    # first's task ran second too; second made two steps ready: one task each.
    assert sorted(step_tasks) == ["first", "left", "right"]
    assert {step.name: step.attempts for step in steps_of(run).values()} == {
        "first": 1,
        "second": 1,
        "left": 1,
        "right": 1,
    }


def test_one_heartbeat_keeps_every_step_of_a_worker_leased(worker_on_redis, workspace, operator, settings) -> None:
    import threading

    from workflows.execution import workflow_runs_revive
    from workflows.tests.fake_openai import FakeOpenAI

    # Renewed every second; the model takes 4 s, so each lease must be renewed at least
    # three times. (A 1 s lease left a loaded machine 0.67 s of slack: a late beat let the
    # sweep take a live step.)
    settings.AIHUMMER_STEP_LEASE_SEC = 3
    with FakeOpenAI(delay=4.0) as server:
        make_agent(workspace, "long", "Long.", preset=openai_preset(workspace, server, by=operator))
        steps = [{"name": name, "agent_name": "long", "depends_on": []} for name in ("a", "b")]
        workflow = workflow_create(
            workspace=workspace, actor=operator, key="two", name="Two", definition={"version": 1, "steps": steps}
        )
        run = workflow_run_start(workflow=workflow, actor=operator, message="go")
        swept, keepers = [], set()
        while not run.is_finished:
            keepers.add(sum(thread.name == "lease-keeper" for thread in threading.enumerate()))
            swept.append(workflow_runs_revive()["steps_recovered"])
            time.sleep(0.25)
            run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "completed"
    # Why an attempt ended, if one did (seen once at load 6: two attempts each, none swept).
    ended = {name: (step.attempts, step.attempt_log, step.error) for name, step in steps.items()}
    assert [steps["a"].attempts, steps["b"].attempts] == [1, 1], ended
    assert steps["a"].started_at < steps["b"].finished_at and steps["b"].started_at < steps["a"].finished_at
    assert len(swept) >= 6 and set(swept) == {0}
    # One thread for both leases, not one per step (0 before the first lease is taken).
    assert max(keepers) == 1
