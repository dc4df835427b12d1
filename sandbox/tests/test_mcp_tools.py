"""The sandbox tools' rules, driven by the official MCP client against the in-process
server (the whole lifecycle over stdio and HTTP is in test_lifecycle.py)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from mcp import Client

import aihummer
from agents.models import Agent, DebugLog, Preset
from aihummer.actors import Actor
from aihummer.mcp import build_server
from aihummer.models import Workspace
from aihummer.tests.factories import make_echo_preset, make_key
from aihummer.tests.mcp_helpers import call_tool, call_tools, error, ok, with_client
from workflows.models import Workflow, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


KNOWN_TOOLS = (
    "delegate, handoff, http_request, mail_send, post_to_conversation, propose_onboarding_edit, "
    "propose_persona_edit, propose_section_edit, propose_tools_edit, read_conversation"
)


def test_a_sandbox_preset_and_agent_are_created_hidden_and_inactive(real: dict, write_key: str) -> None:
    preset, agent, default_agent = call_tools(
        write_key,
        (
            "create_sandbox_preset",
            {"key": "sb_flash", "name": "Sandbox Flash", "providerName": "echo", "model": "echo-1"},
        ),
        (
            "create_sandbox_agent",
            {
                "key": "sb_lecteur",
                "name": "Lecteur",
                "systemPrompt": "Tu lis.",
                "presetKey": "sb_flash",
                "allowedToolNames": "delegate, ",
            },
        ),
        ("create_sandbox_agent", {"key": "sb_default", "name": "Default", "systemPrompt": "Tu lis."}),
    )

    assert {k: v for k, v in ok(preset).items() if k != "timestamp"} == {
        "status": "success",
        "presetKey": "sb_flash",
        "name": "Sandbox Flash",
        "providerName": "echo",
        "model": "echo-1",
        "temperature": 1.0,
        "topP": 0.95,
        "maxOutputTokens": None,
        "streamingEnabled": False,
        "isActive": False,
    }
    body = ok(agent)
    assert (body["agentKey"], body["agentName"], body["presetUsed"], body["model"]) == (
        "sb_lecteur",
        "Lecteur",
        "Sandbox Flash",
        "echo-1",
    )
    assert (body["allowedToolNames"], body["liveVersion"]) == (["delegate"], 1)
    assert ok(default_agent)["presetKey"] == "echo"
    assert not Preset.objects.filter(key="sb_flash").exists()
    assert not Agent.objects.filter(key__startswith="sb_").exists()
    stored = Agent.all_objects.get(key="sb_lecteur")
    assert (stored.is_sandbox, stored.is_active, stored.is_builtin) == (True, True, False)
    assert stored.live_version.snapshot["system_prompt"] == "Tu lis."
    assert Preset.all_objects.get(key="sb_flash").is_active is False
    real["preset"].refresh_from_db()
    assert real["preset"].is_active is True


def test_sandbox_preset_errors_name_the_parameter(real: dict, write_key: str) -> None:
    base = {"name": "N", "providerName": "echo", "model": "echo-1"}
    results = call_tools(
        write_key,
        ("create_sandbox_preset", {**base, "key": "Bad Key"}),
        ("create_sandbox_preset", {**base, "key": "echo"}),
        ("create_sandbox_preset", {**base, "key": "sb_x", "providerName": "gemini", "model": "gpt-4.1"}),
        ("create_sandbox_preset", {**base, "key": "sb_y", "providerName": "nope"}),
        ("create_sandbox_preset", {**base, "key": "x" * 51}),
    )
    bodies = [error(result) for result in results]

    assert list(bodies[0]["fields"]) == ["key"]
    assert "pattern" in bodies[0]["fields"]["key"][0]
    assert bodies[1]["fields"] == {"key": ["A preset with key 'echo' already exists in workspace 'acme'."]}
    assert bodies[2]["fields"] == {
        "model": [
            "Unknown model 'gpt-4.1' for provider 'gemini'; choose one of: gemini-2.5-flash, gemini-2.5-pro, "
            "gemini-2.5-flash-lite, gemini-2.0-flash."
        ]
    }
    assert bodies[3]["fields"] == {"providerName": ["Value 'nope' is not a valid choice."]}
    assert list(bodies[4]["fields"]) == ["key"]
    assert not Preset.all_objects.filter(is_sandbox=True).exists()


def test_sandbox_agent_errors_name_the_parameter(real: dict, write_key: str, other_workspace: Workspace) -> None:
    make_echo_preset(other_workspace, by=Actor.for_operator(), key="theirs", name="T", is_active=False)
    base = {"name": "N", "systemPrompt": "P"}
    results = call_tools(
        write_key,
        ("create_sandbox_agent", {**base, "key": "writer"}),
        ("create_sandbox_agent", {**base, "key": "sb_a", "presetKey": "missing"}),
        ("create_sandbox_agent", {**base, "key": "sb_b", "presetKey": "theirs"}),
        ("create_sandbox_agent", {**base, "key": "sb_c", "systemPrompt": ""}),
        ("create_sandbox_agent", {**base, "key": "sb_d", "allowedToolNames": "Not A Tool"}),
        ("create_sandbox_agent", {**base, "key": "sb_e", "allowedToolNames": "delegate, rm_rf"}),
    )
    bodies = [error(result) for result in results]

    assert bodies[0]["fields"] == {"key": ["An agent with key 'writer' already exists in workspace 'acme'."]}
    assert bodies[1]["fields"] == {"presetKey": ["Unknown preset 'missing'."]}
    assert bodies[2]["fields"] == {"presetKey": ["Unknown preset 'theirs'."]}
    assert bodies[3]["fields"] == {"systemPrompt": ["String should have at least 1 character"]}
    assert bodies[4]["fields"] == {"allowedToolNames": [f"Unknown tool 'Not A Tool'; the tools are: {KNOWN_TOOLS}."]}
    assert bodies[5]["fields"] == {"allowedToolNames": [f"Unknown tool 'rm_rf'; the tools are: {KNOWN_TOOLS}."]}
    assert not Agent.all_objects.filter(is_sandbox=True).exists()


def test_a_read_only_key_may_not_build_a_sandbox(real: dict, workspace: Workspace) -> None:
    body = error(
        call_tool(
            make_key(workspace, "reader", "read")[1],
            "create_sandbox_preset",
            key="sb",
            name="N",
            providerName="echo",
            model="echo-1",
        )
    )

    assert "using sandboxes" in body["error"]
    assert not Preset.all_objects.filter(is_sandbox=True).exists()


# --- workflows ------------------------------------------------------------------------------
@pytest.fixture
def sandbox_agents(real: dict, write_key: str) -> None:
    for key in ("sb_a", "sb_b"):
        ok(call_tool(write_key, "create_sandbox_agent", key=key, name=key, systemPrompt="P"))


ONE_STEP = json.dumps({"version": 1, "steps": [{"name": "a", "agent_name": "sb_a", "input_mapping": {}}]})


def test_sandbox_workflow_errors_report_every_problem(sandbox_agents: None, write_key: str) -> None:
    broken = {
        "version": 1,
        "steps": [
            {"name": "a", "agent_name": "nobody", "input_mapping": {}},
            {"name": "a", "agent_name": "sb_b", "input_mapping": {"text": "$.steps.zzz.output.answer"}},
        ],
    }
    bad_key, bad_json, several, empty, made, taken = call_tools(
        write_key,
        ("create_sandbox_workflow", {"workflowKey": "Bad Key", "name": "N", "definition": ONE_STEP}),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "N", "definition": "{not json"}),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "N", "definition": json.dumps(broken)}),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "N", "definition": '{"version": 1, "steps": []}'}),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "N", "definition": ONE_STEP}),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "N", "definition": ONE_STEP}),
    )

    assert list(error(bad_key)["fields"]) == ["workflowKey"]
    assert error(bad_json)["fields"] == {
        "definition": ["Not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2."]
    }
    assert error(several)["fields"] == {
        "definition": [
            "steps[1].name: 'a' is already the name of steps[0].",
            "steps[0].agent_name: no agent 'nobody' in this workspace.",
        ]
    }
    assert list(error(empty)["fields"]) == ["definition"]
    assert ok(made)["agents"] == ["sb_a"]
    pk = Workflow.all_objects.get(key="sb_w").pk
    assert error(taken)["fields"] == {
        "workflowKey": [
            f"Key 'sb_w' is taken by sandbox workflow 'sb_w' (id {pk}), left by an automated client. Remove it with "
            "the cleanup_sandbox tool, then retry."
        ]
    }
    assert Workflow.all_objects.filter(is_sandbox=True).count() == 1
    assert not Workflow.objects.exists()


def test_run_workflow_inputs_must_be_a_json_object(sandbox_agents: None, write_key: str) -> None:
    ok(call_tool(write_key, "create_sandbox_workflow", workflowKey="sb_w", name="N", definition=ONE_STEP))
    as_list, as_garbage, unknown, too_long = call_tools(
        write_key,
        ("run_workflow", {"workflowKey": "sb_w", "inputs": "[1, 2]"}),
        ("run_workflow", {"workflowKey": "sb_w", "inputs": "nope"}),
        ("run_workflow", {"workflowKey": "sb_missing"}),
        ("run_workflow", {"workflowKey": "sb_w", "waitSeconds": 10_000}),
    )

    assert error(as_list)["fields"] == {"inputs": ['Give the inputs as a JSON object, e.g. {"message": "…"}.']}
    assert list(error(as_garbage)["fields"]) == ["inputs"]
    assert error(unknown)["error"] == "No workflow 'sb_missing' in workspace 'acme'."
    assert list(error(too_long)["fields"]) == ["waitSeconds"]
    assert not WorkflowRun.all_objects.exists()


def test_update_and_delete_a_workflow(sandbox_agents: None, write_key: str) -> None:
    ok(call_tool(write_key, "create_sandbox_workflow", workflowKey="sb_w", name="N", definition=ONE_STEP))
    two = json.dumps({"version": 1, "steps": [{"name": "b", "agent_name": "sb_b", "input_mapping": {}}]})
    nothing, renamed, redefined, broken, deleted, gone = call_tools(
        write_key,
        ("update_workflow", {"workflowKey": "sb_w"}),
        ("update_workflow", {"workflowKey": "sb_w", "name": "Renamed", "isActive": False}),
        ("update_workflow", {"workflowKey": "sb_w", "definition": two}),
        ("update_workflow", {"workflowKey": "sb_w", "definition": '{"version": 1, "steps": []}'}),
        ("delete_workflow", {"workflowKey": "sb_w"}),
        ("list_workflows", {"includeSandbox": True}),
    )

    assert error(nothing)["error"] == "No fields provided — nothing changed."
    assert ok(renamed)["changed"] == ["name", "isActive"]
    body = ok(redefined)
    assert (body["changed"], body["workflow"]["version"], body["workflow"]["agents"]) == (["definition"], 2, ["sb_b"])
    assert list(error(broken)["fields"]) == ["definition"]
    assert ok(deleted)["deleted"] is True
    assert ok(gone)["workflows"] == []


def test_listing_sandbox_workflows_needs_the_sandbox_right(real: dict, workspace: Workspace) -> None:
    reader = make_key(workspace, "reader", "read")[1]
    listed, with_sandbox = call_tools(reader, ("list_workflows", {}), ("list_workflows", {"includeSandbox": True}))

    assert ok(listed)["workflows"] == []
    assert "using sandboxes" in error(with_sandbox)["error"]


@pytest.mark.parametrize("status", ["running", "waiting"])
def test_cleanup_waits_for_a_running_sandbox_run(sandbox_agents: None, write_key: str, status: str) -> None:
    ok(call_tool(write_key, "create_sandbox_workflow", workflowKey="sb_w", name="N", definition=ONE_STEP))
    ok(call_tool(write_key, "run_workflow", workflowKey="sb_w", message="hi"))
    # As if a worker were on it, or a step waited for a person (issue 30).
    WorkflowRun.all_objects.update(status=status, finished_at=None)

    refused = error(call_tool(write_key, "cleanup_sandbox"))

    assert refused == {
        "status": "error",
        "error": "1 sandbox run(s) of this workspace are still pending, running or waiting: wait for them to finish "
        "(or cancel them), then clean up again.",
        "runningRuns": 1,
    }
    assert Workflow.all_objects.filter(key="sb_w").exists()
    assert Agent.all_objects.filter(key="sb_a").exists()


# --- issue 25, item 6: a sandbox turn's logs stay readable by the client that made them ----
def test_run_agent_test_on_a_sandbox_agent_returns_its_debug_id(sandbox_agents: None, write_key: str) -> None:
    tested = ok(call_tool(write_key, "run_agent_test", agentKey="sb_a", input="hello"))

    log = DebugLog.all_objects.get(turn_id=tested["turnId"])
    assert (tested["debugId"], tested["debugIds"]) == (log.pk, [log.pk])
    inspected = ok(call_tool(write_key, "inspect_agent_debug", debugId=tested["debugId"]))
    assert (inspected["agentKey"], inspected["turnId"]) == ("sb_a", tested["turnId"])


# --- issue 25, item 9: what a seed client meets ------------------------------------------------
def test_the_seeds_nullable_parameters_accept_null(real: dict, write_key: str) -> None:
    preset, agent, workflow = call_tools(
        write_key,
        (
            "create_sandbox_preset",
            {
                "key": "sb_p",
                "name": "P",
                "providerName": "echo",
                "model": "echo-1",
                "temperature": None,
                "topP": None,
                "maxOutputTokens": None,
                "streamingEnabled": None,
            },
        ),
        (
            "create_sandbox_agent",
            {
                "key": "sb_a",
                "name": "A",
                "systemPrompt": "P",
                "description": None,
                "presetKey": None,
                "allowedToolNames": None,
            },
        ),
        ("create_sandbox_workflow", {"workflowKey": "sb_w", "name": "W", "definition": ONE_STEP, "description": None}),
    )

    body = ok(preset)
    assert (body["temperature"], body["topP"], body["maxOutputTokens"], body["streamingEnabled"]) == (
        1.0,
        0.95,
        None,
        False,
    )
    assert ok(agent)["allowedToolNames"] == []
    assert Agent.all_objects.get(key="sb_a").description == ""
    assert ok(workflow)["workflowKey"] == "sb_w"
    assert Workflow.all_objects.get(key="sb_w").description == ""


def test_a_failed_run_is_a_tool_error_with_the_runs_status(real: dict, write_key: str) -> None:
    ok(call_tool(write_key, "create_sandbox_agent", key="sb_a", name="A", systemPrompt="P"))
    ok(call_tool(write_key, "create_sandbox_workflow", workflowKey="sb_w", name="W", definition=ONE_STEP))

    failed = error(call_tool(write_key, "run_workflow", workflowKey="sb_w", message="@error auth"))

    run = WorkflowRun.all_objects.get()
    assert run.status == "failed"
    assert (failed["runStatus"], failed["workflowRunId"], failed["errorMessage"]) == ("failed", str(run.pk), run.error)
    assert failed["error"] == f"The run failed: {run.error} See inspect_workflow_run for each step."


def test_a_key_taken_by_a_sandbox_row_points_an_mcp_client_to_the_tool(real: dict, write_key: str) -> None:
    ok(call_tool(write_key, "create_sandbox_preset", key="sb_p", name="P", providerName="echo", model="echo-1"))

    taken = error(
        call_tool(write_key, "create_sandbox_preset", key="sb_p", name="P", providerName="echo", model="echo-1")
    )

    pk = Preset.all_objects.get(key="sb_p").pk
    assert taken["fields"] == {
        "key": [
            f"Key 'sb_p' is taken by sandbox preset 'sb_p' (id {pk}), left by an automated client. Remove it with "
            "the cleanup_sandbox tool, then retry."
        ]
    }


def test_the_server_names_its_version_and_cleanup_is_idempotent(write_key: str) -> None:
    async def work(client: Client) -> tuple:
        return client.server_info, (await client.list_tools()).tools

    server_info, tools = with_client(Client(build_server(api_key=write_key)), work)

    assert (server_info.name, server_info.version) == ("aihummer", aihummer.__version__)
    pyproject = tomllib.loads((Path(settings.BASE_DIR) / "pyproject.toml").read_text())
    assert aihummer.__version__ == pyproject["project"]["version"]
    hints = {tool.name: tool.annotations for tool in tools}
    assert (hints["cleanup_sandbox"].idempotent_hint, hints["cleanup_sandbox"].destructive_hint) == (True, True)
    assert hints["list_agents"].idempotent_hint is True
    assert hints["run_workflow"].idempotent_hint is False
