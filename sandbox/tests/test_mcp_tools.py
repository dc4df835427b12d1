"""The sandbox tools' rules, driven by the official MCP client against the in-process
server (the whole lifecycle over stdio and HTTP is in test_lifecycle.py)."""

from __future__ import annotations

import pytest

from agents.models import Agent, Preset
from agents.services import agent_create, preset_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.services import api_key_create
from aihummer.tests.mcp_helpers import call_tool, call_tools, error, ok

pytestmark = pytest.mark.django_db(transaction=True)


def make_key(workspace: Workspace, name: str, scopes: str) -> str:
    return api_key_create(workspace=workspace, name=name, scopes=scopes, owner=None, actor=Actor.for_operator())[1]


@pytest.fixture
def real(workspace: Workspace, ada: User) -> dict:
    actor = Actor.for_user(ada)
    echo = preset_create(
        workspace=workspace, actor=actor, key="echo", name="Echo", provider_name="echo", model="echo-1", is_active=True
    )
    writer = agent_create(
        workspace=workspace, actor=actor, key="writer", name="Writer", snapshot={"system_prompt": "W"}
    )
    return {"preset": echo, "agent": writer}


@pytest.fixture
def write_key(workspace: Workspace) -> str:
    return make_key(workspace, "bot", "read,write")


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
    preset_create(
        workspace=other_workspace,
        actor=Actor.for_operator(),
        key="theirs",
        name="T",
        provider_name="echo",
        model="echo-1",
    )
    base = {"name": "N", "systemPrompt": "P"}
    results = call_tools(
        write_key,
        ("create_sandbox_agent", {**base, "key": "writer"}),
        ("create_sandbox_agent", {**base, "key": "sb_a", "presetKey": "missing"}),
        ("create_sandbox_agent", {**base, "key": "sb_b", "presetKey": "theirs"}),
        ("create_sandbox_agent", {**base, "key": "sb_c", "systemPrompt": ""}),
        ("create_sandbox_agent", {**base, "key": "sb_d", "allowedToolNames": "Not A Tool"}),
    )
    bodies = [error(result) for result in results]

    assert bodies[0]["fields"] == {"key": ["An agent with key 'writer' already exists in workspace 'acme'."]}
    assert bodies[1]["fields"] == {"presetKey": ["Unknown preset 'missing'."]}
    assert bodies[2]["fields"] == {"presetKey": ["Unknown preset 'theirs'."]}
    assert bodies[3]["fields"] == {"systemPrompt": ["String should have at least 1 character"]}
    assert bodies[4]["fields"] == {"allowedToolNames": ["$.allowed_tool_names[0]: must match ^[a-z][a-z0-9_]{0,63}$"]}
    assert not Agent.all_objects.filter(is_sandbox=True).exists()


def test_a_read_only_key_may_not_build_a_sandbox(real: dict, workspace: Workspace) -> None:
    body = error(
        call_tool(
            make_key(workspace, "reader", "read"),
            "create_sandbox_preset",
            key="sb",
            name="N",
            providerName="echo",
            model="echo-1",
        )
    )

    assert "using sandboxes" in body["error"]
    assert not Preset.all_objects.filter(is_sandbox=True).exists()
