"""The workflow editor in the admin: every definition problem shown with its path and
step, the step graph, versions with their diffs, and "Start a run" per persona."""

from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from aihummer.tests.factories import PIPELINE
from workflows.models import WorkflowRun
from workflows.services import workflow_update

pytestmark = pytest.mark.django_db


def change_url(workflow, view: str = "change") -> str:
    return reverse(f"admin:workflows_workflow_{view}", args=[workflow.pk])


def post_definition(client, workflow, definition: str) -> object:
    return client.post(
        change_url(workflow),
        {"name": workflow.name, "description": "", "definition": definition, "is_active": "on"},
    )


def test_every_problem_is_shown_with_its_path_and_step(client, ada, pipeline) -> None:
    client.force_login(ada)
    broken = copy.deepcopy(PIPELINE)
    broken["steps"][0]["agent_name"] = "ghost"
    broken["steps"][1]["input_mapping"] = {"text": "$.steps.nowhere.output.answer"}
    broken["steps"][1]["retries"] = 99
    broken["extra"] = True
    response = post_definition(client, pipeline, json.dumps(broken))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["definition"] == [
        "extra: unknown key (expected description, inputs, outputs, steps, version).",
        "steps[0].agent_name (step 'lecture'): no agent 'ghost' in this workspace.",
        "steps[1].retries (step 'critique'): must be an integer from 0 to 10.",
    ]
    assert "aih-draft-graph" not in response.content.decode()  # retries out of range: no plan to draw
    pipeline.refresh_from_db()
    assert pipeline.version == 1


def test_an_edit_that_does_not_save_is_drawn_when_its_shape_allows(client, ada, pipeline) -> None:
    client.force_login(ada)
    edit = copy.deepcopy(PIPELINE)
    edit["steps"].append({"name": "extra", "agent_name": "ghost", "depends_on": ["lecture"]})
    response = post_definition(client, pipeline, json.dumps(edit))
    assert response.context["adminform"].form.errors["definition"] == [
        "steps[2].agent_name (step 'extra'): no agent 'ghost' in this workspace."
    ]
    draft = str(response.context["draft_graph"])
    assert draft.count('<g class="aih-node"') == 3 and 'data-from="lecture" data-to="extra"' in draft
    assert str(response.context["graph"]).count('<g class="aih-node"') == 2  # the saved one, beside it


def test_a_json_syntax_error_says_where(client, ada, pipeline) -> None:
    client.force_login(ada)
    response = post_definition(client, pipeline, '{"version": 1,\n "steps": [\n  {"name": "a" "agent_name": "b"}]}')
    assert response.context["adminform"].form.errors["definition"] == [
        "Not valid JSON: Expecting ',' delimiter at line 3, column 16."
    ]
    # what was typed comes back to be fixed, not the stored definition
    assert escape('{"name": "a" "agent_name": "b"}') in response.content.decode()


def test_the_workflow_page_draws_the_graph_and_offers_a_run(
    client, ada, alice, vic, pipeline, reader, critic, django_assert_num_queries
) -> None:
    client.force_login(ada)
    client.get(change_url(pipeline))  # the admin caches the model's content type once per process
    # session, user, roles (who may use the admin, and rights), the workflow, its agents
    # (the boxes' links), review count
    with django_assert_num_queries(6):
        page = client.get(change_url(pipeline)).content.decode()
    assert page.count('<g class="aih-node"') == 2
    for agent in (reader, critic):  # each box links to its agent
        assert f'<a href="{reverse("admin:agents_agent_change", args=[agent.pk])}" class="aih-node-link">' in page
    assert 'data-from="lecture" data-to="critique"' in page
    assert 'id="aih-start-link"' in page
    assert escape('"agent_name": "critique"') in page  # the definition, indented for editing
    client.force_login(alice)  # an editor may run it but not change it
    page = client.get(change_url(pipeline)).content.decode()
    assert 'id="aih-start-link"' in page and 'name="_save"' not in page
    client.force_login(vic)
    page = client.get(change_url(pipeline)).content.decode()
    assert 'id="aih-start-link"' not in page and "aih-graph" in page


def test_versions_show_what_each_change_did(client, vic, pipeline, operator, django_assert_num_queries) -> None:
    second = copy.deepcopy(PIPELINE)
    second["steps"][1]["input_mapping"] = {"text": "$.steps.lecture.output.text"}
    pipeline = workflow_update(workflow=pipeline, actor=operator, definition=second)
    pipeline = workflow_update(workflow=pipeline, actor=operator, name="Renamed")  # no new version
    third = copy.deepcopy(second)
    third["steps"].append({"name": "relecture", "agent_name": "lecteur", "depends_on": [], "when": "$.inputs.r"})
    pipeline = workflow_update(workflow=pipeline, actor=operator, definition=third)
    client.force_login(vic)
    # session, user, roles (who may use the admin, and rights), the workflow, its history,
    # the agents it names (one query)
    with django_assert_num_queries(6):
        response = client.get(change_url(pipeline, "versions"))
    versions = response.context["versions"]
    assert [v["number"] for v in versions] == [3, 2, 1]
    added, edited, first = (v["diff"] for v in versions)
    assert (added.steps_added, added.steps_edited, added.steps_removed) == (["relecture"], [], [])
    assert [(name, [(c.label, c.before, c.after) for c in changes]) for name, changes in edited.steps_edited] == [
        ("critique", [("input_mapping.text", '"$.steps.lecture.output.answer"', '"$.steps.lecture.output.text"')])
    ]
    assert first is None
    html = response.content.decode()
    assert '<span class="aih-tag added">added</span><code>relecture</code>' in html
    assert "<ins>" in html and "<del>" in html
    assert html.count('class="aih-graph"') == 3
    # each version links to its runs, and a run back to its version
    runs = reverse("admin:workflows_workflowrun_changelist")
    assert f'href="{runs}?workflow__id__exact={pipeline.pk}&amp;workflow_version=2"' in html
    listed = client.get(runs, {"workflow__id__exact": str(pipeline.pk), "workflow_version": "2"})
    assert (listed.status_code, listed.context["cl"].result_count) == (200, 0)  # a filter the list accepts


def test_an_editor_starts_a_run_with_a_message_and_inputs(client, alice, pipeline) -> None:
    client.force_login(alice)
    url = change_url(pipeline, "start")
    assert client.get(url).status_code == 200
    response = client.post(url, {"message": "Un texte", "inputs": '{"ton": "formel"}'})
    run = WorkflowRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:workflows_workflowrun_change", args=[run.pk])
    assert (run.inputs, run.actor_source, run.started_by) == (
        {"ton": "formel", "message": "Un texte"},
        "admin:alice",
        alice,
    )


@pytest.mark.parametrize(
    ("data", "errors"),
    [
        ({"message": "", "inputs": ""}, {"__all__": ["Give a message, JSON inputs, or both."]}),
        ({"message": "  \n ", "inputs": "{}"}, {"__all__": ["Give a message, JSON inputs, or both."]}),
        ({"message": "", "inputs": "[1, 2]"}, {"inputs": ['Give the inputs as a JSON object, e.g. {"message": "…"}.']}),
        (
            {"message": "", "inputs": "{nope"},
            {"inputs": ["Not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2."]},
        ),
    ],
)
def test_bad_run_inputs_are_form_errors(client, alice, pipeline, data, errors) -> None:
    client.force_login(alice)
    response = client.post(change_url(pipeline, "start"), data)
    assert response.status_code == 200
    assert response.context["form"].errors == errors
    assert not WorkflowRun.objects.exists()


def test_a_disabled_workflow_says_so_instead_of_starting(client, alice, pipeline, operator) -> None:
    workflow_update(workflow=pipeline, actor=operator, is_active=False)
    client.force_login(alice)
    response = client.post(change_url(pipeline, "start"), {"message": "x"})
    assert response.context["form"].errors == {"__all__": ["Workflow 'pipeline' is disabled; enable it to run it."]}


def test_viewers_may_not_start_and_strangers_see_nothing(client, vic, charlie, pipeline) -> None:
    client.force_login(vic)
    assert client.get(change_url(pipeline, "start")).status_code == 403
    assert client.post(change_url(pipeline, "start"), {"message": "x"}).status_code == 403
    client.force_login(charlie)
    for view in ("start", "versions"):
        assert client.get(change_url(pipeline, view)).status_code == 404
    assert not WorkflowRun.objects.exists()


HOSTILE_JSON = [
    ('{"version": 1e999}', "1e999 is out of range: numbers must be finite."),
    ('{"version": NaN}', "NaN is not a JSON number: numbers must be finite."),
    ('{"version": -Infinity}', "-Infinity is not a JSON number: numbers must be finite."),
    ("[" * 10_000 + "]" * 10_000, "$: nested deeper than 32 levels."),
    ('{"name": "a\\u0000b"}', "$.name: contains a NUL character (\\u0000), which cannot be stored."),
    ('{"name": "\\udc00"}', "$.name: contains a lone surrogate (\\ud800-\\udfff), which cannot be stored."),
]


@pytest.mark.parametrize(("text", "error"), HOSTILE_JSON)
def test_hostile_json_in_the_editor_and_in_run_inputs_is_a_form_error(client, ada, pipeline, text, error) -> None:
    """Issue 24, item 11: each of these was a 500 in the editor or in "Start a run"."""
    client.force_login(ada)

    edited = post_definition(client, pipeline, text)
    started = client.post(change_url(pipeline, "start"), {"message": "Un texte", "inputs": text})

    assert (edited.status_code, started.status_code) == (200, 200)
    assert edited.context["adminform"].form.errors["definition"] == [error]
    assert started.context["form"].errors == {"inputs": [error]}
    pipeline.refresh_from_db()
    assert (pipeline.version, WorkflowRun.objects.count()) == (1, 0)
