"""The agents' MCP tools, driven by the official MCP client against the in-process
server (the transports have their own tests in aihummer/tests/test_mcp.py).

Sync tools run in the SDK's worker threads, each on its own database connection: the
rows these tests create must be committed, hence `transaction=True`.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest
from django.db import connection
from mcp import Client

from agents.mcp import PENDING_MESSAGE, TOOLS
from agents.models import Agent, AgentTurn, DebugLog, Preset, PromptVersion
from agents.runtime.tools import REGISTRY
from agents.selectors import prompt_version_queue
from agents.services import agent_create, prompt_version_approve
from aihummer.actors import Actor
from aihummer.mcp import Caller, build_server
from aihummer.models import ApiKey, User, Workspace
from aihummer.services import api_key_create, api_key_revoke
from aihummer.tests.factories import echo_sp, make_echo_preset, make_key
from aihummer.tests.mcp_helpers import CLIENT_NAME, call_tool, call_tools, error, ok, with_client

pytestmark = pytest.mark.django_db(transaction=True)

OLD_PROMPT = "You are a careful writer."
NEW_PROMPT = "You are a careful writer. Answer in three sentences at most."
READ_TOOLS = {"list_agents", "get_agent", "list_presets", "list_models", "inspect_agent_debug"}
MUTATING_CALLS = [
    ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT}),
    ("run_agent_test", {"agentKey": "writer", "input": "Hello"}),
    ("send_message", {"agentKey": "writer", "message": "Hello"}),
    ("update_agent", {"agentKey": "writer", "name": "Renamed"}),
    ("update_agent", {"agentKey": "writer", "allowedToolNames": "delegate"}),
    ("update_preset", {"key": "echo", "temperature": 0.2}),
    ("delete_agent", {"agentKey": "writer"}),
    ("delete_preset", {"key": "echo", "force": True}),
]


@pytest.fixture
def writer(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="writer",
        name="Writer",
        description="Writes short texts.",
        snapshot={"system_prompt": OLD_PROMPT},
    )


@pytest.fixture
def write_key(workspace: Workspace, alice: User) -> str:
    return make_key(workspace, "ci-bot", "read,write", owner=alice)[1]


@pytest.fixture
def publish_key(workspace: Workspace, ada: User) -> str:
    return make_key(workspace, "maintainer", "read,write,publish", owner=ada)[1]


@pytest.fixture
def read_key(workspace: Workspace) -> str:
    return make_key(workspace, "reader", "read")[1]


# --- the tool list --------------------------------------------------------------------------
def test_every_tool_is_listed_with_a_description_and_a_schema(write_key: str) -> None:
    async def work(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in with_client(Client(build_server(api_key=write_key)), work)}

    assert set(tools) >= {spec.name for spec in TOOLS}  # with the other apps' tools
    assert {spec.name for spec in TOOLS} == {
        "list_agents",
        "get_agent",
        "list_presets",
        "list_models",
        "update_agent_system_prompt",
        "run_agent_test",
        "send_message",
        "handoff_conversation",
        "inspect_agent_debug",
        "update_agent",
        "update_preset",
        "delete_agent",
        "delete_preset",
    }
    for name in {spec.name for spec in TOOLS}:
        listed = tools[name]
        schema = listed.input_schema
        assert len(listed.description) > 40, name
        assert schema["type"] == "object"
        assert "ctx" not in schema["properties"]
        for parameter, property_schema in schema["properties"].items():
            assert parameter[0].islower() and "_" not in parameter, (name, parameter)
            assert property_schema.get("description"), (name, parameter)
        assert listed.annotations.read_only_hint is (name in READ_TOOLS)
    proposal = tools["update_agent_system_prompt"].input_schema
    assert proposal["required"] == ["agentId", "systemPrompt"]
    assert proposal["properties"]["mode"]["default"] == "pending"
    assert proposal["properties"]["agentId"]["pattern"] == "^[a-z0-9_-]+$"
    assert tools["run_agent_test"].input_schema["required"] == ["agentKey", "input"]
    assert tools["delete_agent"].annotations.destructive_hint is True


# --- proposing a system prompt ---------------------------------------------------------------
def test_a_pending_proposal_waits_for_a_person_and_goes_live_once_approved(
    writer: Agent, write_key: str, bob: User
) -> None:
    v1 = writer.live_version
    before, proposed, during = call_tools(
        write_key,
        ("run_agent_test", {"agentKey": "writer", "input": "Hi"}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT, "reason": "Shorter"}),
        ("run_agent_test", {"agentKey": "writer", "input": "Hi"}),
    )

    body = ok(proposed)
    version = PromptVersion.objects.get(pk=body["versionId"])
    assert {k: v for k, v in body.items() if k != "timestamp"} == {
        "status": "success",
        "agentId": "writer",
        "agentName": "Writer",
        "mode": "pending",
        "message": PENDING_MESSAGE,
        "versionId": version.pk,
        "versionNumber": 2,
        "versionStatus": "pending",
        "reason": "Shorter",
        "newSystemPrompt": NEW_PROMPT,
        # In-process (as over stdio) the link is the admin's path; over HTTP it is absolute.
        "reviewUrl": f"/admin/agents/promptversion/{version.pk}/review/",
    }
    # In the reviewers' queue, with its mcp: source; the live agent untouched.
    queued = prompt_version_queue(actor=Actor.for_user(bob)).pending().get()
    assert (queued.pk, queued.source, queued.reason) == (version.pk, f"mcp:ci-bot/{CLIENT_NAME}", "Shorter")
    writer.refresh_from_db()
    assert writer.live_version_id == v1.pk
    assert ok(before)["answer"] == ok(during)["answer"] == f"[echo echo-1] Hi #sp={echo_sp(v1)}"

    prompt_version_approve(version=version, actor=Actor.for_user(bob))
    after = ok(call_tool(write_key, "run_agent_test", agentKey="writer", input="Hi"))

    assert after["answer"] == f"[echo echo-1] Hi #sp={echo_sp(version)}" != ok(before)["answer"]
    assert after["versionNumber"] == 2


def test_get_agent_shows_the_profile_the_rendered_prompt_and_open_proposals(writer: Agent, write_key: str) -> None:
    _, read = call_tools(
        write_key,
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT, "reason": "Shorter"}),
        ("get_agent", {"agentId": "writer"}),
    )

    body = ok(read)
    assert (body["agentId"], body["agentName"]) == ("writer", "Writer")
    assert body["liveVersion"]["number"] == 1
    assert body["profile"]["system_prompt"] == OLD_PROMPT
    assert body["renderedSystemPrompt"].startswith(OLD_PROMPT)
    assert body["agent"]["presetKey"] == "echo" and body["agent"]["usesDefaultPreset"] is True
    [proposal] = body["openProposals"]
    assert proposal["number"] == 2
    assert proposal["source"] == f"mcp:ci-bot/{CLIENT_NAME}"
    assert (proposal["reason"], proposal["baseVersion"], proposal["stale"]) == ("Shorter", 1, False)


def test_get_agent_of_an_agent_whose_version_1_waits_for_review(
    workspace: Workspace, ada: User, echo_preset: Preset, read_key: str
) -> None:
    workspace.every_change_needs_review = True
    workspace.save()
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="fresh", name="Fresh")

    got, listed = call_tools(read_key, ("get_agent", {"agentId": "fresh"}), ("list_agents", {}))

    body = ok(got)
    assert (body["liveVersion"], body["profile"], body["renderedSystemPrompt"]) == (None, None, None)
    assert body["agent"]["liveVersion"] is None
    assert [(p["number"], p["stale"]) for p in body["openProposals"]] == [(1, False)]
    assert [a["liveVersion"] for a in ok(listed)["agents"]] == [None]


def test_a_repeat_or_a_copy_of_live_is_said_plainly(writer: Agent, write_key: str) -> None:
    first, again, same_as_live = call_tools(
        write_key,
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": NEW_PROMPT}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": OLD_PROMPT}),
    )

    assert ok(again)["versionId"] == ok(first)["versionId"]
    assert ok(again)["message"].startswith("Identical to your open proposal v2, pending since ")
    assert error(same_as_live) == {"status": "error", "error": "Identical to live version 1; nothing recorded."}
    assert PromptVersion.objects.filter(agent=writer).count() == 2


def test_live_mode_needs_the_publish_scope(writer: Agent, write_key: str, publish_key: str) -> None:
    refused = call_tool(write_key, "update_agent_system_prompt", agentId="writer", systemPrompt=NEW_PROMPT, mode="live")
    applied = call_tool(
        publish_key, "update_agent_system_prompt", agentId="writer", systemPrompt=NEW_PROMPT, mode="live"
    )

    assert error(refused)["error"] == (
        "API key 'ci-bot' lacks the 'publish' scope needed for publishing changes directly."
    )
    body = ok(applied)
    assert (body["mode"], body["versionStatus"], body["versionNumber"]) == ("live", "approved", 2)
    assert body["message"] == "Applied live as version 2: the agent runs with this prompt from now on."
    writer.refresh_from_db()
    assert writer.live_version.source == f"mcp:maintainer/{CLIENT_NAME}"
    assert writer.system_prompt == NEW_PROMPT


def test_an_unknown_mode_is_refused_and_records_nothing(writer: Agent, publish_key: str) -> None:
    result = call_tool(publish_key, "update_agent_system_prompt", agentId="writer", systemPrompt="x", mode="draft")

    assert error(result) == {"status": "error", "error": 'Invalid mode "draft". Expected "pending" or "live".'}
    assert PromptVersion.objects.filter(agent=writer).count() == 1


def test_proposal_validation_errors(writer: Agent, write_key: str) -> None:
    missing, bad_key, unknown, blank, extra = call_tools(
        write_key,
        ("update_agent_system_prompt", {"agentId": "writer"}),
        ("update_agent_system_prompt", {"agentId": "Writer!", "systemPrompt": "x"}),
        ("update_agent_system_prompt", {"agentId": "ghost", "systemPrompt": "x"}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": "   "}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": "x", "agent": "writer"}),
    )

    assert error(missing) == {
        "status": "error",
        "error": "systemPrompt: Field required",
        "fields": {"systemPrompt": ["Field required"]},
    }
    assert error(bad_key)["error"] == "agentId: String should match pattern '^[a-z0-9_-]+$'"
    assert error(unknown)["error"] == "Unknown agent 'ghost'."
    assert error(blank)["error"] == "systemPrompt: $.system_prompt: must not be blank (use null for no override)"
    assert error(extra)["error"] == (
        "Unknown parameter 'agent' for update_agent_system_prompt. It takes: agentId, mode, reason, systemPrompt."
    )
    assert PromptVersion.objects.filter(agent=writer).count() == 1


# --- reading -------------------------------------------------------------------------------------
def test_lists_of_agents_presets_and_models(
    writer: Agent, workspace: Workspace, ada: User, write_key: str, read_key: str
) -> None:
    sandbox_preset = make_echo_preset(workspace, by=ada, key="sb", is_sandbox=True)
    agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="sb_agent",
        name="Sb",
        preset=sandbox_preset,
        is_sandbox=True,
    )
    agents, all_agents, presets, all_presets, models, bad_filter = call_tools(
        write_key,
        ("list_agents", {}),
        ("list_agents", {"includeSandbox": True}),
        ("list_presets", {}),
        ("list_presets", {"includeSandbox": True}),
        ("list_models", {"providerFilter": "echo"}),
        ("list_models", {"providerFilter": "echo, mistral"}),
    )

    body = ok(agents)
    assert body["count"] == 1
    assert body["agents"] == [
        {
            "key": "writer",
            "name": "Writer",
            "description": "Writes short texts.",
            "presetKey": "echo",
            "usesDefaultPreset": True,
            "providerName": "echo",
            "model": "echo-1",
            "allowedToolNames": [],
            "isActive": True,
            "isBuiltin": False,
            "isSandbox": False,
            "liveVersion": 1,
        }
    ]
    assert [a["key"] for a in ok(all_agents)["agents"]] == ["sb_agent", "writer"]
    assert ok(presets)["presets"] == [
        {
            "key": "echo",
            "name": "Echo",
            "providerName": "echo",
            "model": "echo-1",
            "baseUrl": None,
            "isActive": True,
            "isSandbox": False,
            "temperature": 1.0,
            "topP": 0.95,
            "maxOutputTokens": None,
            "timeoutSeconds": 60,
            "streamingEnabled": False,
            "credentialSet": False,
        }
    ]
    assert [p["key"] for p in ok(all_presets)["presets"]] == ["echo", "sb"]
    listed = ok(models)
    assert listed["count"] == len(listed["models"]) >= 1
    assert {m["provider"] for m in listed["models"]} == {"echo"}
    assert set(listed["models"][0]) == {"provider", "id", "label", "pricing", "capabilities", "limits"}
    assert error(bad_filter)["error"] == (
        "providerFilter: Unknown provider 'mistral'; use openai, anthropic, gemini, echo."
    )
    # Sandbox rows are for the clients that may use sandboxes (the write scope).
    hidden, named = call_tools(
        read_key, ("list_agents", {"includeSandbox": True}), ("get_agent", {"agentId": "sb_agent"})
    )
    assert error(hidden)["error"] == "API key 'reader' lacks the 'write' scope needed for using sandboxes."
    assert error(named)["error"] == "Unknown agent 'sb_agent'."


def test_list_agents_costs_the_same_queries_for_one_agent_or_many(
    writer: Agent, workspace: Workspace, ada: User, django_assert_num_queries
) -> None:
    api_key = ApiKey.objects.create(workspace=workspace, name="k", scopes="read", secret_digest="-")
    caller = Caller(actor=Actor.for_api_key(api_key, surface="mcp"), workspace=workspace)
    list_agents = next(spec for spec in TOOLS if spec.name == "list_agents")
    for index in range(5):
        agent_create(workspace=workspace, actor=Actor.for_user(ada), key=f"a{index}", name=f"A{index}")

    with django_assert_num_queries(2):  # the agents with preset and live version; the default preset
        body = list_agents.fn(caller)

    assert body["count"] == 6


def test_run_agent_test_and_inspect_agent_debug(writer: Agent, write_key: str) -> None:
    secret = "sk-" + "A" * 30
    ran = ok(call_tool(write_key, "run_agent_test", agentKey="writer", input=f"Remember {secret}"))
    turn = AgentTurn.objects.get(pk=ran["turnId"])
    log = DebugLog.objects.get(turn=turn)

    assert ran["debugId"] == log.pk and ran["debugIds"] == [log.pk]
    assert (ran["agentKey"], ran["agentName"], ran["model"]) == ("writer", "Writer", "echo-1")
    assert ran["answer"] == turn.answer and "[redacted]" in ran["answer"] and secret not in ran["answer"]
    assert ran["usage"] == {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    assert turn.dry_run is True
    assert turn.actor_source == f"mcp:ci-bot/{CLIENT_NAME}"

    body = ok(call_tool(write_key, "inspect_agent_debug", debugId=log.pk))
    assert body["systemPrompt"].startswith(OLD_PROMPT)
    assert body["messages"][-1] == {"role": "user", "content": "Remember [redacted]"}
    assert (body["turnId"], body["sequence"], body["model"], body["providerName"]) == (turn.pk, 1, "echo-1", "echo")
    assert body["usage"]["total_tokens"] == ran["usage"]["total_tokens"]
    assert set(body) >= {"parameters", "response", "latencyMs", "toolExecutions", "finishReason"}
    assert secret not in str(body)


def test_a_failed_turn_is_an_error_with_its_debug_id(writer: Agent, write_key: str) -> None:
    body = error(call_tool(write_key, "run_agent_test", agentKey="writer", input="@error auth"))

    turn = AgentTurn.objects.get()
    assert body["error"] == f"The turn failed: {turn.error}"
    assert (body["turnId"], body["debugId"]) == (turn.pk, DebugLog.objects.get(turn=turn).pk)


def test_reading_tools_validation_errors(writer: Agent, read_key: str) -> None:
    results = call_tools(
        read_key,
        ("get_agent", {}),
        ("get_agent", {"agentId": "ghost"}),
        ("list_agents", {"includeSandbox": "maybe"}),
        ("inspect_agent_debug", {"debugId": 0}),
        ("inspect_agent_debug", {"debugId": 999999}),
        ("run_agent_test", {"agentKey": "writer", "input": ""}),
        ("list_presets", {"includeSandbox": 3}),
        ("list_models", {"providerFilter": 7}),
        ("delete_preset", {}),
        ("delete_agent", {"agentKey": "writer", "force": "please"}),
        ("no_such_tool", {}),
    )

    assert [error(result)["error"] for result in results] == [
        "agentId: Field required",
        "Unknown agent 'ghost'.",
        "includeSandbox: Input should be a valid boolean, unable to interpret input",
        "debugId: Input should be greater than or equal to 1",
        "Unknown debug log 999999.",
        "input: String should have at least 1 character",
        "includeSandbox: Input should be a valid boolean, unable to interpret input",
        "providerFilter: Input should be a valid string",
        "key: Field required",
        "force: Input should be a valid boolean, unable to interpret input",
        "Unknown tool 'no_such_tool'. Known tools: cleanup_sandbox, create_sandbox_agent, create_sandbox_preset, "
        "create_sandbox_workflow, delete_agent, delete_preset, delete_workflow, get_agent, handoff_conversation, "
        "inspect_agent_debug, inspect_workflow_run, list_agents, list_models, list_presets, list_workflows, "
        "run_agent_test, run_workflow, send_message, update_agent, update_agent_system_prompt, update_preset, "
        "update_workflow.",
    ]


# --- maintaining -------------------------------------------------------------------------------------
def test_update_agent_applies_plain_fields_and_queues_the_tools(
    writer: Agent, workspace: Workspace, ada: User, publish_key: str
) -> None:
    make_echo_preset(workspace, by=ada, key="slow", is_active=False)
    result = call_tool(
        publish_key,
        "update_agent",
        agentKey="writer",
        name="Writer II",
        modelPresetKey="slow",
        allowedToolNames="delegate, propose_section_edit",
        isActive=True,
    )

    body = ok(result)
    version = PromptVersion.objects.get(agent=writer, status="pending")
    assert body["changed"] == ["name", "allowedToolNames", "modelPresetKey"]
    assert body["message"] == (
        "Saved: name. The change to allowedToolNames, modelPresetKey waits for review as version 2 (pending): "
        "it will NOT affect the live agent until an admin approves it."
    )
    assert body["versionId"] == version.pk
    assert (version.snapshot["allowed_tool_names"], version.snapshot["preset"]) == (
        ["delegate", "propose_section_edit"],
        "slow",
    )
    # Another preset is another model: a power change, and the agent runs on the old one meanwhile.
    assert ("power", "preset changed: the workspace's default → slow (another model answers)") in [
        (reason["tier"], reason["line"]) for reason in version.tier_reasons
    ]
    assert (body["agent"]["name"], body["agent"]["usesDefaultPreset"], body["agent"]["allowedToolNames"]) == (
        "Writer II",
        True,
        [],
    )


def test_update_agent_errors(writer: Agent, write_key: str, publish_key: str) -> None:
    nothing, unknown_preset, unpublished, half, unknown_tool = call_tools(
        publish_key,
        ("update_agent", {"agentKey": "writer"}),
        ("update_agent", {"agentKey": "writer", "modelPresetKey": "ghost", "name": "New"}),
        ("update_agent", {"agentKey": "writer", "name": ""}),
        ("update_agent", {"agentKey": "writer", "name": "New", "allowedToolNames": "delegate, Bad Tool!"}),
        ("update_agent", {"agentKey": "writer", "allowedToolNames": "delegate, rm_rf"}),
    )
    by_writer = call_tool(write_key, "update_agent", agentKey="writer", description="New")

    assert error(nothing) == {"status": "error", "error": "No fields provided — nothing changed."}
    assert error(unknown_preset)["error"] == "modelPresetKey: Unknown preset 'ghost'."
    assert error(unpublished)["error"] == "name: String should have at least 1 character"
    # Both or neither: the refused tools keep the name as it was.
    tools = ", ".join(sorted(REGISTRY))
    assert error(half)["error"] == f"allowedToolNames: Unknown tool 'Bad Tool!'; the tools are: {tools}."
    # Issue 24, item 18: REST refused a tool the runtime lacks, MCP put it in a proposal.
    assert error(unknown_tool)["error"] == f"allowedToolNames: Unknown tool 'rm_rf'; the tools are: {tools}."
    assert not writer.versions.filter(status="pending").exists()
    assert error(by_writer)["error"] == (
        "API key 'ci-bot' lacks the 'publish' scope needed for publishing changes directly."
    )
    writer.refresh_from_db()
    assert (writer.name, writer.description) == ("Writer", "Writes short texts.")


def test_update_preset_changes_settings_and_the_default(
    echo_preset: Preset, workspace: Workspace, ada: User, publish_key: str
) -> None:
    make_echo_preset(workspace, by=ada, key="slow", is_active=False)
    changed, activated, same = call_tools(
        publish_key,
        ("update_preset", {"key": "slow", "temperature": 0.2, "topP": 0.5, "maxOutputTokens": 500}),
        ("update_preset", {"key": "slow", "isActive": True}),
        ("update_preset", {"key": "slow", "temperature": 0.2}),
    )

    assert ok(changed)["changed"] == ["temperature", "topP", "maxOutputTokens"]
    assert ok(changed)["preset"]["maxOutputTokens"] == 500
    assert ok(activated)["changed"] == ["isActive"] and ok(activated)["preset"]["isActive"] is True
    assert ok(same) | {"timestamp": None} == ok(same) | {"changed": [], "timestamp": None}
    assert ok(same)["message"] == "Nothing changed: the values given are the current ones."
    echo_preset.refresh_from_db()
    assert echo_preset.is_active is False


def test_update_preset_errors(echo_preset: Preset, publish_key: str) -> None:
    results = call_tools(
        publish_key,
        ("update_preset", {"key": "echo"}),
        ("update_preset", {"key": "echo", "model": "gpt-5", "providerName": "openai"}),
        ("update_preset", {"key": "echo", "temperature": 3}),
        ("update_preset", {"key": "echo", "isActive": False}),
        ("update_preset", {"key": "ghost", "name": "x"}),
    )

    assert [error(result)["error"] for result in results] == [
        "No fields provided — nothing changed.",
        "Unknown parameter 'model', 'providerName' for update_preset. A preset's provider and model cannot change: "
        "create a new preset instead. It takes: isActive, key, maxOutputTokens, name, streamingEnabled, temperature, "
        "topP.",
        "temperature: Input should be less than or equal to 2",
        "isActive: The default preset stays the default until another preset is made the default.",
        "Unknown preset 'ghost'.",
    ]
    echo_preset.refresh_from_db()
    assert (echo_preset.temperature, echo_preset.is_active) == (1.0, True)


def test_delete_agent_and_preset(writer: Agent, workspace: Workspace, ada: User, publish_key: str) -> None:
    builtin = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="core", name="Core", is_builtin=True)
    preset = make_echo_preset(workspace, by=ada, key="slow", is_active=False)
    Agent.objects.filter(pk=writer.pk).update(preset=preset)
    refused_builtin, used, forced, deleted, again = call_tools(
        publish_key,
        ("delete_agent", {"agentKey": "core"}),
        ("delete_preset", {"key": "slow"}),
        ("delete_preset", {"key": "slow", "force": True}),
        ("delete_agent", {"agentKey": "writer"}),
        ("delete_agent", {"agentKey": "writer"}),
    )

    assert error(refused_builtin)["error"] == "Agent 'core' is built in and cannot be deleted; disable it instead."
    assert error(used) == {
        "status": "error",
        "error": "Preset 'slow' is in use: agent 'writer'. Delete with force to detach them.",
        "dependents": ["agent 'writer'"],
    }
    assert ok(forced)["detached"] == ["agent 'writer'"]
    assert ok(deleted)["deleted"] is True
    assert error(again)["error"] == "Unknown agent 'writer'."
    assert list(Agent.objects.values_list("key", flat=True)) == [builtin.key]


# --- who may do what -----------------------------------------------------------------------------------
def test_a_key_without_write_is_refused_by_every_mutating_tool(writer: Agent, read_key: str) -> None:
    results = call_tools(read_key, *MUTATING_CALLS)

    messages = [error(result)["error"] for result in results]
    assert messages == [
        "API key 'reader' lacks the 'write' scope needed for proposing changes.",
        "API key 'reader' lacks the 'write' scope needed for running agents and workflows.",
        "API key 'reader' lacks the 'write' scope needed for running agents and workflows.",
        "API key 'reader' lacks the 'publish' scope needed for publishing changes directly.",
        "API key 'reader' lacks the 'write' scope needed for proposing changes.",
        "API key 'reader' lacks the 'publish' scope needed for publishing changes directly.",
        "API key 'reader' lacks the 'publish' scope needed for publishing changes directly.",
        "API key 'reader' lacks the 'publish' scope needed for publishing changes directly.",
    ]
    assert PromptVersion.objects.count() == 1
    assert AgentTurn.objects.count() == 0
    assert Agent.objects.get().name == "Writer"
    assert Preset.objects.get().temperature == 1.0


def test_another_workspaces_key_sees_nothing_of_this_one(
    writer: Agent, other_workspace: Workspace, charlie: User, write_key: str
) -> None:
    log_id = ok(call_tool(write_key, "run_agent_test", agentKey="writer", input="Hi"))["debugId"]
    globex_key = make_key(other_workspace, "globex-bot", "read,write,publish", owner=charlie)[1]

    results = call_tools(
        globex_key,
        ("list_agents", {"includeSandbox": True}),
        ("list_presets", {"includeSandbox": True}),
        ("get_agent", {"agentId": "writer"}),
        ("inspect_agent_debug", {"debugId": log_id}),
        *MUTATING_CALLS,
    )

    assert ok(results[0])["count"] == ok(results[1])["count"] == 0
    assert [error(result)["error"] for result in results[2:]] == [
        "Unknown agent 'writer'.",
        f"Unknown debug log {log_id}.",
        "Unknown agent 'writer'.",
        "Unknown agent 'writer'.",
        "Unknown agent 'writer'.",
        "Unknown agent 'writer'.",
        "Unknown agent 'writer'.",
        "Unknown preset 'echo'.",
        "Unknown agent 'writer'.",
        "Unknown preset 'echo'.",
    ]


def test_a_key_revoked_mid_session_stops_working_at_once(writer: Agent, workspace: Workspace, alice: User) -> None:
    api_key, raw_key = api_key_create(
        workspace=workspace, name="short-lived", scopes="read", actor=Actor.for_operator()
    )

    def revoke() -> None:
        try:
            api_key_revoke(api_key=api_key, actor=Actor.for_operator())
        finally:
            connection.close()  # this thread's own connection

    async def work(client: Client) -> tuple:
        before = await client.call_tool("list_agents", {})
        await anyio.to_thread.run_sync(revoke)
        return before, await client.call_tool("list_agents", {})

    before, after = with_client(Client(build_server(api_key=raw_key)), work)

    assert ok(before)["count"] == 1
    assert error(after)["error"] == (
        "The API key is missing, unknown or revoked: ask a workspace admin for a live key."
    )


def test_inspect_agent_debug_puts_a_later_calls_conversation_back_together(
    workspace: Workspace, ada: User, echo_preset: Preset, write_key: str
) -> None:
    agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="tooled",
        name="Tooled",
        snapshot={"system_prompt": OLD_PROMPT, "allowed_tool_names": ["propose_persona_edit"]},
    )
    script = '@call propose_persona_edit {"persona": "Warm.", "reason": "Users asked."}'
    ran = ok(call_tool(write_key, "run_agent_test", agentKey="tooled", input=script))
    first_id, second_id = ran["debugIds"]

    first, second = (
        ok(result)
        for result in call_tools(
            write_key, ("inspect_agent_debug", {"debugId": first_id}), ("inspect_agent_debug", {"debugId": second_id})
        )
    )

    assert ran["debugId"] == second_id
    assert second["systemPrompt"] == first["systemPrompt"] != ""
    assert second["toolsOffered"] == first["toolsOffered"] == ["propose_persona_edit"]
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert [execution["name"] for execution in first["toolExecutions"]] == ["propose_persona_edit"]


# --- conversations -----------------------------------------------------------------------------
def test_send_message_holds_a_conversation_with_its_history(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, openai_server
) -> None:
    from agents.models import Conversation, ConversationMessage

    snapshot = {"identity": {"name": "Talker"}, "runtime_policy": {"session": {"scope": "per-channel-peer"}}}
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="talker", name="Talker", snapshot=snapshot)
    key = make_key(workspace, "chat-bot", "read,write", owner=alice)[1]

    first, second, elsewhere, bad = call_tools(
        key,
        ("send_message", {"agentKey": "talker", "message": "hello"}),
        ("send_message", {"agentKey": "talker", "message": "again"}),
        ("send_message", {"agentKey": "talker", "message": "hi", "channel": "ide"}),
        ("send_message", {"agentKey": "talker", "message": "hi", "channel": "Not A Channel"}),
    )

    assert ok(first)["answer"] == "answer: hello"
    assert ok(second)["conversationId"] == ok(first)["conversationId"]
    assert ok(second)["messageCount"] == 4
    assert ok(second)["versionNumber"] == 1
    assert ok(elsewhere)["conversationId"] != ok(first)["conversationId"]
    assert error(bad)["status"] == "error"
    assert [(m["role"], m["content"]) for m in openai_server.bodies[1]["messages"] if m["role"] != "system"] == [
        ("user", "hello"),
        ("assistant", "answer: hello"),
        ("user", "again"),
    ]
    assert set(Conversation.objects.values_list("peer", flat=True)) == {f"user:{alice.pk}"}
    assert sorted(set(ConversationMessage.objects.values_list("channel", flat=True))) == ["ide", "mcp"]
    assert len(openai_server.bodies) == 3
