"""/v1/admin/workflows and /v1/admin/runs: definitions, starting, inspecting,
cancelling and resuming runs over REST."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from aihummer.actors import Actor
from aihummer.services import api_key_create
from aihummer.tests.factories import PIPELINE, api_client
from workflows.models import WorkflowRun
from workflows.services import workflow_run_start


@pytest.fixture
def key_for(workspace, ada):
    names = iter(range(100))

    def make(scopes: str, owner, workspace=workspace) -> APIClient:
        actor = Actor.for_user(ada) if workspace.slug == "acme" else Actor.for_operator(name="tests")
        raw = api_key_create(workspace=workspace, name=f"k{next(names)}", scopes=scopes, owner=owner, actor=actor)[1]
        return api_client(raw)

    return make


def error(response) -> dict:
    return response.json()["error"]


def test_workflows_list_and_read(pipeline, key_for, vic):
    reader = key_for("read", vic)

    listed = reader.get("/v1/admin/workflows").json()["results"]
    one = reader.get("/v1/admin/workflows/pipeline").json()

    assert [w["key"] for w in listed] == ["pipeline"]
    assert (one["version"], one["definition"]) == (1, PIPELINE)


def test_a_publisher_creates_a_workflow_and_a_bad_definition_is_a_422(reader, critic, key_for, ada, alice):
    publisher = key_for("read,write,publish", ada)

    created = publisher.post("/v1/admin/workflows", {"key": "duo", "name": "Duo", "definition": PIPELINE})
    bad = publisher.post(
        "/v1/admin/workflows", {"key": "bad", "name": "Bad", "definition": {"version": 2, "steps": []}}
    )
    refused = key_for("read,write", alice).post(
        "/v1/admin/workflows", {"key": "x", "name": "X", "definition": PIPELINE}
    )

    assert (created.status_code, created["Location"]) == (201, "/v1/admin/workflows/duo")
    assert bad.status_code == 422
    assert "definition" in error(bad)["fields"]
    assert refused.status_code == 403


def test_a_run_starts_with_202_and_reads_back_finished(pipeline, key_for, alice, django_capture_on_commit_callbacks):
    client = key_for("read,write", alice)

    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/v1/admin/workflows/pipeline/runs", {"message": "Un texte."})

    assert started.status_code == 202
    run = WorkflowRun.objects.get()
    assert started["Location"] == f"/v1/admin/runs/{run.pk}"
    inspected = client.get(started["Location"]).json()
    assert inspected["status"] == "completed"
    assert [(s["name"], s["status"]) for s in inspected["steps"]] == [
        ("lecture", "completed"),
        ("critique", "completed"),
    ]
    assert [r["id"] for r in client.get("/v1/admin/workflows/pipeline/runs").json()["results"]] == [str(run.pk)]


@pytest.mark.django_db(transaction=True)
def test_starting_a_run_answers_the_run_as_it_stands(pipeline, key_for, alice):
    # Without a broker the steps run when the start commits: the answer says so.
    client = key_for("read,write", alice)

    started = client.post("/v1/admin/workflows/pipeline/runs", {"message": "Un texte."})

    assert started.status_code == 202
    body = started.json()
    run = WorkflowRun.objects.get()
    assert (body["status"], body["answer"]) == ("completed", run.answer)
    assert body["tokens"] == {"input": run.input_tokens, "output": run.output_tokens}
    assert run.input_tokens > 0
    assert [(s["name"], s["status"]) for s in body["steps"]] == [("lecture", "completed"), ("critique", "completed")]
    assert client.get(started["Location"]).json() == body


def test_a_run_is_cancelled_once_and_only_a_failed_run_resumes(pipeline, key_for, alice):
    client = key_for("read,write", alice)
    started = client.post("/v1/admin/workflows/pipeline/runs", {"message": "Un texte."})  # steps never dispatched

    resumed = client.post(f"{started['Location']}/resume")
    cancelled = client.post(f"{started['Location']}/cancel")
    again = client.post(f"{started['Location']}/cancel")

    assert resumed.status_code == 409
    assert cancelled.json()["status"] == "cancelled"
    assert again.status_code == 409
    assert error(again)["message"].endswith("there is nothing to cancel.")


def test_a_read_key_may_not_start_runs(pipeline, key_for, vic):
    response = key_for("read", vic).post("/v1/admin/workflows/pipeline/runs", {"message": "x"})

    assert response.status_code == 403
    assert "lacks the 'write' scope" in error(response)["message"]


def test_charlie_gets_404_for_acmes_workflows_and_runs(pipeline, key_for, alice, charlie, other_workspace):
    started = key_for("read,write", alice).post("/v1/admin/workflows/pipeline/runs", {"message": "x"})
    globex = key_for("read,write,publish", charlie, workspace=other_workspace)

    for method, path in [
        ("get", "/v1/admin/workflows/pipeline"),
        ("post", "/v1/admin/workflows/pipeline/runs"),
        ("get", started["Location"]),
        ("post", f"{started['Location']}/cancel"),
        ("get", "/v1/admin/runs/not-a-uuid-at-all-but-32-characters"),
    ]:
        assert getattr(globex, method)(path).status_code == 404, path


@pytest.mark.parametrize("scopes", ["write", "publish", "write,publish"])
def test_a_key_without_the_read_scope_reads_no_workflow_nor_run(pipeline, key_for, ada, alice, scopes):
    """Issue 24, item 5: the list, a definition, its runs and a run all need `read`."""
    run = workflow_run_start(workflow=pipeline, actor=Actor.for_user(alice), message="Un texte.")
    client = key_for(scopes, ada)

    answers = [
        client.get(url)
        for url in (
            "/v1/admin/workflows",
            "/v1/admin/workflows/pipeline",
            "/v1/admin/workflows/pipeline/runs",
            f"/v1/admin/runs/{run.pk}",
        )
    ]

    assert [response.status_code for response in answers] == [403, 403, 403, 403]
    assert all(error(r)["message"].endswith("lacks the 'read' scope needed for reading.") for r in answers)


def test_a_ten_thousand_step_definition_is_refused_by_its_count_alone(reader, critic, key_for, ada):
    """Issue 24, item 12: the limit is said before any step is compiled."""
    steps = [{"name": f"s{i}", "agent_name": "ghost", "depends_on": ["nowhere"]} for i in range(10_000)]

    response = key_for("read,write,publish", ada).post(
        "/v1/admin/workflows", {"key": "big", "name": "Big", "definition": {"version": 1, "steps": steps}}
    )

    assert response.status_code == 422
    assert error(response)["fields"] == {"definition": ["steps: at most 100 steps, not 10000."]}
