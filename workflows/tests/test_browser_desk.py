"""The workflows desk in a real browser (headless Chromium through Playwright): an
editor starts the demo pipeline from its workflow page, and the run page follows it
from running to completed by polling its live fragment, without reloading.

A real Celery worker runs the steps (inline execution would finish before the page
loads), and the demo agents answer through a local OpenAI-protocol server that holds
the first step's answer until the page has shown that step running (a fixed delay was
missed once under load: the page's first poll came back after the step had ended)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from agents.services import preset_activate
from aihummer.models import User, Workspace
from aihummer.tests.browser import admin_log_in
from aihummer.tests.factories import openai_preset
from workflows.models import StepRun, Workflow, WorkflowRun
from workflows.tests.fake_openai import FakeOpenAI

STEP_SECONDS = 0.5
MESSAGE = "Un texte à lire, puis à critiquer."


@pytest.fixture
def model():
    """The demo agents' model: slow, and holding the run's first step until released."""
    with FakeOpenAI(delay=STEP_SECONDS, hold_matching=MESSAGE) as server:
        yield server


@pytest.fixture
def demo(settings, tmp_path, operator, model):
    """The demo workspace, its people and workflows, its agents answering through `model`."""
    settings.BASE_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    workspace = Workspace.objects.get(slug="demo")
    preset_activate(preset=openai_preset(workspace, model, by=operator), actor=operator)
    return json.loads((tmp_path / "var" / "demo-logins.json").read_text())


@pytest.mark.django_db(transaction=True)
def test_an_editor_starts_the_demo_pipeline_and_watches_it_complete(live_server, browser, worker_on_redis, demo, model):
    workflow = Workflow.objects.get(key="lecture-critique")
    # The demo's people read the desk in French; this one chose English (the French desk
    # has its own browser test: workflows/tests/test_desk_layout_browser.py).
    User.objects.filter(username="alice").update(language="en")
    page = admin_log_in(browser, live_server.url, "alice", password=demo["alice"])
    expect(page.locator("#aih-index-runs")).to_contain_text("No run is running.")

    page.goto(f"/admin/workflows/workflow/{workflow.pk}/change/")
    expect(page.locator("svg.aih-graph g.aih-node")).to_have_count(2)
    page.click("#aih-start-link")
    page.fill("#id_message", MESSAGE)
    page.click("#aih-start-submit")

    # the run page: mark the document, so a reload would be seen
    expect(page.locator(".messagelist")).to_contain_text("started")
    page.evaluate("window.aihSamePage = true")
    live = page.locator("#aih-run-live")
    expect(live).to_have_attribute("data-status", "running")
    expect(page.locator('#aih-timeline .aih-tl-row[data-step="lecture"]')).to_have_attribute("data-status", "running")
    expect(page.locator("#aih-cancel")).to_be_visible()
    model.release()

    expect(live).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(page.locator(".aih-run-status")).to_have_text("completed")
    expect(page.locator("#aih-timeline .aih-tl-row[data-status=completed]")).to_have_count(2)
    expect(page.locator("#aih-run-answer")).to_contain_text("answer: ")
    expect(page.locator("#aih-cancel")).to_have_count(0)
    assert page.evaluate("window.aihSamePage") is True  # followed by polling, never reloaded

    run = WorkflowRun.objects.get()
    steps = {step.name: step for step in StepRun.objects.filter(run=run)}
    assert (run.status, run.actor_source) == ("completed", "admin:alice")
    assert steps["lecture"].input == MESSAGE
    assert steps["critique"].started_at >= steps["lecture"].finished_at
    assert page.locator("#aih-run-answer").inner_text().strip() == run.answer
