"""The desk at 1 280 px in a real browser (headless Chromium through Playwright), on the
demo's data, in English and in French: the review queue, a review page with a
regression, the propose page, an agent page and a run page with a retrying step each
fit the window (the document never scrolls sideways, nor their main boxes) and show
what issue 32 asked them to show, in the person's language (the expected words come
from the catalogue). Screenshots go to AIHUMMER_SHOTS_DIR (default /tmp/aihummer-shots),
outside the repository."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.utils import timezone, translation
from django.utils.translation import gettext
from playwright.sync_api import Page, expect

from agents.models import Agent, PromptVersion
from aihummer.models import User, Workspace
from aihummer.tests.brokers import point_app_at
from aihummer.tests.browser import admin_log_in
from workflows.models import Workflow
from workflows.services import workflow_run_start
from workflows.store import step_claim, step_release

WIDTH = 1280


@pytest.fixture
def demo(settings, tmp_path, redis_url, operator):
    """The demo workspace; tasks go to this test's own Redis database, where no worker
    takes them, so a run stays where the test puts it."""
    settings.BASE_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    redis.Redis.from_url(redis_url).flushdb()
    settings.CELERY_BROKER_URL = redis_url
    point_app_at(redis_url)
    yield json.loads((tmp_path / "var" / "demo-logins.json").read_text())
    point_app_at(None)
    redis.Redis.from_url(redis_url).flushdb()  # the run's tasks, which no worker here takes


def retrying_run(operator) -> object:
    """A run of the demo pipeline whose first step failed once and waits for its retry."""
    workflow = Workflow.objects.get(key="lecture-critique")
    run = workflow_run_start(workflow=workflow, actor=operator, message="Un texte à lire, puis à critiquer.")
    now = timezone.now()
    claim = step_claim(run_id=run.pk, name="lecture", now=now - timedelta(seconds=3), lease_until=now)
    error = "Attempt 1 failed (Provider error (unavailable): 503 Service Unavailable); retrying in 300 s."
    assert step_release(claim=claim, error=error, not_before=now + timedelta(minutes=5), now=now - timedelta(seconds=1))
    return run


def fits(page: Page, name: str, *inner: str) -> None:  # name: page-language
    """The page fits 1 280 px: no sideways scroll of the document, nor inside the
    `inner` boxes (a table cut by its own scroll box reads as badly). A screenshot
    either way."""
    shots = Path(os.environ.get("AIHUMMER_SHOTS_DIR", "/tmp/aihummer-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    widths = page.evaluate("() => ({document: document.documentElement.scrollWidth, body: document.body.scrollWidth})")
    assert widths["document"] <= WIDTH and widths["body"] <= WIDTH, (name, widths)
    for selector in inner:
        box = page.eval_on_selector(selector, "e => [e.scrollWidth, e.clientWidth]")
        assert box[0] <= box[1], (name, selector, box)


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.django_db(transaction=True)
def test_the_desk_fits_1280_px_and_shows_what_it_should(live_server, browser, demo, operator, language):
    User.objects.filter(username="admin").update(language=language)
    run = retrying_run(operator)
    workspace = Workspace.objects.get(slug="demo")
    redacteur = Agent.objects.get(workspace=workspace, key="redacteur")
    regression = PromptVersion.objects.filter(workspace=workspace, evidence_runs__regressions__gt=0).first()
    with translation.override(language):
        panes = [
            gettext("Live v%(number)s") % {"number": regression.agent.live_version.number},
            gettext("Candidate v%(number)s") % {"number": regression.number},
        ]
        cases = gettext("Test cases (%(count)d)") % {"count": redacteur.test_cases.count()}
    page = admin_log_in(browser, live_server.url, "admin", password=demo["admin"], landmark="#aih-review-queue")
    page.set_viewport_size({"width": WIDTH, "height": 900})

    # the queue: every column readable, the status badge whole
    page.goto("/admin/agents/promptversion/")
    expect(page.locator("html")).to_have_attribute("lang", language)
    expect(page.locator("#result_list td.field-evidence .aih-badge").first).to_be_visible()
    fits(page, f"queue-{language}", "#changelist .results")

    # a review page with a regression: the warning beside Approve, Live | Candidate panes read to their end
    page.goto(f"/admin/agents/promptversion/{regression.pk}/review/")
    expect(page.locator("#aih-approve-warning")).to_be_visible()
    assert page.locator("#aih-prompts h3").all_inner_texts() == panes
    for pane in ("#aih-prompt-before", "#aih-prompt-after"):  # not cut: what is taller scrolls (together)
        assert page.eval_on_selector(pane, "e => getComputedStyle(e).overflowY") == "auto", pane
    page.click("#aih-evidence details.aih-answers summary >> nth=0")  # opening the answers squeezes nothing out
    fits(page, f"review-{language}", "#aih-evidence", "#aih-prompts", "#aih-diff")

    # the agent page: pending proposals banner, test cases counted, the policy as a form
    page.goto(f"/admin/agents/agent/{redacteur.pk}/change/")
    expect(page.locator("#aih-pending-banner a")).to_have_attribute(
        "href", f"/admin/agents/promptversion/?agent__id__exact={redacteur.pk}"
    )
    expect(page.locator("#test_cases-heading")).to_have_text(cases)
    expect(page.locator("#aih-policy .aih-policy-section").first).to_be_visible()
    fits(page, f"agent-{language}", "#agent_form")

    # the propose page: its section and skill tables inside the window
    page.goto(f"/admin/agents/agent/{redacteur.pk}/propose/")
    expect(page.locator("#aih-propose-submit")).to_be_visible()
    fits(page, f"propose-{language}", "#aih-propose-form")

    # a run page with a retrying step: its last error, its next attempt, its failed attempt drawn
    page.goto(f"/admin/workflows/workflowrun/{run.pk}/change/")
    page.click('details[data-step="lecture"] summary')
    expect(page.locator('details[data-step="lecture"] .aih-step-last-error')).to_contain_text("503")
    expect(page.locator('details[data-step="lecture"] .aih-step-next-attempt')).to_contain_text("UTC")
    expect(page.locator('.aih-tl-row[data-step="lecture"] .aih-tl-attempt')).to_have_count(1)
    expect(page.locator("svg.aih-graph a.aih-node-link")).to_have_count(2)
    fits(page, f"run-{language}", "#aih-timeline", "#aih-steps", ".aih-graph-box")
