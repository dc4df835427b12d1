"""Issue 24, items 10 and 13: every MCP tool, found through `tools/list` with the official
client (a new tool is probed without editing this file), gets hostile text in each of
its string parameters in turn — NUL, a lone surrogate, `NaN`, `Infinity`, `1e999`,
10 000-deep nesting, and strings that look like JSON — and answers with a result a
model can act on: never "Internal error", a JSON-looking string taken as the string it
is, text the database cannot store refused on the parameter that carries it."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp.types import Implementation

from agents.models import Agent, PromptVersion
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.mcp import build_server
from aihummer.services import api_key_create
from aihummer.tests.factories import make_echo_preset
from aihummer.tests.mcp_helpers import CLIENT_NAME, call_tools, ok, with_client
from workflows.models import WorkflowRun
from workflows.services import workflow_create, workflow_run_start

pytestmark = pytest.mark.django_db(transaction=True)

UNSTORABLE = ["a\x00b", "\ud800"]
JSON_LOOKING = ['{"x": 1}', "null", "[1, 2]", "true", "NaN", "Infinity", "1e999", "42"]
DEEP = "[" * 10_000 + "]" * 10_000
HOSTILE = [*UNSTORABLE, *JSON_LOOKING, DEEP]
ONE_STEP = json.dumps({"version": 1, "steps": [{"name": "w", "agent_name": "writer", "input_mapping": {}}]})
# A valid value for each required parameter, so the hostile one is what the tool meets.
VALID = {
    "agentId": "writer",
    "agentKey": "writer",
    "systemPrompt": "Tu écris.",
    "input": "Bonjour",
    "message": "Bonjour",
    "key": "echo",
    "name": "N",
    "providerName": "echo",
    "model": "echo-1",
    "workflowKey": "flow",
    "definition": ONE_STEP,
    "conversationId": 1,
}
VALID_FOR = {
    "create_sandbox_preset": {"key": "sb_p"},
    "create_sandbox_agent": {"key": "sb_a"},
    "create_sandbox_workflow": {"workflowKey": "sb_w"},
}
# Parameters whose value is JSON (parsed by the tool) or a key (a pattern): for them a
# JSON-looking string may rightly be refused, but still as a field error.
STRUCTURED = {"definition", "inputs", "agentId", "agentKey", "key", "workflowKey", "presetKey", "modelPresetKey"}


@pytest.fixture
def world(workspace, ada):
    actor = Actor.for_user(ada)
    make_echo_preset(workspace, by=actor)
    agent_create(workspace=workspace, actor=actor, key="writer", name="Writer", snapshot={"system_prompt": "W"})
    flow = workflow_create(workspace=workspace, actor=actor, key="flow", name="Flow", definition=json.loads(ONE_STEP))
    run = workflow_run_start(workflow=flow, actor=actor, message="hello")
    _, raw = api_key_create(workspace=workspace, name="bot", scopes="read,write,publish", actor=actor)
    return {"key": raw, "run": run}


def string_parameters(schema: dict) -> list[str]:
    def is_string(prop: dict) -> bool:
        return prop.get("type") == "string" or any(option.get("type") == "string" for option in prop.get("anyOf", []))

    return [name for name, prop in schema.get("properties", {}).items() if is_string(prop)]


def listed_tools(raw_key: str) -> list:
    async def work(client: Client) -> list:
        return (await client.list_tools()).tools

    client = Client(build_server(api_key=raw_key), client_info=Implementation(name=CLIENT_NAME, version="1"))
    return with_client(client, work)


def test_every_string_parameter_of_every_tool_survives_hostile_text(world):
    tools = listed_tools(world["key"])
    cases = []
    for listed in tools:
        required = listed.input_schema.get("required", [])
        valid = {**VALID, "workflowRunId": str(world["run"].pk), **VALID_FOR.get(listed.name, {})}
        base = {name: valid[name] for name in required if name != "debugId"} | (
            {"debugId": 1} if "debugId" in required else {}
        )
        for parameter in string_parameters(listed.input_schema):
            for value in HOSTILE:
                cases.append((listed.name, parameter, value, {**base, parameter: value}))
    assert len({name for name, *_ in cases}) >= 15  # every tool with a string parameter

    results = []
    for tool in dict.fromkeys(name for name, *_ in cases):  # one session per tool: each within the time bound
        results += call_tools(world["key"], *[(name, arguments) for name, _, _, arguments in cases if name == tool])

    problems = []
    for (name, parameter, value, _), result in zip(cases, results, strict=True):
        body = result.structured_content
        shown = repr(value[:12])
        if "Internal error" in body.get("error", ""):
            problems.append(f"{name}({parameter}={shown}): {body['error']}")
        elif value in UNSTORABLE and not (result.is_error and parameter in body.get("fields", {})):
            problems.append(f"{name}({parameter}={shown}) was not refused on {parameter}: {body}")
        elif value in JSON_LOOKING and parameter not in STRUCTURED:
            messages = " ".join(body.get("fields", {}).get(parameter, []))
            if "valid string" in messages or "Input should be" in messages:
                problems.append(f"{name}({parameter}={shown}) was decoded as JSON: {messages}")
    assert not problems, "\n".join(problems)


def test_json_looking_strings_are_kept_as_the_strings_they_are(world):
    """`message='null'` was dropped, `description='null'` said "No fields provided",
    `reason='null'` was stored empty and `input='{"x": 1}'` was refused."""
    described, proposed, tested, ran = call_tools(
        world["key"],
        ("update_agent", {"agentKey": "writer", "description": "null"}),
        ("update_agent_system_prompt", {"agentId": "writer", "systemPrompt": "Tu écris.", "reason": "null"}),
        ("run_agent_test", {"agentKey": "writer", "input": '{"x": 1}'}),
        ("run_workflow", {"workflowKey": "flow", "message": "null"}),
    )

    ok(described)
    assert Agent.objects.get(key="writer").description == "null"
    ok(proposed)
    assert PromptVersion.objects.get(status="pending").reason == "null"
    assert ok(tested)["answer"].startswith('[echo echo-1] {"x": 1} #sp=')
    ok(ran)
    assert WorkflowRun.objects.latest("created_at").inputs == {"message": "null"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"message": 1e999}', "1e999 is out of range: numbers must be finite."),
        ('{"message": NaN}', "NaN is not a JSON number: numbers must be finite."),
        ('{"n": Infinity}', "Infinity is not a JSON number: numbers must be finite."),
        (DEEP, "$: nested deeper than 32 levels."),
        ('{"message": "a\\u0000b"}', "$.message: contains a NUL character (\\u0000), which cannot be stored."),
        ('{"message": "\\ud800"}', "$.message: contains a lone surrogate (\\ud800-\\udfff), which cannot be stored."),
    ],
)
def test_hostile_json_in_run_inputs_and_definitions_is_a_field_error(world, text, message):
    inputs, definition = call_tools(
        world["key"],
        ("run_workflow", {"workflowKey": "flow", "inputs": text}),
        ("update_workflow", {"workflowKey": "flow", "definition": text}),
    )

    assert inputs.is_error and definition.is_error
    assert inputs.structured_content["fields"] == {"inputs": [message]}
    assert definition.structured_content["fields"] == {"definition": [message]}
    assert WorkflowRun.objects.count() == 1


def test_a_ten_thousand_step_definition_is_refused_by_its_count_alone(world, workspace):
    """Issue 24, item 12, over MCP with the write scope only (a sandbox workflow)."""
    _, write_only = api_key_create(workspace=workspace, name="w", scopes="read,write", actor=Actor.for_operator())
    steps = [{"name": f"s{i}", "agent_name": "ghost", "depends_on": ["nowhere"]} for i in range(10_000)]
    definition = json.dumps({"version": 1, "steps": steps})

    (result,) = call_tools(
        write_only, ("create_sandbox_workflow", {"workflowKey": "sb_big", "name": "Big", "definition": definition})
    )

    assert result.is_error
    assert result.structured_content["fields"] == {"definition": ["steps: at most 100 steps, not 10000."]}
