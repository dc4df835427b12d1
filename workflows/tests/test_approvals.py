"""A workflow step whose agent proposes an e-mail (issue 30), on PostgreSQL with a real
Celery worker and a local SMTP server (aiosmtpd): the run waits for a person with no
worker busy, the approved message is sent exactly once, and the run completes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import AgentTurn, ApprovalRequest
from agents.services.tool_approvals import (
    approval_request_approve,
    approval_request_reject,
    approval_requests_sweep,
)
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent, make_mailer
from aihummer.tests.smtp import SmtpServer
from aihummer.tests.waiting import wait_until
from workflows.execution import workflow_runs_revive, workflow_step_run
from workflows.models import StepRun, WorkflowRun
from workflows.services import workflow_create, workflow_run_cancel, workflow_run_start, workflow_run_wait

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "smtp-pw-Zq81-never-shown"
MAIL = {"to": ["client@example.com"], "cc": ["boss@example.com"], "subject": "Your order", "body": "It ships today."}


def mailer_workflow(workspace, ada, smtp: SmtpServer):
    """Steps `mail` (agent `mailer`, which may send mail through `smtp` with a vault
    password) then `sum_up` (agent `scribe`)."""
    by = Actor.for_user(ada)
    make_mailer(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
    make_agent(workspace, "scribe", "You sum up.", by=ada)
    definition = {
        "version": 1,
        "steps": [
            {"name": "mail", "agent_name": "mailer"},
            {"name": "sum_up", "agent_name": "scribe", "input_mapping": {"text": "$.steps.mail.output.answer"}},
        ],
    }
    return workflow_create(workspace=workspace, actor=by, key="mailing", name="Mailing", definition=definition)


def mail_run(workspace, ada, alice, key: str, steps: list[dict]) -> WorkflowRun:
    """The run, started by alice with a message asking for a mail, of the workflow `key`
    (made by ada) of `steps`."""
    definition = {"version": 1, "steps": steps}
    workflow = workflow_create(workspace=workspace, actor=Actor.for_user(ada), key=key, name=key, definition=definition)
    return workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())


def mail_message(arguments: dict = MAIL) -> str:
    return f"Tell the client.\n@call mail_send {json.dumps(arguments)}"


def test_an_e_mail_waits_for_a_person_with_no_worker_busy_then_goes_once(
    workspace, ada, alice, bob, echo_preset, worker_on_redis
) -> None:
    with SmtpServer(user="agent@acme.test", password=PASSWORD) as smtp:
        workflow = mailer_workflow(workspace, ada, smtp)
        run = workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())
        wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "waiting", what="the run to wait")

        step = StepRun.objects.get(run=run, name="mail")
        assert (step.status, step.lease_expires_at, step.attempts) == ("waiting", None, 1)
        assert step.turn.status == AgentTurn.Status.WAITING
        assert StepRun.objects.get(run=run, name="sum_up").status == "pending"
        # No task holds a worker thread while the person decides.
        active = worker_on_redis.control.inspect(timeout=2).active() or {}
        assert [task for tasks in active.values() for task in tasks] == []
        request = ApprovalRequest.objects.get(run_id=run.pk)
        assert (request.origin, request.step_name, request.arguments) == ("workflow_step", "mail", MAIL)
        assert smtp.messages == []

        approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
        run = workflow_run_wait(run=run, timeout=60)

    assert run.status == "completed", run.error
    assert len(smtp.messages) == 1
    sent = smtp.messages[0]
    assert (sent["From"], sent["To"], sent["Cc"], sent["Subject"]) == (
        "agent@acme.test",
        "client@example.com",
        "boss@example.com",
        "Your order",
    )
    assert sent["Message-ID"] == f"<{request.ledger_key}@aihummer>"
    assert sent.get_payload().strip() == "It ships today."
    assert smtp.logins == [("agent@acme.test", PASSWORD)]
    request.refresh_from_db()
    assert (request.progress, request.effect_ok) == ("resumed", True)
    assert (
        request.result == f"Sent to client@example.com, boss@example.com (Message-ID <{request.ledger_key}@aihummer>)."
    )
    step.refresh_from_db()
    assert (step.status, step.attempts) == ("completed", 1)
    assert StepRun.objects.get(run=run, name="sum_up").status == "completed"


def test_a_rejected_e_mail_is_never_sent_and_the_run_goes_on(workspace, ada, alice, bob, echo_preset) -> None:
    with SmtpServer() as smtp:
        workflow = mailer_workflow(workspace, ada, smtp)
        run = workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())
        run.refresh_from_db()
        assert run.status == "waiting"  # inline (no broker): the step ran and paused
        request = ApprovalRequest.objects.get(run_id=run.pk)

        approval_request_reject(request=request, actor=Actor.for_user(bob), note="Wrong client.")
        run.refresh_from_db()

    assert smtp.messages == []
    assert run.status == "completed"
    turn = StepRun.objects.get(run=run, name="mail").turn
    last = turn.debug_logs.order_by("sequence").last()
    assert last.messages[-1]["content"].startswith("Refused: bob rejected this call: Wrong client.")


def test_a_cancelled_run_refuses_its_waiting_call(workspace, ada, alice, bob, echo_preset) -> None:
    with SmtpServer() as smtp:
        workflow = mailer_workflow(workspace, ada, smtp)
        run = workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())

        workflow_run_cancel(run=run, actor=Actor.for_user(alice))

    request = ApprovalRequest.objects.get(run_id=run.pk)
    assert (request.status, request.progress) == ("expired", "resumed")
    assert request.result == "Refused: The workflow run was cancelled by admin:alice. It was not executed."
    step = StepRun.objects.get(run=run, name="mail")
    assert step.status == "cancelled"
    assert step.turn.status == "failed"
    assert smtp.messages == []


def test_the_run_list_filters_waiting_runs(workspace, ada, alice, echo_preset) -> None:
    with SmtpServer() as smtp:
        workflow = mailer_workflow(workspace, ada, smtp)
        waiting = workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())
        workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message="No mail today.")

    assert list(WorkflowRun.objects.filter(status="waiting")) == [waiting]


def test_a_run_waits_while_any_of_its_parallel_steps_waits(workspace, ada, alice, bob, echo_preset) -> None:
    with SmtpServer(user="agent@acme.test", password=PASSWORD) as smtp:
        make_mailer(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        steps = [{"name": name, "agent_name": "mailer", "depends_on": []} for name in ("mail_a", "mail_b")]
        run = mail_run(workspace, ada, alice, "two", steps)
        first, second = ApprovalRequest.objects.filter(run_id=run.pk).order_by("step_name")
        assert WorkflowRun.objects.get(pk=run.pk).status == "waiting"

        approval_request_approve(request=first, actor=Actor.for_user(bob), arguments_hash=first.arguments_hash)
        after_one = WorkflowRun.objects.get(pk=run.pk).status
        statuses = dict(StepRun.objects.filter(run=run).values_list("name", "status"))
        approval_request_approve(request=second, actor=Actor.for_user(bob), arguments_hash=second.arguments_hash)

    assert (after_one, statuses) == ("waiting", {"mail_a": "completed", "mail_b": "waiting"})
    assert WorkflowRun.objects.get(pk=run.pk).status == "completed"
    assert len(smtp.messages) == 2


@pytest.mark.django_db  # not transaction=True: what the run's start enqueues on commit never runs (lost tasks)
def test_the_sweep_resends_a_lost_parallel_step_of_a_waiting_run(
    workspace, ada, alice, echo_preset, django_capture_on_commit_callbacks
) -> None:
    make_mailer(workspace, by=ada, smtp_port=2525, password=PASSWORD)  # nothing is sent: no approval here
    make_agent(workspace, "scribe", "You sum up.", by=ada)
    steps = [
        {"name": "mail", "agent_name": "mailer", "depends_on": []},
        {"name": "note", "agent_name": "scribe", "depends_on": []},
    ]
    run = mail_run(workspace, ada, alice, "branches", steps)
    # The task of `mail` arrives and its call waits for a person; the task of `note` was lost.
    assert workflow_step_run(run_id=run.pk, step="mail") == "waiting"
    assert WorkflowRun.objects.get(pk=run.pk).status == "waiting"
    WorkflowRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=5))

    with django_capture_on_commit_callbacks(execute=True) as sent:
        counts = workflow_runs_revive()

    assert counts["steps_redispatched"] == 1
    assert len(sent) == 1
    statuses = {s.name: (s.status, s.lease_expires_at) for s in StepRun.objects.filter(run=run)}
    assert statuses == {"mail": ("waiting", None), "note": ("completed", None)}
    assert WorkflowRun.objects.get(pk=run.pk).status == "waiting"  # `mail` still waits for its person
    with django_capture_on_commit_callbacks() as sent:
        assert workflow_runs_revive()["steps_redispatched"] == 0  # nothing else is ready: the waiting step is not
    assert sent == []


def test_a_resume_that_keeps_failing_fails_its_step_and_run_once_its_attempts_are_spent(
    workspace, ada, alice, bob, echo_preset, settings
) -> None:
    settings.AIHUMMER_STEP_RECOVERIES = 1  # `mail` has no retries: 2 attempts in all
    with SmtpServer(user="agent@acme.test", password=PASSWORD) as smtp:
        workflow = mailer_workflow(workspace, ada, smtp)
        run = workflow_run_start(workflow=workflow, actor=Actor.for_user(alice), message=mail_message())
        request = ApprovalRequest.objects.get(run_id=run.pk)
        # A resume that can never succeed (here: the turn's saved state cannot be read),
        # as a worker killed at every resume would leave it.
        ApprovalRequest.objects.filter(pk=request.pk).update(resume_state={"messages": [{"role": "user"}]})
        approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
        request.refresh_from_db()
        assert (request.progress, request.effect_ok) == ("resuming", True)  # sent, recorded; the resume raised
        resent = []
        for _ in range(4):  # more sweeps than attempts: the step's count ends it, not the sweeps
            # The resuming lease has passed (as it would once the resuming worker died).
            ApprovalRequest.objects.filter(pk=request.pk, progress="resuming").update(
                progress_until=timezone.now() - timedelta(seconds=1)
            )
            resent.append(approval_requests_sweep()["resent"])

    assert resent == [1, 1, 0, 0]
    assert len(smtp.messages) == 1  # the effect was recorded: never sent again
    run.refresh_from_db()
    step = StepRun.objects.get(run=run, name="mail")
    assert (step.status, step.attempts) == ("failed", 2)
    assert step.error == (
        f"Attempt 2 never finished after its approved call (request {request.pk}): the worker resuming its turn "
        "died, or the resume failed. No attempts left (2 of 2)."
    )
    assert [entry["attempt"] for entry in step.attempt_log] == [1]
    assert (run.status, run.error) == ("failed", f"Step 'mail' failed: {step.error}")
    assert StepRun.objects.get(run=run, name="sum_up").status == "pending"
    request.refresh_from_db()
    assert request.progress == "resumed"  # nothing is resent any more
    assert request.turn.status == "failed"
