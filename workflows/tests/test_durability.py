"""Durable runs: cancel, resume, per-step timeouts, retries with backoff, the run's
wall-clock limit and the beat's sweep (expired leases, spent attempts, lost tasks)."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.utils import timezone

from agents.models import AgentTurn
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.tests.factories import make_agent, openai_preset
from aihummer.tests.waiting import published_tasks, wait_until
from workflows.execution import _step_start, _step_turn, plan_for, workflow_runs_revive, workflow_step_run
from workflows.models import StepRun, WorkflowRun
from workflows.services import (
    workflow_create,
    workflow_run_cancel,
    workflow_run_resume,
    workflow_run_start,
    workflow_run_wait,
)
from workflows.store import step_claim
from workflows.tests.fake_openai import FakeOpenAI


def steps_of(run: WorkflowRun) -> dict[str, StepRun]:
    return {step.name: step for step in StepRun.objects.filter(run=run)}


def linear(workspace, operator, agent_key: str, key: str = "linear", n: int = 3, **step_extra: object):
    definition = {
        "version": 1,
        "steps": [{"name": f"s{i}", "agent_name": agent_key, **step_extra} for i in range(1, n + 1)],
    }
    return workflow_create(workspace=workspace, actor=operator, key=key, name=key, definition=definition)


# --- cancel ---------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_cancel_lets_the_running_step_finish_and_starts_no_other(
    worker_on_redis, workspace, operator, slow_preset
) -> None:
    from celery.signals import task_postrun

    make_agent(workspace, "slow", "Slow.", preset=slow_preset)
    ended = []
    task_postrun.connect(record := lambda args=(), **kwargs: ended.append(tuple(args)), weak=False)
    try:
        with published_tasks() as sent:
            run = workflow_run_start(workflow=linear(workspace, operator, "slow"), actor=operator, message="go")
            wait_until(lambda: StepRun.objects.filter(run=run, name="s1", status="running").exists(), what="s1 running")
            cancelled = workflow_run_cancel(run=run, actor=operator)
            assert (cancelled.status, cancelled.error) == ("cancelled", "Cancelled by cli:tests.")
            # The task that ran s1 has ended: whatever it would have sent or run next, it has.
            wait_until(lambda: (str(run.pk), "s1") in ended, what="the end of s1's task")
    finally:
        task_postrun.disconnect(record)
    assert [args for _, args in sent] == [(str(run.pk), "s1")]
    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "cancelled"
    assert steps["s1"].status == "completed" and steps["s1"].output["answer"] == "answer: go"
    assert [steps["s2"].status, steps["s3"].status] == ["cancelled", "cancelled"]
    assert [steps["s2"].attempts, steps["s3"].attempts] == [0, 0]
    with pytest.raises(ApplicationError, match=re.escape("is already cancelled; there is nothing to cancel.")):
        workflow_run_cancel(run=run, actor=operator)


@pytest.mark.django_db(transaction=True)
def test_a_finish_claiming_its_successor_takes_the_lock_order_of_a_cancel(pipeline, operator, settings) -> None:
    """A cancel writes its run's pending steps, then the run's row. The statement that
    finishes a step and claims its successor must take the successor's row before the
    run's, or a cancel between the two would deadlock with it."""
    with transaction.atomic():
        run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
        connection.run_on_commit.clear()  # its first step's task, dropped: this test runs the step
    now = timezone.now()
    claim = step_claim(run_id=run.pk, name="lecture", now=now, lease_until=now + timedelta(seconds=60))
    plan = plan_for(claim.run_id, claim.definition)
    prepared = _step_start(claim, plan, now)
    settings.CELERY_BROKER_URL = "memory://"  # a worker's: the finish claims the lone successor
    steps_written, finish_waits = threading.Event(), threading.Event()

    def cancel_in_two_parts() -> None:  # workflow_run_cancel's writes, with the finish between them
        try:
            with transaction.atomic():
                StepRun.objects.filter(run=run, status="pending").update(status="cancelled", finished_at=now)
                steps_written.set()
                finish_waits.wait(30)
                WorkflowRun.objects.select_for_update().filter(pk=run.pk).update(status="cancelled")
        finally:
            connection.close()

    def finish() -> tuple:
        try:
            return _step_turn(claim, plan, prepared)
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        cancelled = pool.submit(cancel_in_two_parts)
        assert steps_written.wait(30)
        finished = pool.submit(finish)
        wait_until(_a_turn_write_waits_for_a_lock, what="the finish waiting for the successor's row")
        finish_waits.set()
        cancelled.result()  # no deadlock: the cancel took the run's row at once
        assert finished.result() == ("completed", None)  # nothing claimed after the cancel
    steps = steps_of(run)
    assert [steps["lecture"].status, steps["critique"].status, steps["critique"].attempts] == [
        "completed",
        "cancelled",
        0,
    ]


def _a_turn_write_waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE %s",
            ['WITH parent AS (INSERT INTO "agents_agentturn"%'],
        )
        return cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_cancel_and_resume_check_rights_and_workspace(pipeline, operator, vic, charlie) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="x")
    with pytest.raises(NotFound):
        workflow_run_cancel(run=run, actor=Actor.for_user(charlie))
    with pytest.raises(PermissionDenied, match=re.escape("vic is a viewer in workspace 'acme'; running agents")):
        workflow_run_cancel(run=run, actor=Actor.for_user(vic))
    with pytest.raises(
        ApplicationError, match=re.escape(f"Only a failed run can be resumed; run {run.pk} is pending.")
    ):
        workflow_run_resume(run=run, actor=operator)


# --- resume ---------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_resume_runs_failed_and_unstarted_steps_again_on_the_same_rows(workspace, operator, settings) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0
    with FakeOpenAI(fail_first=1) as server:
        make_agent(workspace, "flaky", "Flaky.", preset=openai_preset(workspace, server, by=operator))
        run = workflow_run_start(workflow=linear(workspace, operator, "flaky", n=2), actor=operator, message="x")
        run.refresh_from_db()
        assert run.status == "failed"
        assert run.error.startswith("Step 's1' failed: Provider error (unavailable)")
        assert steps_of(run)["s2"].status == "pending"
        out = StringIO()
        call_command("resume_run", str(run.pk), stdout=out)
    assert out.getvalue() == f"run {run.pk}: running\n"
    run.refresh_from_db()
    steps = steps_of(run)
    assert run.status == "completed" and run.error == ""
    assert [steps["s1"].attempts, steps["s2"].attempts] == [2, 1]
    assert (steps["s1"].output["answer"], steps["s2"].input) == ("answer: x", "x")  # no mapping: the message
    assert StepRun.objects.filter(run=run).count() == 2
    with pytest.raises(CommandError, match=re.escape(f"Only a failed run can be resumed; run {run.pk} is completed.")):
        call_command("resume_run", str(run.pk))


@pytest.mark.django_db
def test_cancel_run_command(pipeline, operator) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="x")  # never committed: stays pending
    out = StringIO()
    call_command("cancel_run", str(run.pk), stdout=out)
    assert out.getvalue() == f"run {run.pk}: cancelled\n"
    assert set(StepRun.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}
    with pytest.raises(CommandError, match=r"^No workflow run 'nope'\.$"):
        call_command("cancel_run", "nope")


# --- timeouts and retries -------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_step_that_outlives_its_timeout_fails(workspace, operator) -> None:
    with FakeOpenAI(delay=3.0) as server:
        make_agent(workspace, "sleepy", "Sleepy.", preset=openai_preset(workspace, server, by=operator))
        workflow = linear(workspace, operator, "sleepy", n=1, timeout_seconds=1)
        started = time.monotonic()
        run = workflow_run_start(workflow=workflow, actor=operator, message="go")
        elapsed = time.monotonic() - started
        run.refresh_from_db()
    assert 1.0 <= elapsed < 2.5  # it stopped waiting at 1 s, not after the model's 3 s
    assert run.status == "failed"
    assert steps_of(run)["s1"].error == "Step 's1' timed out after 1 s (timeout_seconds)."


@pytest.mark.django_db(transaction=True)
def test_a_timed_out_steps_turn_has_ended_before_it_is_retried(workspace, operator, settings) -> None:
    # Issue 25, item 8: the retry used to start while the first turn still waited on
    # the provider (tokens paid twice, a self-edit possibly proposed twice).
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0  # one request per turn: the provider's count is the turns'
    settings.AIHUMMER_STEP_RETRY_BACKOFF_SEC = 0.1
    # 2 s of step time: on a loaded machine a turn's set-up has taken most of 1 s before
    # its request went out, and an attempt then ended without reaching the provider.
    with FakeOpenAI(delay=4.5) as server:
        make_agent(workspace, "sleepy", "Sleepy.", preset=openai_preset(workspace, server, by=operator))
        workflow = linear(workspace, operator, "sleepy", n=1, timeout_seconds=2, retries=1)
        run = workflow_run_start(workflow=workflow, actor=operator, message="go")
        requests_when_the_run_ended = len(server.bodies)
        turns = list(AgentTurn.objects.filter(agent_key="sleepy").order_by("started_at"))
    run.refresh_from_db()
    step = steps_of(run)["s1"]
    assert (run.status, step.status, step.attempts) == ("failed", "failed", 2)
    assert step.error == "Step 's1' timed out after 2 s (timeout_seconds)."
    assert requests_when_the_run_ended == len(server.bodies) == 2  # one per attempt, none left running
    assert [(turn.status, turn.error_kind) for turn in turns] == [("failed", "deadline"), ("failed", "deadline")]
    assert turns[1].started_at >= turns[0].finished_at  # the retry began after the first turn ended
    assert step.turn_id == turns[1].pk


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("script", "kind", "attempts"), [("@error rate_limit", "rate_limit", 2), ("@error auth", "auth", 1)]
)
def test_a_turn_records_its_error_kind_and_retries_decide_on_it(pipeline, operator, settings, script, kind, attempts):
    settings.AIHUMMER_STEP_RETRY_BACKOFF_SEC = 0.01
    definition = {**pipeline.definition, "steps": [{**s, "retries": 1} for s in pipeline.definition["steps"]]}
    workflow = workflow_create(
        workspace=pipeline.workspace, actor=operator, key="retrying", name="R", definition=definition
    )

    run = workflow_run_wait(run=workflow_run_start(workflow=workflow, actor=operator, message=script), timeout=5)

    assert (run.status, steps_of(run)["lecture"].attempts) == ("failed", attempts)
    assert set(AgentTurn.objects.values_list("error_kind", flat=True)) == {kind}


@pytest.mark.django_db(transaction=True)
def test_a_transient_failure_is_retried_with_backoff_then_succeeds(workspace, operator, settings) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0  # the SDK's own retries off: the step retries
    settings.AIHUMMER_STEP_RETRY_BACKOFF_SEC = 0.2
    with FakeOpenAI(fail_first=1) as server:
        make_agent(workspace, "flaky", "Flaky.", preset=openai_preset(workspace, server, by=operator))
        started = time.monotonic()
        run = workflow_run_start(
            workflow=linear(workspace, operator, "flaky", n=1, retries=2), actor=operator, message="x"
        )
        elapsed = time.monotonic() - started
    run.refresh_from_db()
    step = steps_of(run)["s1"]
    assert run.status == "completed"
    assert (step.status, step.attempts, step.error) == ("completed", 2, "")
    assert elapsed >= 0.2
    turns = AgentTurn.objects.filter(agent_key="flaky").order_by("started_at")
    assert [t.status for t in turns] == ["failed", "succeeded"]
    assert turns[0].error.startswith("Provider error (unavailable)")
    # The failed attempt is in the step's log, with its turn: the run page draws it.
    [first] = step.attempt_log
    assert (first["attempt"], first["turn_id"]) == (1, turns[0].pk)
    assert first["error"].startswith("Attempt 1 failed (Provider error (unavailable)")
    assert first["started_at"] < first["ended_at"] <= step.started_at.isoformat()


@pytest.mark.django_db(transaction=True)
def test_a_permanent_failure_is_not_retried(pipeline, operator) -> None:
    definition = {**pipeline.definition}
    definition["steps"] = [{**s, "retries": 3} for s in definition["steps"]]
    workflow = workflow_create(
        workspace=pipeline.workspace, actor=operator, key="retrying", name="R", definition=definition
    )
    run = workflow_run_wait(run=workflow_run_start(workflow=workflow, actor=operator, message="@error auth"), timeout=5)
    assert run.status == "failed"
    assert steps_of(run)["lecture"].attempts == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_past_its_wall_clock_limit_starts_no_further_step(workspace, operator, settings) -> None:
    settings.AIHUMMER_RUN_TIMEOUT_SEC = 1
    with FakeOpenAI(delay=0.6) as server:
        make_agent(workspace, "slowish", "Slow.", preset=openai_preset(workspace, server, by=operator))
        run = workflow_run_start(workflow=linear(workspace, operator, "slowish"), actor=operator, message="go")
    run.refresh_from_db()
    steps = [steps_of(run)[name] for name in ("s1", "s2", "s3")]
    statuses = [step.status for step in steps]
    # s1 always starts in time; the first step claimed after the limit fails unrun.
    late = statuses.index("failed")
    assert statuses == ["completed"] * late + ["failed"] + ["pending"] * (2 - late) and late >= 1
    assert steps[late].turn_id is None
    assert run.status == "failed"
    assert run.error == (
        f"Step 's{late + 1}' failed: The run passed its wall-clock limit of 1 s (AIHUMMER_RUN_TIMEOUT_SEC)."
    )


# --- the beat's sweep -----------------------------------------------------------------
@pytest.fixture
def started(pipeline, operator, django_capture_on_commit_callbacks):
    """A run whose first step a worker claimed 2 minutes ago (its lease is long gone)."""
    with django_capture_on_commit_callbacks():
        run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    then = timezone.now() - timedelta(minutes=2)
    WorkflowRun.objects.filter(pk=run.pk).update(status="running", started_at=then, created_at=then)
    assert step_claim(run_id=run.pk, name="lecture", now=then, lease_until=then + timedelta(seconds=60))
    return run


@pytest.mark.django_db
def test_the_sweep_gives_a_dead_workers_step_another_attempt(started, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as sent:
        assert workflow_runs_revive() == {
            "runs_timed_out": 0,
            "steps_recovered": 1,
            "steps_failed": 0,
            "steps_redispatched": 0,
        }
    lecture = steps_of(started)["lecture"]
    assert (lecture.status, lecture.attempts, lecture.lease_expires_at) == ("pending", 1, None)
    assert lecture.error.startswith("The worker running attempt 1 stopped answering (its lease expired at ")
    assert [(e["attempt"], e["error"], e["turn_id"]) for e in lecture.attempt_log] == [(1, lecture.error, None)]
    assert len(sent) == 1
    with django_capture_on_commit_callbacks() as sent:
        assert workflow_runs_revive()["steps_recovered"] == 0  # safe to run twice
    assert workflow_step_run(run_id=started.pk, step="lecture") == "completed"
    assert steps_of(started)["lecture"].attempts == 2


@pytest.mark.django_db
def test_the_sweep_fails_a_step_whose_attempts_are_spent(started, settings) -> None:
    settings.AIHUMMER_STEP_RECOVERIES = 0
    assert workflow_runs_revive()["steps_failed"] == 1
    started.refresh_from_db()
    lecture = steps_of(started)["lecture"]
    assert lecture.status == "failed"
    assert lecture.error.endswith("No attempts left (1 of 1).")
    assert started.status == "failed"
    assert started.error == f"Step 'lecture' failed: {lecture.error}"


@pytest.mark.django_db
def test_the_sweep_resends_a_lost_step_and_fails_late_runs(pipeline, operator, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        lost = workflow_run_start(workflow=pipeline, actor=operator, message="x")
        late = workflow_run_start(workflow=pipeline, actor=operator, message="x")
        busy = workflow_run_start(workflow=pipeline, actor=operator, message="x")
    then = timezone.now() - timedelta(minutes=5)
    WorkflowRun.objects.filter(pk__in=[lost.pk, busy.pk]).update(created_at=then)
    # A long run whose first step just finished: its next step was just sent, not lost.
    StepRun.objects.filter(run=busy, name="lecture").update(status="completed", finished_at=timezone.now())
    context = {"inputs": busy.inputs, "steps": {"lecture": {"status": "completed", "output": {"answer": "a"}}}}
    WorkflowRun.objects.filter(pk=busy.pk).update(status="running", context=context)
    WorkflowRun.objects.filter(pk=late.pk).update(created_at=then, deadline_at=then)
    with django_capture_on_commit_callbacks() as sent:
        counts = workflow_runs_revive()
    assert counts == {"runs_timed_out": 1, "steps_recovered": 0, "steps_failed": 0, "steps_redispatched": 1}
    assert len(sent) == 1
    late.refresh_from_db()
    assert (late.status, late.error) == (
        "failed",
        "The run passed its wall-clock limit of 21600 s (AIHUMMER_RUN_TIMEOUT_SEC).",
    )
