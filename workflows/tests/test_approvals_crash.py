"""Exactly once across a crash (issue 30), on PostgreSQL with real Celery workers killed
with SIGKILL and a local SMTP server.

Killed in the SMTP exchange before the message is handed over (the envelope: before the
`sending` mark), the worker made no effect: a fresh worker (with beat) takes the request
back once its lease passed, sends the message with the same ledger key, records it and
resumes the run; the server receives it once. Killed after the message was handed over
(the server holding its answer), nobody but the server knows whether it was taken: the
request's outcome is unknown, nothing is sent again by itself, the desk asks a person,
and what they decide (it was delivered) resumes the run. A step whose resumed turn is
killed every time is counted like any step and fails once its attempts are spent. The
SMTP password is in no table (pg_dump), page or log."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from django.urls import reverse

from agents.models import ApprovalRequest
from agents.selectors import approval_requests_waited_for
from agents.services.tool_approvals import approval_request_approve
from agents.tests.helpers import pg_dump
from aihummer.actors import Actor
from aihummer.models import User
from aihummer.tests.brokers import point_app_at
from aihummer.tests.factories import make_mailing, openai_preset
from aihummer.tests.smtp import SmtpServer
from aihummer.tests.waiting import wait_until
from aihummer.tests.workers import Workers
from workflows.models import StepRun, Workflow, WorkflowRun
from workflows.services import workflow_run_start, workflow_run_wait
from workflows.tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "smtp-pw-Crash-4242-never-shown"
MAIL = {"to": ["client@example.com"], "subject": "Once", "body": "Exactly once."}


@pytest.fixture
def redis_broker(settings, redis_url):
    """`enqueue` sends to this xdist worker's own Redis database; no worker here."""
    settings.CELERY_BROKER_URL = redis_url
    point_app_at(redis_url)
    yield redis_url
    point_app_at(None)


def mail_approved_on_a_worker(
    workers: Workers, workflow: Workflow, *, by: Actor, reviewer: User
) -> tuple[subprocess.Popen, WorkflowRun, ApprovalRequest]:
    """A first worker (3 s effect leases) runs `workflow` on MAIL until it waits for the
    e-mail's approval, which `reviewer` gives: that worker, the run, the request."""
    first = workers.start(lease=10, AIHUMMER_APPROVAL_EFFECT_LEASE_SEC="3")
    run = workflow_run_start(workflow=workflow, actor=by, message=f"Go.\n@call mail_send {json.dumps(MAIL)}")
    # A worker process boots in seconds, or a minute on a loaded machine.
    wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "waiting", seconds=90, what="the wait")
    request = ApprovalRequest.objects.get(run_id=run.pk)
    approval_request_approve(request=request, actor=Actor.for_user(reviewer))
    return first, run, request


def test_a_worker_killed_mid_send_leaves_the_e_mail_sent_exactly_once(
    redis_broker, workspace, ada, bob, echo_preset, tmp_path
) -> None:
    by = Actor.for_user(ada)
    workers = Workers(redis_broker, tmp_path)
    with SmtpServer(user="agent@acme.test", password=PASSWORD, hold="rcpt") as smtp:
        workflow = make_mailing(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        try:
            first, run, request = mail_approved_on_a_worker(workers, workflow, by=by, reviewer=bob)
            # The worker is in the SMTP exchange: the server holds the envelope's recipient,
            # before the message is handed over.
            assert smtp.arrived.wait(60), "the worker never reached the SMTP server"
            workers.kill(first)
            smtp.release.set()  # answered to a dead client: nothing was delivered
            request.refresh_from_db()
            assert (request.progress, request.effect_attempts, request.result) == ("effect", 1, "")

            workers.start(lease=10, beat=True, AIHUMMER_APPROVAL_EFFECT_LEASE_SEC="3")
            run = workflow_run_wait(run=run, timeout=90)
        finally:
            workers.stop_all()
        delivered = list(smtp.messages)

    logs = "".join(path.read_text() for path in tmp_path.glob("worker-*.log"))
    assert run.status == "completed", (run.error, logs)
    assert len(delivered) == 1
    assert delivered[0]["Message-ID"] == f"<{request.ledger_key}@aihummer>"
    request.refresh_from_db()
    assert (request.progress, request.effect_attempts, request.effect_ok) == ("resumed", 2, True)
    assert StepRun.objects.get(run=run).attempts == 1  # the step's turn resumed, never ran again
    assert PASSWORD not in pg_dump()
    assert PASSWORD not in logs


def test_a_worker_killed_after_handing_the_e_mail_over_leaves_it_to_a_person(
    redis_broker, workspace, ada, bob, echo_preset, tmp_path, client
) -> None:
    by = Actor.for_user(ada)
    workers = Workers(redis_broker, tmp_path)
    # The server takes the message on its final dot, even from a client gone by its answer.
    with SmtpServer(user="agent@acme.test", password=PASSWORD, hold=True, keep_if_gone=True) as smtp:
        workflow = make_mailing(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        try:
            first, run, request = mail_approved_on_a_worker(workers, workflow, by=by, reviewer=bob)
            # The whole message is at the server, which holds its answer: the worker is
            # past the `sending` mark.
            assert smtp.arrived.wait(60), "the worker never reached the SMTP server"
            workers.kill(first)
            smtp.release.set()
            wait_until(lambda: smtp.messages, what="the server to keep the message")
            request.refresh_from_db()
            assert (request.progress, request.effect_attempts, request.result) == ("sending", 1, "")

            workers.start(lease=10, beat=True, AIHUMMER_APPROVAL_EFFECT_LEASE_SEC="3")
            # The sweep takes the request back once the lease passed, and does not send it.
            wait_until(lambda: ApprovalRequest.objects.get(pk=request.pk).progress == "unknown", seconds=90)
            assert len(smtp.messages) == 1
            assert WorkflowRun.objects.get(pk=run.pk).status == "waiting"
            assert approval_requests_waited_for(run_id=run.pk) == [request]

            # The desk asks a person; bob (who approved) checked the mailbox: it arrived.
            client.force_login(bob)
            review = reverse("admin:agents_approvalrequest_review", args=[request.pk])
            page = client.get(review).content.decode()
            assert 'id="aih-in-doubt"' in page
            assert str(request.ledger_key) in page
            assert review in client.get(reverse("admin:agents_review_list")).content.decode()
            answer = client.post(review, {"_confirm": "1", "note": "In the inbox.", "arguments_hash": "x"})
            assert answer.status_code == 302
            run = workflow_run_wait(run=run, timeout=90)
        finally:
            workers.stop_all()
        delivered = list(smtp.messages)

    logs = "".join(path.read_text() for path in tmp_path.glob("worker-*.log"))
    assert run.status == "completed", (run.error, logs)
    assert len(delivered) == 1
    assert delivered[0]["Message-ID"] == f"<{request.ledger_key}@aihummer>"
    request.refresh_from_db()
    assert (request.progress, request.effect_attempts, request.effect_ok) == ("resumed", 1, True)
    assert (request.resolution, request.resolved_by) == ("confirmed", bob)
    assert request.result == (
        f"Sent to client@example.com (Message-ID <{request.ledger_key}@aihummer>): the mail server's answer was "
        "lost, and bob confirmed the message was delivered."
    )
    assert PASSWORD not in pg_dump()
    assert PASSWORD not in logs


class ResumeHolder:
    """The model of a mailer on the local OpenAI-protocol server: asked first, it calls
    mail_send; asked again with the call's result (the resumed turn), it holds the
    answer until released, counting each such request (`resumes`)."""

    def __init__(self) -> None:
        self.resumes = 0
        self.release = threading.Event()

    def __call__(self, body: dict) -> str | dict:
        if body["messages"][-1]["role"] != "tool":
            call = {
                "id": "call-1",
                "type": "function",
                "function": {"name": "mail_send", "arguments": json.dumps(MAIL)},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        self.resumes += 1
        self.release.wait(120)
        return "done"


@pytest.mark.timeout(300)
def test_a_step_whose_resumed_turn_dies_every_time_fails_once_its_attempts_are_spent(
    redis_broker, workspace, ada, bob, echo_preset, tmp_path
) -> None:
    by = Actor.for_user(ada)
    workers = Workers(redis_broker, tmp_path)
    model = ResumeHolder()
    # One recovery: the step gets 2 attempts; a resume's lease is the turn's limit + the effect's (6 s).
    env = {
        "AIHUMMER_STEP_RECOVERIES": "1",
        "AIHUMMER_APPROVAL_EFFECT_LEASE_SEC": "1",
        "AIHUMMER_TURN_TIMEOUT_SEC": "5",
    }
    with FakeOpenAI(reply=model) as server, SmtpServer(user="agent@acme.test", password=PASSWORD) as smtp:
        preset = openai_preset(workspace, server, key="held", by=by)
        workflow = make_mailing(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD, preset=preset)
        try:
            worker = workers.start(lease=10, **env)
            run = workflow_run_start(workflow=workflow, actor=by, message="Tell the client.")
            wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "waiting", seconds=90, what="the wait")
            request = ApprovalRequest.objects.get(run_id=run.pk)
            approval_request_approve(request=request, actor=Actor.for_user(bob))
            for attempt in (1, 2):  # the resumed turn reaches its model, and its worker is killed
                wait_until(lambda n=attempt: model.resumes == n, seconds=90, what=f"resume {attempt}")
                workers.kill(worker)
                worker = workers.start(lease=10, beat=True, **env)
            run = workflow_run_wait(run=run, timeout=90)
        finally:
            model.release.set()
            workers.stop_all()
        delivered = list(smtp.messages)

    logs = "".join(path.read_text() for path in tmp_path.glob("worker-*.log"))
    assert run.status == "failed", (run.status, logs)
    assert model.resumes == 2  # not resumed a third time: its attempts were spent
    step = StepRun.objects.get(run=run, name="mail")
    assert (step.status, step.attempts) == ("failed", 2)
    assert step.error == (
        f"Attempt 2 never finished after its approved call (request {request.pk}): the worker resuming its turn "
        "died, or the resume failed. No attempts left (2 of 2)."
    )
    assert run.error == f"Step 'mail' failed: {step.error}"
    assert len(delivered) == 1  # the e-mail was recorded before the first resume: never sent again
    request.refresh_from_db()
    assert (request.progress, request.effect_attempts) == ("resumed", 1)
    assert request.turn.status == "failed"
