"""`run_workflow`, `inspect_run` and `workflow_schema`, inline (no broker)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from workflows.models import WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


def call(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_run_workflow_runs_the_pipeline_and_prints_one_json_object(pipeline) -> None:
    summary = json.loads(call("run_workflow", "acme", "pipeline", "--message", "Bonjour", "--json"))
    run = WorkflowRun.objects.get()
    assert summary["id"] == str(run.pk)
    assert summary["status"] == "completed"
    assert summary["error"] is None
    assert summary["answer"] == run.answer and summary["outputs"] == {"final": run.answer}
    lecture, critique = summary["steps"]
    assert set(lecture) >= {
        "name",
        "status",
        "input",
        "output",
        "started_at",
        "finished_at",
        "tokens",
        "cost",
        "agent_version",
    }
    assert (lecture["name"], lecture["status"], lecture["input"], lecture["agent_version"]) == (
        "lecture",
        "completed",
        "Bonjour",
        1,
    )
    assert critique["input"] == lecture["output"]["answer"]
    assert json.loads(call("inspect_run", str(run.pk), "--json")) == summary


def test_run_workflow_prints_steps_and_answer_for_people(pipeline) -> None:
    out = call("run_workflow", "acme", "pipeline", "--inputs", '{"message": "Salut"}')
    run = WorkflowRun.objects.get()
    lines = out.splitlines()
    assert lines[0] == f"run {run.pk} of pipeline v1: completed"
    assert lines[1].split()[:4] == ["lecture", "completed", "lecteur", "v1"]
    assert run.answer in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere", "pipeline"], "No workspace 'nowhere'."),
        (["acme", "ghost"], "No workflow 'ghost' in workspace 'acme'."),
        (["acme", "pipeline", "--inputs", "[1]"], 'inputs: Give the inputs as a JSON object, e.g. {"message": "…"}.'),
        (
            ["acme", "pipeline", "--inputs", "{oops"],
            "--inputs is not JSON: Expecting property name enclosed in double quotes (line 1, column 2).",
        ),
    ],
)
def test_run_workflow_bad_input_is_a_clear_error_and_no_run(pipeline, args, message) -> None:
    with pytest.raises(CommandError) as caught:
        call("run_workflow", *args)
    assert str(caught.value) == message
    assert not WorkflowRun.objects.exists()


def test_a_failed_run_prints_why_and_exits_non_zero(pipeline) -> None:
    with pytest.raises(CommandError, match=r"^Run .* failed: Step 'lecture' failed: Provider error \(auth\)"):
        call("run_workflow", "acme", "pipeline", "--message", "@error auth")
    assert WorkflowRun.objects.get().status == "failed"


def test_inspect_run_refuses_unknown_and_malformed_ids(db) -> None:
    for run_id in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(CommandError, match=f"^No workflow run '{run_id}'.$"):
            call("inspect_run", run_id)


def test_workflow_schema_prints_the_json_schema(db) -> None:
    schema = json.loads(call("workflow_schema"))
    assert schema["title"] == "AiHummer workflow definition (pivot format v1)"
    assert schema["properties"]["version"] == {"const": 1}
