"""Every tool's answer against the `outputSchema` it publishes (issue 31), through the
official client over both transports: a loop over `tools/list` calls each tool once
with arguments that succeed, and validates its `structuredContent` against its schema
(the client validates too, and raises on a mismatch), its text against the same JSON.

Also: `serverInfo.version`, the annotations, and the review link a proposal answers with.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Implementation, Tool

from agents.services import agent_create
from aihummer import __version__
from aihummer.actors import Actor
from aihummer.mcp import build_server
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_echo_preset, make_key
from aihummer.tests.mcp_helpers import http_client, live_uvicorn, server_env, with_client

pytestmark = pytest.mark.django_db(transaction=True)

DEFINITION = {
    "version": 1,
    "steps": [{"name": "lecture", "agent_name": "sb_reader", "input_mapping": {}, "output_key": "summary"}],
}
Results = dict[str, CallToolResult]
# Each tool once, in an order where every call succeeds: (tool, arguments from the answers so far).
CALLS: list[tuple[str, Callable[[Results], dict[str, Any]]]] = [
    ("list_agents", lambda _: {}),
    ("get_agent", lambda _: {"agentId": "writer"}),
    ("list_presets", lambda _: {}),
    ("list_models", lambda _: {"providerFilter": "echo,openai"}),
    ("update_agent_system_prompt", lambda _: {"agentId": "writer", "systemPrompt": "Court.", "reason": "Bref"}),
    ("run_agent_test", lambda _: {"agentKey": "writer", "input": "Bonjour"}),
    ("inspect_agent_debug", lambda r: {"debugId": r["run_agent_test"].structured_content["debugId"]}),
    ("send_message", lambda _: {"agentKey": "writer", "message": "Salut"}),
    (
        "handoff_conversation",
        lambda r: {"conversationId": r["send_message"].structured_content["conversationId"], "agentKey": "spare"},
    ),
    ("update_agent", lambda _: {"agentKey": "writer", "description": "Écrit", "allowedToolNames": ""}),
    ("update_preset", lambda _: {"key": "spare", "temperature": 0.5}),
    ("create_sandbox_preset", lambda _: {"key": "sb_echo", "name": "SB", "providerName": "echo", "model": "echo-1"}),
    (
        "create_sandbox_agent",
        lambda _: {"key": "sb_reader", "name": "Lecteur", "systemPrompt": "Lis.", "presetKey": "sb_echo"},
    ),
    (
        "create_sandbox_workflow",
        lambda _: {"workflowKey": "sb_flow", "name": "Flow", "definition": json.dumps(DEFINITION)},
    ),
    ("list_workflows", lambda _: {"includeSandbox": True}),
    ("update_workflow", lambda _: {"workflowKey": "sb_flow", "description": "Une étape"}),
    ("run_workflow", lambda _: {"workflowKey": "sb_flow", "message": "Texte", "waitSeconds": 30}),
    ("inspect_workflow_run", lambda r: {"workflowRunId": r["run_workflow"].structured_content["workflowRunId"]}),
    ("delete_workflow", lambda _: {"workflowKey": "sb_flow"}),
    ("cleanup_sandbox", lambda _: {}),
    ("delete_agent", lambda _: {"agentKey": "spare"}),
    ("delete_preset", lambda _: {"key": "spare"}),
]


@pytest.fixture
def raw_key(workspace: Workspace, ada: User, alice: User) -> str:
    make_echo_preset(workspace, by=ada)
    make_echo_preset(workspace, by=ada, key="spare")
    for key in ("writer", "spare"):
        agent_create(
            workspace=workspace,
            actor=Actor.for_user(ada),
            key=key,
            name=key.title(),
            snapshot={"system_prompt": "Sois"},
        )
    return make_key(workspace, "schema-bot", "read,write,publish", owner=alice)[1]


@pytest.fixture
def http_url(raw_key: str) -> Iterator[str]:
    with live_uvicorn(server_env()) as url:
        yield url


def call_every_tool(client: Client) -> tuple[str, list[Tool], Results, CallToolResult]:
    async def work(client: Client) -> tuple[str, list[Tool], Results, CallToolResult]:
        tools = (await client.list_tools()).tools
        results: Results = {}
        for name, arguments in CALLS:
            results[name] = await client.call_tool(name, arguments(results))
        version = client.server_info.version
        return version, tools, results, await client.call_tool("cleanup_sandbox", {})

    return with_client(client, work)


def assert_every_answer_matches_its_schema(tools: list[Tool], results: Results) -> None:
    assert sorted(tool.name for tool in tools) == sorted(results), "every listed tool is called once"
    for tool in tools:
        result = results[tool.name]
        assert not result.is_error, (tool.name, result.structured_content)
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object", tool.name
        assert schema["additionalProperties"] is False, tool.name
        Draft202012Validator.check_schema(schema)
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(result.structured_content)]
        assert errors == [], tool.name
        [text] = result.content
        assert json.loads(text.text) == result.structured_content, tool.name
        assert set(schema["required"]) >= {"status", "timestamp"}, tool.name


def test_over_stdio_every_tool_answers_as_its_output_schema_says(raw_key: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=str(settings.BASE_DIR),
        env=server_env(AIHUMMER_API_KEY=raw_key),
    )
    version, tools, results, again = call_every_tool(
        Client(params, client_info=Implementation(name="schema-test", version="1"))
    )

    assert version == __version__ != ""
    assert_every_answer_matches_its_schema(tools, results)
    proposed = results["update_agent_system_prompt"].structured_content
    assert proposed["reviewUrl"] == f"/admin/agents/promptversion/{proposed['versionId']}/review/"
    # Idempotent: the second cleanup finds nothing.
    assert results["cleanup_sandbox"].structured_content["agentsDeleted"] == 1
    assert {k: v for k, v in again.structured_content.items() if k.endswith("Deleted")} == {
        "workflowRunsDeleted": 0,
        "workflowsDeleted": 0,
        "agentsDeleted": 0,
        "presetsDeleted": 0,
    }


def test_over_stdio_a_review_link_is_absolute_under_the_public_url(raw_key: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=str(settings.BASE_DIR),
        env=server_env(AIHUMMER_API_KEY=raw_key, AIHUMMER_PUBLIC_URL="https://aihummer.example.com/desk/"),
    )
    arguments = {"agentId": "writer", "systemPrompt": "Court.", "reason": "Bref"}

    proposed = with_client(
        Client(params, client_info=Implementation(name="link-test", version="1")),
        lambda client: client.call_tool("update_agent_system_prompt", arguments),
    ).structured_content

    review = f"https://aihummer.example.com/desk/admin/agents/promptversion/{proposed['versionId']}/review/"
    assert proposed["reviewUrl"] == review


def test_over_http_every_tool_answers_as_its_output_schema_says_with_absolute_review_links(
    http_url: str, raw_key: str
) -> None:
    version, tools, results, _ = call_every_tool(http_client(http_url, raw_key))

    assert version == __version__
    assert_every_answer_matches_its_schema(tools, results)
    proposed = results["update_agent_system_prompt"].structured_content
    assert proposed["reviewUrl"] == f"{http_url}/admin/agents/promptversion/{proposed['versionId']}/review/"


def test_annotations_say_what_each_tool_does(raw_key: str) -> None:
    tools = with_client(Client(build_server(api_key=raw_key)), lambda client: client.list_tools()).tools
    hints = {
        tool.name: (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
        )
        for tool in tools
    }
    read_only = {name for name, (ro, _, _) in hints.items() if ro}
    assert read_only == {
        "list_agents",
        "get_agent",
        "list_presets",
        "list_models",
        "inspect_agent_debug",
        "list_workflows",
        "inspect_workflow_run",
    }
    assert all(hints[name] == (True, False, True) for name in read_only)
    assert hints["cleanup_sandbox"] == (False, True, True)
    assert {name for name, (_, destructive, _) in hints.items() if destructive} == {
        "cleanup_sandbox",
        "delete_agent",
        "delete_preset",
        "delete_workflow",
    }
    assert hints["run_workflow"] == hints["update_agent_system_prompt"] == (False, False, False)
