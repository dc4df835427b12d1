"""Workflow services: create, update (version bump), delete (builtin, dependents,
force), starting runs with bad input, rights and workspace isolation."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.tests.factories import PIPELINE, make_agent
from workflows.models import StepRun, Workflow, WorkflowRun
from workflows.services import (
    workflow_create,
    workflow_delete,
    workflow_get,
    workflow_run_cancel,
    workflow_run_start,
    workflow_run_wait,
    workflow_update,
)

pytestmark = pytest.mark.django_db


def exact(text: str) -> str:
    return f"^{re.escape(text)}$"


def test_create_validates_against_the_workspace_agents(workspace, reader, operator) -> None:
    with pytest.raises(ValidationError) as caught:
        workflow_create(workspace=workspace, actor=operator, key="p", name="P", definition=PIPELINE)
    assert caught.value.message_dict == {"definition": ["steps[1].agent_name: no agent 'critique' in this workspace."]}
    assert not Workflow.all_objects.exists()


def test_create_records_history_and_refuses_a_taken_key(pipeline, workspace, operator) -> None:
    assert pipeline.version == 1
    assert pipeline.history.get().history_change_reason == "cli:tests: created"
    with pytest.raises(ValidationError) as caught:
        workflow_create(workspace=workspace, actor=operator, key="pipeline", name="Again", definition=PIPELINE)
    assert caught.value.message_dict == {"key": ["A workflow with key 'pipeline' already exists in workspace 'acme'."]}


def test_a_real_workflow_cannot_use_a_sandbox_agent(workspace, echo_preset, reader, operator) -> None:
    make_agent(workspace, "critique", "Sandbox critic", is_sandbox=True)
    with pytest.raises(ValidationError) as caught:
        workflow_create(workspace=workspace, actor=operator, key="p", name="P", definition=PIPELINE)
    assert caught.value.message_dict == {
        "definition": ["steps[1].agent_name: agent 'critique' is a sandbox agent; only a sandbox workflow may use it."]
    }
    sandbox = workflow_create(
        workspace=workspace, actor=operator, key="sb", name="SB", definition=PIPELINE, is_sandbox=True
    )
    assert sandbox.history.count() == 0
    assert not Workflow.objects.filter(key="sb").exists()


def test_editors_may_run_but_not_define_workflows(workspace, reader, critic, alice) -> None:
    with pytest.raises(
        PermissionDenied, match=re.escape("alice is an editor in workspace 'acme'; publishing changes directly")
    ):
        workflow_create(workspace=workspace, actor=Actor.for_user(alice), key="p", name="P", definition=PIPELINE)


def test_update_bumps_the_version_only_when_the_definition_changes(pipeline, operator) -> None:
    renamed = workflow_update(workflow=pipeline, actor=operator, name="Renamed")
    assert (renamed.name, renamed.version) == ("Renamed", 1)
    changed = workflow_update(workflow=pipeline, actor=operator, definition={**PIPELINE, "outputs": {}})
    assert changed.version == 2
    same = workflow_update(workflow=pipeline, actor=operator, definition={**PIPELINE, "outputs": {}})
    assert same.version == 2
    with pytest.raises(ValidationError) as caught:
        workflow_update(workflow=pipeline, actor=operator, definition={"version": 1, "steps": []})
    assert caught.value.message_dict == {"definition": ["steps: give at least one step."]}
    with pytest.raises(ValidationError) as caught:
        workflow_update(workflow=pipeline, actor=operator, key="other")
    assert caught.value.message_dict == {"key": ["Not editable."]}


def test_delete_refuses_builtin_and_in_progress_unless_forced(pipeline, workspace, operator, reader, critic) -> None:
    builtin = workflow_create(
        workspace=workspace, actor=operator, key="core", name="Core", definition=PIPELINE, is_builtin=True
    )
    with pytest.raises(
        ApplicationError, match=exact("Workflow 'core' is built in and cannot be deleted; disable it instead.")
    ):
        workflow_delete(workflow=builtin, actor=operator)
    run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")  # pending: nothing commits here
    with pytest.raises(ApplicationError) as caught:
        workflow_delete(workflow=pipeline, actor=operator)
    assert (
        caught.value.message == f"Workflow 'pipeline' is in use: run {run.pk} is pending. Delete with force to proceed."
    )
    assert workflow_delete(workflow=pipeline, actor=operator, force=True) == [f"run {run.pk} is pending"]
    run.refresh_from_db()
    assert run.workflow_id is None and run.workflow_key == "pipeline"


def test_delete_counts_a_run_waiting_for_a_person_as_in_progress(pipeline, operator) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="Texte")
    WorkflowRun.all_objects.filter(pk=run.pk).update(status=WorkflowRun.Status.WAITING)  # a step awaits approval
    with pytest.raises(ApplicationError) as caught:
        workflow_delete(workflow=pipeline, actor=operator)
    assert (
        caught.value.message
        == f"Workflow 'pipeline' is in use: run {run.pk} is waiting for a person. Delete with force to proceed."
    )


# --- starting runs --------------------------------------------------------------------
def test_start_writes_a_pending_run_with_one_row_per_step(pipeline, alice_actor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as dispatched:
        run = workflow_run_start(workflow=pipeline, actor=alice_actor, message="Texte", inputs={"lang": "fr"})
    assert len(dispatched) == 1
    assert run.status == "pending"
    assert run.inputs == {"lang": "fr", "message": "Texte"}
    assert run.context == {"inputs": run.inputs, "steps": {}}
    assert (run.workflow_version, run.actor_source, run.surface) == (1, "admin:alice", "admin")
    assert run.deadline_at > run.created_at
    assert list(StepRun.objects.filter(run=run).values_list("name", "status", "agent_key")) == [
        ("lecture", "pending", "lecteur"),
        ("critique", "pending", "critique"),
    ]


@pytest.mark.parametrize(
    ("kwargs", "errors"),
    [
        ({"inputs": ["a"]}, {"inputs": ['Give the inputs as a JSON object, e.g. {"message": "…"}.']}),
        ({"inputs": "text"}, {"inputs": ['Give the inputs as a JSON object, e.g. {"message": "…"}.']}),
        ({"message": 3}, {"message": ["Give the message as text."]}),
    ],
)
def test_bad_inputs_are_refused_before_any_run(pipeline, operator, kwargs, errors) -> None:
    with pytest.raises(ValidationError) as caught:
        workflow_run_start(workflow=pipeline, actor=operator, **kwargs)
    assert caught.value.message_dict == errors
    assert not WorkflowRun.all_objects.exists()


def test_a_disabled_workflow_is_refused(pipeline, operator) -> None:
    workflow_update(workflow=pipeline, actor=operator, is_active=False)
    pipeline.refresh_from_db()
    with pytest.raises(ApplicationError, match=exact("Workflow 'pipeline' is disabled; enable it to run it.")):
        workflow_run_start(workflow=pipeline, actor=operator, message="x")
    assert not WorkflowRun.all_objects.exists()


def test_viewers_may_not_run_and_strangers_see_nothing(pipeline, vic, charlie, workspace) -> None:
    with pytest.raises(
        PermissionDenied, match=re.escape("vic is a viewer in workspace 'acme'; running agents and workflows")
    ):
        workflow_run_start(workflow=pipeline, actor=Actor.for_user(vic), message="x")
    with pytest.raises(NotFound, match=exact("Unknown workflow.")):
        workflow_run_start(workflow=pipeline, actor=Actor.for_user(charlie), message="x")
    with pytest.raises(NotFound, match=exact("Unknown workflow 'pipeline'.")):
        workflow_get(workspace=workspace, key="pipeline", actor=Actor.for_user(charlie))
    with pytest.raises(NotFound, match=exact("No workflow 'nope' in workspace 'acme'.")):
        workflow_get(workspace=workspace, key="nope", actor=Actor.for_user(vic))


def test_wait_returns_the_run_as_it_is_when_time_runs_out(pipeline, operator) -> None:
    run = workflow_run_start(workflow=pipeline, actor=operator, message="x")  # never committed: stays pending
    assert workflow_run_wait(run=run, timeout=0.1).status == "pending"


def test_sandbox_cleanup_removes_runs_then_workflows(workspace, echo_preset, operator) -> None:
    from sandbox.services import sandbox_cleanup

    for key in ("sb_lecteur", "sb_critique"):
        make_agent(workspace, key, "Sandbox", is_sandbox=True)
    definition = {
        "version": 1,
        "steps": [{"name": "a", "agent_name": "sb_lecteur"}, {"name": "b", "agent_name": "sb_critique"}],
    }
    workflow = workflow_create(
        workspace=workspace, actor=operator, key="sb", name="SB", definition=definition, is_sandbox=True
    )
    run = workflow_run_start(workflow=workflow, actor=operator, message="x")
    assert run.is_sandbox and not WorkflowRun.objects.exists()
    # Its steps were never sent (no commit in this test): cancelled, as cleanup waits for running runs.
    workflow_run_cancel(run=run, actor=operator)
    counts = sandbox_cleanup(workspace=workspace, actor=operator)
    assert counts == {"workflowrun": 1, "workflow": 1, "agent": 2, "preset": 0}
    assert not StepRun.objects.exists()
    assert sandbox_cleanup(workspace=workspace, actor=operator) == dict.fromkeys(counts, 0)


def test_a_runs_actor_acts_only_in_its_workspace_and_never_decides(workspace, other_workspace, alice) -> None:
    actor = Actor.for_workflow_run(workspace_id=workspace.pk, source="admin:alice", person_id=alice.pk)
    assert actor.can("run", workspace) and actor.can("propose", workspace) and actor.can("sandbox", workspace)
    assert actor.refusal("publish", workspace) == "A workflow run may not do publishing changes directly."
    assert actor.refusal("decide", workspace) == "A workflow run may not do approving or rejecting."
    assert (
        actor.refusal("run", other_workspace) == "A workflow run started by admin:alice acts only in its own workspace."
    )
    assert (actor.source, actor.identity, actor.person.pk) == ("admin:alice", ("user", alice.pk), alice.pk)
    assert actor.workspace_ids("read") == [workspace.pk] and actor.workspace_ids("manage") == []
    anonymous = Actor.for_workflow_run(workspace_id=workspace.pk, source="api:ci", person_id=None)
    assert (anonymous.identity, anonymous.person) == (("run", "api:ci"), None)


def test_an_agent_a_workflow_runs_is_a_dependent_of_its_deletion(pipeline, critic, operator) -> None:
    from agents.services import agent_delete

    with pytest.raises(ApplicationError) as caught:
        agent_delete(agent=critic, actor=operator)
    assert caught.value.message == (
        "Agent 'critique' is in use: workflow 'pipeline' runs it in step critique. Delete with force to proceed."
    )
    assert agent_delete(agent=critic, actor=operator, force=True) == ["workflow 'pipeline' runs it in step critique"]
