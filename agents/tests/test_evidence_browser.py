"""Evidence end to end: a proposal enqueues its evidence run on commit, a real Celery
worker runs the cases on the candidate and on live (in parallel, side effects dry),
and a reviewer sees the results on the review page and in the queue, in headless
Chromium, without clicking anything."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from agents.models import CaseResult, EvidenceRun
from agents.tests.helpers import make_camille, make_cases, propose_long
from aihummer.actors import Actor
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import make_echo_preset
from aihummer.tests.waiting import wait_until

FINISHED = (EvidenceRun.Status.DONE, EvidenceRun.Status.FAILED)


@pytest.mark.django_db(transaction=True)
def test_a_proposal_runs_its_cases_on_a_worker_and_the_reviewer_sees_them(
    live_server, browser, worker_on_redis, settings, workspace, alice, bob
):
    settings.AIHUMMER_EVIDENCE_CONCURRENCY = 2
    operator = Actor.for_operator()
    make_echo_preset(workspace, by=operator)
    agent = make_camille(workspace, operator)
    make_cases(agent, alice)

    proposal = propose_long(agent, alice, reason="plus de détails")
    run = wait_until(
        lambda: EvidenceRun.objects.filter(version=proposal, status__in=FINISHED).first(),
        what=f"the evidence run of v{proposal.number}",
    )

    assert (run.status, run.trigger, run.regressions) == ("done", "proposed", 1)
    assert CaseResult.objects.filter(run=run).count() == 4
    candidate = CaseResult.objects.get(run=run, case_name="salue", side="candidate")
    live = CaseResult.objects.get(run=run, case_name="salue", side="live")
    candidate_hash, live_hash = candidate.answer[-8:], live.answer[-8:]
    assert candidate_hash != live_hash

    # bob sees the regression in the queue, filters on it, and opens the proposal
    page = admin_log_in(browser, live_server.url, "bob", landmark="#aih-review-queue", timeout_ms=10_000)
    page.click("#aih-review-queue")
    expect(page.locator("td.field-evidence")).to_have_text("1 regression")
    page.click("text=has regressions")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.click("text=camille v2")

    expect(page.locator("#aih-evidence-summary")).to_contain_text("1/2 pass on candidate, 2/2 on live: 1 regression")
    regression = page.locator("tr.aih-regression")
    expect(regression).to_have_count(1)
    expect(regression).to_have_attribute("data-case", "budget")
    expect(regression.locator(".aih-result-candidate .aih-check-failed")).to_contain_text(
        re.compile(r"max_tokens 400: \d+ tokens")
    )
    expect(regression.locator(".aih-result-live")).to_have_attribute("data-status", "passed")

    # the answers, side by side on demand: each carries the hash of the version that answered
    salue = page.locator("tr[data-case=salue]")
    expect(salue.locator(".aih-answer-candidate")).not_to_be_visible()
    salue.locator("summary").click()
    expect(salue.locator(".aih-answer-candidate")).to_have_text(f"[echo echo-1] Bonjour #sp={candidate_hash}")
    expect(salue.locator(".aih-answer-live")).to_have_text(f"[echo echo-1] Bonjour #sp={live_hash}")
