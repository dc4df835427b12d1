"""Exactly once across a crash (issue 30): the worker carrying out an approved e-mail is
killed with SIGKILL in the middle of the SMTP exchange, before the effect is recorded;
a fresh worker (with beat) takes the request back once its lease passed, sends the
message with the same ledger key, records it and resumes the run. The SMTP server
receives it once; the SMTP password is in no table (pg_dump), page or log."""

from __future__ import annotations

import json

import pytest

from agents.models import ApprovalRequest
from agents.services.tool_approvals import approval_request_approve
from agents.tests.helpers import pg_dump
from aihummer.actors import Actor
from aihummer.tests.brokers import point_app_at
from aihummer.tests.factories import make_mailer
from aihummer.tests.smtp import SmtpServer
from aihummer.tests.waiting import wait_until
from aihummer.tests.workers import Workers
from workflows.models import StepRun, WorkflowRun
from workflows.services import workflow_create, workflow_run_start, workflow_run_wait

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


def test_a_worker_killed_mid_send_leaves_the_e_mail_sent_exactly_once(
    redis_broker, workspace, ada, bob, echo_preset, tmp_path
) -> None:
    by = Actor.for_user(ada)
    workers = Workers(redis_broker, tmp_path)
    with SmtpServer(user="agent@acme.test", password=PASSWORD, hold=True) as smtp:
        make_mailer(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        definition = {"version": 1, "steps": [{"name": "mail", "agent_name": "mailer"}]}
        workflow = workflow_create(workspace=workspace, actor=by, key="mailing", name="Mailing", definition=definition)
        try:
            first = workers.start(lease=10, AIHUMMER_APPROVAL_EFFECT_LEASE_SEC="3")
            run = workflow_run_start(workflow=workflow, actor=by, message=f"Go.\n@call mail_send {json.dumps(MAIL)}")
            # A worker process boots in seconds, or a minute on a loaded machine.
            wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "waiting", seconds=90, what="the wait")
            request = ApprovalRequest.objects.get(run_id=run.pk)

            approval_request_approve(request=request, actor=Actor.for_user(bob))
            # The worker is in the SMTP exchange: the server holds the message's DATA.
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
