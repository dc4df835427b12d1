"""Issue 24, item 1: what an agent proposes inside a workflow run answers for everyone
the run's starter answers for — a key's holder and the person who created it — so
neither may approve it, over REST or MCP."""

from __future__ import annotations

import pytest

from agents.models import PromptVersion
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.services import api_key_create
from aihummer.tests.factories import api_client
from aihummer.tests.mcp_helpers import call_tool, ok
from workflows.services import workflow_create

SELF_EDIT = '@call propose_persona_edit {"persona": "Chaleureuse.", "reason": "Les clients."}'
FOUR_EYES = "You proposed this version: another person must decide it (four eyes)."


@pytest.fixture
def self_editing_workflow(workspace: Workspace, echo_preset, operator: Actor):
    agent_create(
        workspace=workspace,
        actor=operator,
        key="redacteur",
        name="Rédacteur",
        snapshot={"identity": {"name": "Camille"}, "allowed_tool_names": ["propose_persona_edit"]},
    )
    definition = {"version": 1, "steps": [{"name": "ecrire", "agent_name": "redacteur", "input_mapping": {}}]}
    return workflow_create(workspace=workspace, actor=operator, key="auto", name="Auto", definition=definition)


def run_over_rest(raw_key: str, capture) -> PromptVersion:
    with capture(execute=True):
        started = api_client(raw_key).post("/v1/admin/workflows/auto/runs", {"message": SELF_EDIT})
    assert started.status_code == 202, started.json()
    return PromptVersion.objects.get(status=PromptVersion.Status.PENDING)


def approve(person: User, version: PromptVersion):
    url = f"/v1/admin/prompt-versions/{version.pk}/approve"
    return api_client(person).post(url, {}, HTTP_X_WORKSPACE=version.agent.workspace.slug)


def test_the_creator_of_an_ownerless_key_may_not_approve_what_its_run_proposed(
    self_editing_workflow, workspace, ada, bob, django_capture_on_commit_callbacks
):
    key, raw = api_key_create(workspace=workspace, name="ci", scopes="read,write", actor=Actor.for_user(ada))

    proposal = run_over_rest(raw, django_capture_on_commit_callbacks)
    refused = approve(ada, proposal)

    assert proposal.proposer_identity == f"api_key:{key.pk},user:{ada.pk}"
    assert (refused.status_code, refused.json()["error"]["message"]) == (403, FOUR_EYES)
    assert approve(bob, proposal).status_code == 200


def test_neither_the_holder_nor_the_creator_of_a_key_approves_its_runs_proposal(
    self_editing_workflow, workspace, ada, bob, django_capture_on_commit_callbacks
):
    _, raw = api_key_create(workspace=workspace, name="bobs", scopes="read,write", owner=bob, actor=Actor.for_user(ada))

    proposal = run_over_rest(raw, django_capture_on_commit_callbacks)

    assert proposal.proposer_identity == f"user:{bob.pk},user:{ada.pk}"
    assert [approve(person, proposal).status_code for person in (bob, ada)] == [403, 403]
    assert PromptVersion.objects.get(pk=proposal.pk).status == PromptVersion.Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_over_mcp_the_superuser_who_created_the_key_may_not_approve_its_runs_proposal(
    self_editing_workflow, workspace, root, bob
):
    key, raw = api_key_create(workspace=workspace, name="bot", scopes="read,write", actor=Actor.for_user(root))

    body = ok(call_tool(raw, "run_workflow", workflowKey="auto", message=SELF_EDIT))
    proposal = PromptVersion.objects.get(status=PromptVersion.Status.PENDING)

    assert body["runStatus"] == "completed"
    assert proposal.proposer_identity == f"api_key:{key.pk},user:{root.pk}"
    assert approve(root, proposal).status_code == 403
    assert approve(bob, proposal).status_code == 200
