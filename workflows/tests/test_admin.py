"""The minimal workflows admin: lists scoped to the actor's workspaces, sandbox rows
hidden, runs read-only with their steps, workflows edited through the services."""

from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse

from aihummer.tests.factories import PIPELINE, make_agent
from workflows.models import Workflow, WorkflowRun
from workflows.services import workflow_create, workflow_run_start

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(pipeline, operator, workspace, echo_preset, reader, critic):
    for key in ("sb_lecteur", "sb_critique"):
        make_agent(workspace, key, "Sandbox", is_sandbox=True)
    definition = copy.deepcopy(PIPELINE)
    for step in definition["steps"]:
        step["agent_name"] = "sb_" + step["agent_name"]
    sandbox = workflow_create(
        workspace=workspace, actor=operator, key="sb_pipeline", name="SB", definition=definition, is_sandbox=True
    )
    return (
        workflow_run_start(workflow=pipeline, actor=operator, message="Texte"),
        workflow_run_start(workflow=sandbox, actor=operator, message="Texte"),
    )


def test_workflows_and_runs_are_listed_for_members_without_sandbox_rows(client, alice, runs) -> None:
    client.force_login(alice)
    workflows = client.get(reverse("admin:workflows_workflow_changelist"))
    assert workflows.status_code == 200
    assert [w.key for w in workflows.context["cl"].result_list] == ["pipeline"]
    listed = client.get(reverse("admin:workflows_workflowrun_changelist"))
    assert [r.pk for r in listed.context["cl"].result_list] == [runs[0].pk]
    sandbox_page = client.get(reverse("admin:workflows_workflowrun_change", args=[runs[1].pk]))
    assert sandbox_page.status_code == 404  # a hidden row answers like a missing one


def test_another_workspace_sees_nothing(client, charlie, runs) -> None:
    client.force_login(charlie)
    assert list(client.get(reverse("admin:workflows_workflow_changelist")).context["cl"].result_list) == []
    assert list(client.get(reverse("admin:workflows_workflowrun_changelist")).context["cl"].result_list) == []
    assert client.get(reverse("admin:workflows_workflowrun_change", args=[runs[0].pk])).status_code == 404


def test_a_run_page_is_read_only_with_its_steps(client, alice, runs, django_assert_num_queries) -> None:
    client.force_login(alice)
    url = reverse("admin:workflows_workflowrun_change", args=[runs[0].pk])
    page = client.get(url)
    assert page.status_code == 200
    assert b"lecture" in page.content and b"critique" in page.content
    assert b'name="_save"' not in page.content
    assert client.post(url, {}).status_code == 403
    assert client.get(reverse("admin:workflows_workflowrun_add")).status_code == 403


def add_form(ada, key: str, definition: dict) -> dict:
    """The admin's add form of an enabled workflow `key` (named after it) in ada's workspace."""
    workspace = ada.memberships.get().workspace_id
    return {
        "workspace": workspace,
        "key": key,
        "name": key.title(),
        "description": "",
        "definition": json.dumps(definition),
        "is_active": "on",
    }


def test_a_workflow_is_added_through_the_service(client, ada, reader, critic) -> None:
    client.force_login(ada)
    ghost = {"version": 1, "steps": [{"name": "a", "agent_name": "ghost"}]}
    response = client.post(reverse("admin:workflows_workflow_add"), add_form(ada, "broken", ghost))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "definition": ["steps[0].agent_name (step 'a'): no agent 'ghost' in this workspace."]
    }
    response = client.post(reverse("admin:workflows_workflow_add"), add_form(ada, "seed", PIPELINE))
    assert response.status_code == 302
    workflow = Workflow.objects.get(key="seed")
    assert workflow.history.get().history_user == ada
    assert not WorkflowRun.objects.exists()
