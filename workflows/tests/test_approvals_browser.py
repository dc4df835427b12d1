"""The issue-30 story in a real browser (headless Chromium through Playwright), with a
real Celery worker and a local SMTP server: a workflow step proposes an e-mail, the
run waits, a reviewer reads the message exactly as it will be sent and approves it in
the admin, the SMTP server receives it once and the run completes. The proposer is
shown why she may not decide (four eyes); the SMTP password appears on no page. A
message whose server hung up after taking it whole is shown to the reviewer as an
unknown outcome, and sent again (same Message-ID) on their word."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from agents.models import ApprovalRequest
from agents.services.tool_approvals import approval_request_approve
from aihummer.actors import Actor
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import make_mailing
from aihummer.tests.smtp import SmtpServer
from aihummer.tests.waiting import wait_until
from workflows.models import WorkflowRun
from workflows.services import workflow_run_start, workflow_run_wait

PASSWORD = "smtp-pw-Browser-77-never-shown"
MAIL = {"to": ["client@example.com"], "subject": "Votre commande", "body": "Elle part aujourd'hui.\nCordialement"}


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_approves_an_e_mail_in_the_admin_and_it_is_sent_once(
    live_server, browser, worker_on_redis, workspace, ada, bob, echo_preset
) -> None:
    by = Actor.for_user(ada)
    with SmtpServer(user="agent@acme.test", password=PASSWORD) as smtp:
        workflow = make_mailing(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        message = f"Tell the client.\n@call mail_send {json.dumps(MAIL)}"
        run = workflow_run_start(workflow=workflow, actor=by, message=message)  # ada starts it
        wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "waiting", what="the run to wait")
        request = ApprovalRequest.objects.get(run_id=run.pk)

        # ada, an admin, started the run: she sees the request but may not decide it
        proposer = admin_log_in(browser, live_server.url, "ada", landmark="#aih-action-requests")
        proposer.goto(f"/admin/agents/approvalrequest/{request.pk}/review/")
        expect(proposer.locator("#aih-decide-refusal")).to_contain_text("another person must decide it (four eyes)")
        expect(proposer.locator("input[name=_approve]")).to_have_count(0)

        # bob finds the waiting step on the run's page, follows it to the request
        page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-action-requests")
        page.goto(f"/admin/workflows/workflowrun/{run.pk}/change/")
        expect(page.locator("#step-mail .aih-step-status")).to_have_text("waiting for a person")
        page.click("#step-mail .aih-step-approval")
        # and reads the e-mail exactly as it will be sent, then approves it
        page.click(f"text=mail_send #{request.pk}")
        expect(page.locator("#aih-mail-headers")).to_contain_text("client@example.com")
        expect(page.locator("#aih-mail-headers")).to_contain_text("Votre commande")
        expect(page.locator("#aih-mail-headers")).to_contain_text(f"<{request.ledger_key}@aihummer>")
        expect(page.locator("#aih-mail-body")).to_have_text("Elle part aujourd'hui.\nCordialement")
        pages = [proposer.content(), page.content()]
        page.fill("#id_note", "Bon pour envoi.")
        page.click("input[name=_approve]")
        expect(page.locator(".messagelist")).to_contain_text(
            re.compile(rf"mail_send #{request.pk} approved", re.IGNORECASE)
        )

        run = workflow_run_wait(run=run, timeout=60)
        page.goto(f"/admin/agents/approvalrequest/{request.pk}/review/")
        expect(page.locator("#aih-result")).to_contain_text("Sent to client@example.com")
        pages.append(page.content())

    assert run.status == "completed", run.error
    assert len(smtp.messages) == 1
    assert smtp.messages[0]["Subject"] == "Votre commande"
    assert all(PASSWORD not in content for content in pages)


@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_a_reviewer_is_asked_about_an_e_mail_whose_answer_was_lost_and_sends_it_again(
    live_server, browser, workspace, ada, bob, echo_preset
) -> None:
    by = Actor.for_user(ada)
    # The server reads the whole message, then hangs up without an answer (once).
    with SmtpServer(user="agent@acme.test", password=PASSWORD, hang_up_once=True) as smtp:
        workflow = make_mailing(workspace, by=ada, smtp_port=smtp.port, password=PASSWORD)
        run = workflow_run_start(workflow=workflow, actor=by, message=f"Go.\n@call mail_send {json.dumps(MAIL)}")
        request = ApprovalRequest.objects.get(run_id=run.pk)  # inline (no broker): the step paused
        approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
        request.refresh_from_db()
        assert (request.progress, smtp.messages) == ("unknown", [])
        assert WorkflowRun.objects.get(pk=run.pk).status == "waiting"

        page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-action-requests")
        page.goto("/admin/agents/approvalrequest/desk/")
        page.click(f"text=mail_send #{request.pk}")
        expect(page.locator("#aih-in-doubt")).to_contain_text("its answer never reached us")
        expect(page.locator("#aih-in-doubt")).to_contain_text(str(request.ledger_key))
        expect(page.locator("#aih-result")).to_contain_text(
            "Outcome unknown: The message was handed to the mail server"
        )
        page.click("input[name=_resend]")
        expect(page.locator(".messagelist")).to_contain_text("is being sent again, with the same ledger key")
        run = workflow_run_wait(run=run, timeout=60)
        page.reload()
        expect(page.locator("#aih-result")).to_contain_text("Sent to client@example.com")
        expect(page.locator("#aih-in-doubt")).to_have_count(0)

    assert run.status == "completed", run.error
    assert len(smtp.messages) == 1
    assert smtp.messages[0]["Message-ID"] == f"<{request.ledger_key}@aihummer>"
