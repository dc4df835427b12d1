"""MCP tools for sandboxes (issue 17, assembled by `aihummer/mcp.py`): the seed's
throw-away lifecycle — a preset, agents, a workflow, a run, its story, one cleanup.

Sandbox rows are ordinary rows with `is_sandbox=True`, created by the same services as
real ones (which check keys against real and sandbox rows alike, the model against its
provider's catalog, and the `SANDBOX` right). People never see them; `cleanup_sandbox`
and the beat schedule remove them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.mcp import KEY_PATTERN, known_tools, preset_for
from agents.services import agent_create, preset_create
from aihummer.mcp import Caller, ToolOutput, tool
from sandbox.services import sandbox_cleanup
from workflows.mcp import Definition, WorkflowKey, definition_agents, parse_json
from workflows.services import workflow_create


class CreateSandboxPresetOutput(ToolOutput):
    presetKey: str
    name: str
    providerName: str
    model: str
    temperature: float
    topP: float
    maxOutputTokens: int | None
    streamingEnabled: bool
    isActive: bool


class CreateSandboxAgentOutput(ToolOutput):
    agentKey: str
    agentName: str
    presetUsed: str
    presetKey: str
    model: str
    allowedToolNames: list[str]
    liveVersion: int | None


class CreateSandboxWorkflowOutput(ToolOutput):
    workflowKey: str
    name: str
    stepsCount: int
    agents: list[str]
    version: int


class CleanupSandboxOutput(ToolOutput):
    workflowRunsDeleted: int
    workflowsDeleted: int
    agentsDeleted: int
    presetsDeleted: int


SandboxKey = Annotated[
    str, Field(description="A new key ([a-z0-9_-], at most 50 characters).", pattern=KEY_PATTERN, max_length=50)
]


@tool(
    title="Create a sandbox preset",
    output=CreateSandboxPresetOutput,
    parameter_names={"provider_name": "providerName"},
)
def create_sandbox_preset(
    caller: Caller,
    key: SandboxKey,
    name: Annotated[str, Field(description="A readable name.", min_length=1, max_length=100)],
    providerName: Annotated[str, Field(description="The provider (see list_models), e.g. 'openai' or 'echo'.")],
    model: Annotated[str, Field(description="A model of that provider's catalog (see list_models).")],
    temperature: Annotated[
        float | None, Field(description="Sampling temperature; null: the default, 1.0.", ge=0, le=2)
    ] = None,
    topP: Annotated[float | None, Field(description="Nucleus sampling; null: the default, 0.95.", ge=0, le=1)] = None,
    maxOutputTokens: Annotated[int | None, Field(description="Cap on the answer's tokens.", ge=1)] = None,
    streamingEnabled: Annotated[
        bool | None, Field(description="Stream the answer from the provider; null: the default, false.")
    ] = None,
) -> dict:
    """Create a throw-away model preset, hidden from people and never the workspace's
    default. The key must not be taken (by a real or a sandbox preset); the model must
    be one of the provider's catalog (the error lists them). Remove it with
    cleanup_sandbox."""
    # The seed types them ?float / ?bool: null (or absent) leaves the service's default.
    settings = {"temperature": temperature, "top_p": topP, "streaming_enabled": streamingEnabled}
    preset = preset_create(
        workspace=caller.workspace,
        actor=caller.actor,
        key=key,
        name=name,
        provider_name=providerName,
        model=model,
        max_output_tokens=maxOutputTokens,
        is_sandbox=True,
        **{field: value for field, value in settings.items() if value is not None},
    )
    return {
        "presetKey": preset.key,
        "name": preset.name,
        "providerName": preset.provider_name,
        "model": preset.model,
        "temperature": preset.temperature,
        "topP": preset.top_p,
        "maxOutputTokens": preset.max_output_tokens,
        "streamingEnabled": preset.streaming_enabled,
        "isActive": preset.is_active,
    }


@tool(
    title="Create a sandbox agent",
    output=CreateSandboxAgentOutput,
    parameter_names={"preset": "presetKey", "snapshot": "systemPrompt"},
)
def create_sandbox_agent(
    caller: Caller,
    key: SandboxKey,
    name: Annotated[str, Field(description="A readable name.", min_length=1, max_length=100)],
    systemPrompt: Annotated[str, Field(description="The agent's system prompt.", min_length=1)],
    description: Annotated[str | None, Field(description="A short description.")] = None,
    presetKey: Annotated[
        str | None, Field(description="The preset it runs on (sandbox or real); default: the workspace's default.")
    ] = None,
    allowedToolNames: Annotated[str | None, Field(description="Tools it may call, comma-separated.")] = None,
) -> dict:
    """Create a throw-away agent, hidden from people: active, not built in, its version 1
    live at once (sandbox agents skip the review queue), runnable at once by
    run_agent_test and by sandbox workflows. Remove it with cleanup_sandbox."""
    tools = known_tools(allowedToolNames)
    snapshot = {"identity": {"name": name}, "system_prompt": systemPrompt, "allowed_tool_names": tools}
    agent = agent_create(
        workspace=caller.workspace,
        actor=caller.actor,
        key=key,
        name=name,
        description=description or "",
        preset=preset_for(caller, presetKey or ""),
        snapshot=snapshot,
        is_sandbox=True,
    )
    return {
        "agentKey": agent.key,
        "agentName": agent.name,
        "presetUsed": agent.preset.name,
        "presetKey": agent.preset.key,
        "model": agent.preset.model,
        "allowedToolNames": agent.allowed_tool_names,
        "liveVersion": agent.live_number,
    }


@tool(title="Create a sandbox workflow", output=CreateSandboxWorkflowOutput, parameter_names={"key": "workflowKey"})
def create_sandbox_workflow(
    caller: Caller,
    workflowKey: WorkflowKey,
    name: Annotated[str, Field(description="A readable name.", min_length=1, max_length=200)],
    definition: Definition,
    description: Annotated[str | None, Field(description="What the pipeline does.")] = None,
) -> dict:
    """Assemble a throw-away multi-agent pipeline, hidden from people. The definition is
    checked whole (JSON, at least one step, unique step names, each agent existing and
    enabled, mappings naming earlier steps) and every problem is reported at once. Its
    steps may run sandbox and real agents. Run it with run_workflow; remove it with
    cleanup_sandbox."""
    workflow = workflow_create(
        workspace=caller.workspace,
        actor=caller.actor,
        key=workflowKey,
        name=name,
        description=description or "",
        definition=parse_json(definition, "definition"),
        is_sandbox=True,
    )
    return {
        "workflowKey": workflow.key,
        "name": workflow.name,
        "stepsCount": len(workflow.definition["steps"]),
        "agents": definition_agents(workflow.definition),
        "version": workflow.version,
    }


@tool(title="Delete this workspace's sandbox", output=CleanupSandboxOutput, destructive=True, idempotent=True)
def cleanup_sandbox(caller: Caller) -> dict:
    """Delete every sandbox row of your workspace, in one transaction: workflow runs,
    then workflows, agents and presets. Idempotent (all zeros the second time). Debug
    logs of sandbox calls are kept: inspect_agent_debug still reads them."""
    counts = sandbox_cleanup(workspace=caller.workspace, actor=caller.actor)
    return {
        "workflowRunsDeleted": counts.get("workflowrun", 0),
        "workflowsDeleted": counts.get("workflow", 0),
        "agentsDeleted": counts.get("agent", 0),
        "presetsDeleted": counts.get("preset", 0),
    }


TOOLS = [create_sandbox_preset, create_sandbox_agent, create_sandbox_workflow, cleanup_sandbox]
