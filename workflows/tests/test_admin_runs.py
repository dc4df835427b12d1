"""The runs desk in the admin: the runs list (filters, totals, no sandbox rows), the
run page (timeline, steps, version and turn links, live fragment), cancel and resume
per persona, the running count on the index, and constant query counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from agents.models import AgentTurn, PromptVersion
from aihummer.actors import Actor
from aihummer.tests.factories import fan_out, make_agent
from workflows.models import StepRun, WorkflowRun
from workflows.services import workflow_create, workflow_run_start
from workflows.store import step_claim, step_release

pytestmark = pytest.mark.django_db


def run_url(run: WorkflowRun, view: str = "change") -> str:
    return reverse(f"admin:workflows_workflowrun_{view}", args=[run.pk])


# --- the run page ---------------------------------------------------------------------
def test_the_run_page_tells_the_whole_story(client, bob, make_run) -> None:
    run = make_run(4)
    assert run.status == "completed", run.error
    client.force_login(bob)
    page = client.get(run_url(run))
    assert page.status_code == 200
    html = page.content.decode()
    steps = {step.name: step for step in StepRun.objects.filter(run=run)}
    assert [s.status for s in page.context["steps"]] == ["completed", "completed", "completed", "skipped"]
    # one time axis: the parallel steps start after the root ends, the skipped one is a marker
    bars = {bar.name: bar for bar in page.context["timeline"].bars}
    assert bars["s0"].left == 0 and bars["s1"].left >= bars["s0"].width - 0.01
    assert bars["never"].label == "skipped"
    assert html.count('class="aih-tl-row"') == 4
    # each step: input, output, attempts, tokens, the version it ran and its turn
    version = PromptVersion.objects.get(agent__key="lecteur", number=1)
    assert f'href="{reverse("admin:agents_promptversion_review", args=[version.pk])}"' in html
    assert f'href="{reverse("admin:agents_agentturn_change", args=[steps["s1"].turn_id])}"' in html
    assert escape(steps["s1"].output["answer"]) in html
    assert "Skipped: $.inputs.flag is not true." in html
    assert page.context["can_cancel"] is page.context["can_resume"] is False  # bob may run, but it is done
    assert html.count('data-step="never"') == 3  # timeline row, graph box, step panel
    assert 'data-finished="true"' in html
    # links both ways: graph boxes to their agents, the run to its workflow version,
    # a step's turn back to the run and the step
    lecteur = reverse("admin:agents_agent_change", args=[steps["s0"].agent_id])
    assert html.count(f'<a href="{lecteur}" class="aih-node-link">') == 3  # s0, s1, s2
    versions = reverse("admin:workflows_workflow_versions", args=[run.workflow_id])
    assert f'href="{versions}#v{run.workflow_version}" id="aih-run-version"' in html
    turn_page = client.get(reverse("admin:agents_agentturn_change", args=[steps["s1"].turn_id])).content.decode()
    assert f'<a href="{run_url(run)}#step-s1" id="aih-turn-step">' in turn_page
    turns = client.get(reverse("admin:agents_agentturn_changelist"), {"origin": "workflow"}).context["cl"]
    assert {t.pk for t in turns.result_list} == {step.turn_id for step in steps.values() if step.turn_id}


def test_a_retrying_step_says_its_last_error_and_next_attempt_and_keeps_its_attempt(client, bob, make_run) -> None:
    run = make_run(3, execute=False)
    now = timezone.now()
    claim = step_claim(run_id=run.pk, name="s0", now=now - timedelta(seconds=2), lease_until=now + timedelta(minutes=1))
    retry_at = now + timedelta(minutes=5)
    error = "Attempt 1 failed (Provider error (unavailable): 503); retrying in 300 s."
    assert step_release(claim=claim, error=error, not_before=retry_at, now=now - timedelta(seconds=1))
    client.force_login(bob)

    html = client.get(run_url(run)).content.decode()

    panel = html[html.index('id="step-s0"') : html.index('id="step-s1"')]
    assert f'<dd class="aih-step-last-error">{escape(error)}</dd>' in panel
    assert f"{timezone.localtime(retry_at):%H:%M:%S} UTC (in 4" in panel
    assert f"next attempt at {timezone.localtime(retry_at):%H:%M:%S}" in panel  # in the summary line too
    started, ended = (timezone.localtime(now - timedelta(seconds=s)) for s in (2, 1))
    assert f"attempt 1 · {started:%H:%M:%S} → {ended:%H:%M:%S} — {escape(error)}" in panel
    row = html[html.index('class="aih-tl-row" data-step="s0"') :]
    row = row[: row.index("</div>\n  </div>")]
    assert row.count("aih-tl-attempt") == 1  # the failed attempt's bar stays on the axis
    step = StepRun.objects.get(run=run, name="s0")
    assert [(e["attempt"], e["error"]) for e in step.attempt_log] == [(1, error)]


def test_the_live_fragment_is_the_changing_part_only(client, alice, make_run) -> None:
    run = make_run(3, execute=False)
    client.force_login(alice)
    fragment = client.get(run_url(run, "live"))
    assert fragment.status_code == 200
    html = fragment.content.decode()
    assert html.lstrip().startswith('<div id="aih-run-live"')
    assert 'data-finished="false"' in html and 'data-status="pending"' in html
    assert 'id="aih-cancel"' in html and "<html" not in html


@pytest.mark.parametrize("n", [3, 30])
def test_the_run_page_and_its_fragment_cost_the_same_queries_for_3_and_30_steps(
    n, client, bob, make_run, django_assert_num_queries
) -> None:
    run = make_run(n)
    assert StepRun.objects.filter(run=run, status="completed").count() == n - 1
    client.force_login(bob)
    # session, user, roles (who may use the admin, and rights), the run, its steps (with
    # their versions' pks), child turns; the page adds the review count in the header
    # (the app list's permissions come from the roles: no query)
    with django_assert_num_queries(7):
        assert client.get(run_url(run)).status_code == 200
    with django_assert_num_queries(6):
        assert client.get(run_url(run, "live")).status_code == 200


def test_strangers_and_sandbox_runs_answer_404(client, charlie, alice, make_run, workspace, operator) -> None:
    run = make_run(3, execute=False)
    client.force_login(charlie)
    for view in ("change", "live"):
        assert client.get(run_url(run, view)).status_code == 404
    assert client.post(run_url(run, "cancel")).status_code == 404
    make_agent(workspace, "sb_a", "Sandbox", is_sandbox=True)
    sandbox = workflow_create(
        workspace=workspace,
        actor=operator,
        key="sb",
        name="SB",
        definition={"version": 1, "steps": [{"name": "a", "agent_name": "sb_a"}]},
        is_sandbox=True,
    )
    hidden = workflow_run_start(workflow=sandbox, actor=operator, message="x")
    client.force_login(alice)
    assert client.get(run_url(hidden)).status_code == 404
    assert client.get(reverse("admin:workflows_workflowrun_change", args=["not-a-uuid"])).status_code == 404


# --- cancel and resume ----------------------------------------------------------------
def test_an_editor_cancels_a_running_run(client, alice, make_run) -> None:
    run = make_run(3, execute=False)
    client.force_login(alice)
    assert 'id="aih-cancel"' in client.get(run_url(run)).content.decode()
    response = client.post(run_url(run, "cancel"), follow=True)
    run.refresh_from_db()
    assert (run.status, run.error) == ("cancelled", "Cancelled by admin:alice.")
    assert [str(m) for m in response.context["messages"]] == [f"Run {run.pk} cancelled."]
    again = client.post(run_url(run, "cancel"), follow=True)
    assert [str(m) for m in again.context["messages"]] == [
        f"Run {run.pk} is already cancelled; there is nothing to cancel."
    ]
    assert client.get(run_url(run, "cancel")).status_code == 405


def test_an_editor_resumes_a_failed_run(client, alice, make_run, django_capture_on_commit_callbacks) -> None:
    run = make_run(3, message="@error auth")
    assert run.status == "failed"
    client.force_login(alice)
    page = client.get(run_url(run)).content.decode()
    assert 'id="aih-resume"' in page and 'id="aih-cancel"' not in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(run_url(run, "resume"), follow=True)
    assert [str(m) for m in response.context["messages"]] == [f"Run {run.pk} resumed."]
    step = StepRun.objects.get(run=run, name="s0")
    assert (step.status, step.attempts) == ("failed", 2)  # the same message fails again, on the same row
    # the first failed attempt stays in the step's log (and on the timeline), with its turn
    [first] = step.attempt_log
    first_turn = AgentTurn.objects.filter(agent_key="lecteur").order_by("pk").first()
    assert (first["attempt"], first["turn_id"], first["error"]) == (1, first_turn.pk, first_turn.error)
    assert first["ended_at"] <= step.started_at.isoformat()
    # the first attempt's turn still links back to its step (through the log)
    turn_page = client.get(reverse("admin:agents_agentturn_change", args=[first_turn.pk])).content.decode()
    assert f'<a href="{run_url(run)}#step-s0" id="aih-turn-step">' in turn_page
    # and the turns list's origin filter counts it with the workflow steps, not as direct
    turns = reverse("admin:agents_agentturn_changelist")

    def listed(origin: str) -> set[int]:
        return {turn.pk for turn in client.get(turns, {"origin": origin}).context["cl"].result_list}

    assert first_turn.pk in listed("workflow") and first_turn.pk not in listed("direct")
    assert listed("workflow") == set(AgentTurn.objects.values_list("pk", flat=True))
    page = client.get(run_url(run)).content.decode()
    row = page[page.index('class="aih-tl-row" data-step="s0"') :]
    assert row[: row.index("</div>\n  </div>")].count("aih-tl-attempt") == 1


def test_a_viewer_sees_no_buttons_and_may_not_post(client, vic, make_run) -> None:
    running, failed = make_run(3, execute=False), make_run(3, message="@error auth")
    client.force_login(vic)
    for run in (running, failed):
        page = client.get(run_url(run)).content.decode()
        assert 'id="aih-cancel"' not in page and 'id="aih-resume"' not in page
    assert client.post(run_url(running, "cancel")).status_code == 403
    assert client.post(run_url(failed, "resume")).status_code == 403
    running.refresh_from_db()
    assert running.status == "pending"


# --- the runs list --------------------------------------------------------------------
def test_the_runs_list_filters_and_totals(client, ada, alice, make_run) -> None:
    done, pending = make_run(3), make_run(3, actor=Actor.for_user(alice), execute=False)
    failed = make_run(4, message="@error auth")
    WorkflowRun.objects.filter(pk=failed.pk).update(created_at=timezone.now() - timedelta(days=9))
    client.force_login(ada)
    url = reverse("admin:workflows_workflowrun_changelist")

    def listed(query: str = "") -> list:
        return [run.pk for run in client.get(url + query).context["cl"].result_list]

    assert listed() == [pending.pk, done.pk, failed.pk]
    assert listed("?status__exact=completed") == [done.pk]
    assert listed(f"?workflow__id__exact={failed.workflow_id}") == [failed.pk]
    assert listed("?age=1d") == [pending.pk, done.pk]
    assert listed("?age=old") == [failed.pk]
    assert listed("?started_by=admin:alice") == [pending.pk]
    page = client.get(url)
    totals = page.context["totals"]
    assert totals["runs"] == 3
    assert totals["tokens"] == sum(r.input_tokens + r.output_tokens for r in (done, pending, failed)) > 0
    assert totals["cost_usd"] == done.cost_usd + failed.cost_usd
    assert totals["duration"] == (done.finished_at - done.started_at) + (failed.finished_at - failed.started_at)
    assert '<strong data-total="runs">3</strong>' in page.content.decode()
    # STARTED BY reads as the filter does, for a person and for anyone else alike.
    for run in (pending, done):
        assert f'<td class="field-started_by_label">{run.actor_source}</td>' in page.content.decode()
    assert done.actor_source != "admin:alice"
    # A run that has started and not finished says its duration is still counting.
    WorkflowRun.objects.filter(pk=pending.pk).update(started_at=timezone.now() - timedelta(seconds=5))
    assert " s so far</td>" in client.get(url + "?status__exact=pending").content.decode()
    assert client.get(url + "?status__exact=running").context["totals"]["runs"] == 0


@pytest.mark.parametrize("n", [3, 30])
def test_the_runs_list_costs_the_same_queries_for_3_and_30_runs(
    n, client, bob, workspace, reader, critic, operator, django_assert_num_queries
) -> None:
    workflow = workflow_create(workspace=workspace, actor=operator, key="one", name="One", definition=fan_out(3))
    for _ in range(n):
        workflow_run_start(workflow=workflow, actor=operator, message="x")
    client.force_login(bob)
    # session, user, roles (who may use the admin, and rights), filter choices (workflow,
    # started by, workspace), count, the page, totals, the review count
    with django_assert_num_queries(10):
        response = client.get(reverse("admin:workflows_workflowrun_changelist"))
    assert len(response.context["cl"].result_list) == n


def test_the_runs_list_is_scoped_to_the_workspace(client, charlie, make_run) -> None:
    make_run(3)
    client.force_login(charlie)
    response = client.get(reverse("admin:workflows_workflowrun_changelist"))
    assert list(response.context["cl"].result_list) == []
    assert response.context["totals"]["runs"] == 0


def test_the_index_counts_running_runs_for_their_workspace_only(client, alice, charlie, make_run) -> None:
    run = make_run(3, execute=False)
    WorkflowRun.objects.filter(pk=run.pk).update(status="running")
    client.force_login(alice)
    assert '<strong data-running="1">1</strong> run running now.' in client.get(reverse("admin:index")).content.decode()
    client.force_login(charlie)
    assert 'data-running="0"' in client.get(reverse("admin:index")).content.decode()


def test_lineage_both_ways_between_runs_and_prompt_versions(client, bob, make_run, reader, critic) -> None:
    run = make_run(3)
    make_run(3, execute=False)  # never ran any version
    version = PromptVersion.objects.get(agent=reader, number=1)
    client.force_login(bob)
    # from the version's review page to the runs that ran it
    review = client.get(reverse("admin:agents_promptversion_review", args=[version.pk])).content.decode()
    assert f'href="{run_url(run)}">fan3 v1</a> · completed' in review
    assert f"?ran_version={version.pk}" in review
    unused = PromptVersion.objects.get(agent=critic, number=1)  # its step was skipped
    review = client.get(reverse("admin:agents_promptversion_review", args=[unused.pk])).content.decode()
    assert "No workflow run has used this version." in review
    # from the run page to the version (see test_the_run_page_tells_the_whole_story), and the full list
    response = client.get(reverse("admin:workflows_workflowrun_changelist") + f"?ran_version={version.pk}")
    assert [r.pk for r in response.context["cl"].result_list] == [run.pk]
    assert "lecteur v1" in response.content.decode()


def test_another_workspaces_version_selects_nothing_and_is_not_named(client, charlie, make_run, reader) -> None:
    make_run(3)
    version = PromptVersion.objects.get(agent=reader, number=1)
    client.force_login(charlie)
    response = client.get(reverse("admin:workflows_workflowrun_changelist") + f"?ran_version={version.pk}")
    assert list(response.context["cl"].result_list) == []
    assert "lecteur" not in response.content.decode()
    assert client.get(reverse("admin:agents_promptversion_review", args=[version.pk])).status_code == 404


def test_a_superuser_sees_every_workspaces_runs_and_may_cancel(client, root, make_run) -> None:
    run = make_run(3, execute=False)
    client.force_login(root)
    listed = client.get(reverse("admin:workflows_workflowrun_changelist")).context["cl"].result_list
    assert [r.pk for r in listed] == [run.pk]
    assert 'id="aih-cancel"' in client.get(run_url(run)).content.decode()
    client.post(run_url(run, "cancel"))
    run.refresh_from_db()
    assert (run.status, run.error) == ("cancelled", "Cancelled by admin:root.")
