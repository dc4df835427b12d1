"""The agents' MCP tools that only read: agents, presets, models, a model call's debug log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import pydantic
from django.core.exceptions import ValidationError
from django.utils import timezone
from pydantic import Field

from agents import catalog
from agents.mcp.common import (
    KEY_PATTERN,
    AgentItem,
    CallUsage,
    IncludeSandbox,
    LiveVersion,
    ModelItem,
    PresetItem,
    ProposalItem,
    agent_item,
    model_item,
    preset_item,
    proposal_item,
    usage_item,
)
from agents.models import DebugLog
from agents.rendering import render_system_prompt
from agents.runtime.debug import redact
from agents.selectors import (
    agent_get_by_key,
    agent_list,
    agent_open_proposals,
    debug_log_as_sent,
    debug_log_get,
    preset_default,
    preset_list,
)
from aihummer.actors import Verb
from aihummer.mcp import (
    Caller,
    ToolOutput,
    comma_list,
    tool,
)


class ListAgentsOutput(ToolOutput):
    count: int
    agents: list[AgentItem]


class GetAgentOutput(ToolOutput):
    agentId: str
    agentName: str
    agent: AgentItem
    liveVersion: LiveVersion | None
    profile: dict[str, Any] | None = pydantic.Field(description="The live snapshot (G3 profile).")
    renderedSystemPrompt: str | None
    openProposals: list[ProposalItem]


class ListPresetsOutput(ToolOutput):
    count: int
    presets: list[PresetItem]


class ListModelsOutput(ToolOutput):
    count: int
    models: list[ModelItem]


class InspectAgentDebugOutput(ToolOutput):
    debugId: int
    turnId: int | None
    sequence: int
    agentKey: str
    providerName: str
    model: str
    systemPrompt: str
    messages: list[Any]
    droppedExchanges: int
    toolsOffered: list[str]
    parameters: dict[str, Any]
    response: Any
    finishReason: str
    toolExecutions: Any
    usage: CallUsage
    costUsd: float
    latencyMs: int | None
    prefixHash: str
    error: str | None
    createdAt: datetime


# --- reading ------------------------------------------------------------------------------
@tool(title="List agents", output=ListAgentsOutput, read_only=True)
def list_agents(caller: Caller, includeSandbox: IncludeSandbox = False) -> dict:
    """List the workspace's agents: key, name, description, the preset and model each runs
    on, allowed tools, whether it is active, built in or a sandbox agent, and its live
    version number."""
    agents = list(agent_list(actor=caller.actor, workspace=caller.workspace, include_sandbox=includeSandbox))
    default = preset_default(workspace=caller.workspace)
    return {"count": len(agents), "agents": [agent_item(agent, default) for agent in agents]}


@tool(title="Get an agent", output=GetAgentOutput, read_only=True)
def get_agent(
    caller: Caller,
    agentId: Annotated[str, Field(description="The agent's key ([a-z0-9_-]).", pattern=KEY_PATTERN, max_length=50)],
) -> dict:
    """Read one agent before proposing a change to it: its G3 profile (identity, system
    prompt, sections, onboarding, skills, runtime policy, allowed tools), the system prompt
    as rendered for a first turn today, its live version and the proposals waiting for
    review."""
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentId)
    live = agent.live_version  # None while version 1 waits for review: nothing is live yet
    default = None if agent.preset_id else preset_default(workspace=caller.workspace)
    rendered = render_system_prompt(live.snapshot, first_turn=True, today=timezone.localdate()) if live else None
    return {
        "agentId": agent.key,
        "agentName": agent.name,
        "agent": agent_item(agent, default),
        "liveVersion": {"versionId": live.pk, "number": live.number, "source": live.source, "since": live.reviewed_at}
        if live
        else None,
        "profile": agent.live_snapshot,
        "renderedSystemPrompt": rendered.text if rendered else None,
        "openProposals": [proposal_item(caller, version, agent) for version in agent_open_proposals(agent=agent)],
    }


@tool(title="List presets", output=ListPresetsOutput, read_only=True)
def list_presets(caller: Caller, includeSandbox: IncludeSandbox = False) -> dict:
    """List the workspace's model presets: key, name, provider, model, whether it is the
    default (active) or a sandbox preset, and its sampling settings. Secrets are never
    shown: `credentialSet` says whether an API key is stored."""
    presets = list(preset_list(actor=caller.actor, workspace=caller.workspace, include_sandbox=includeSandbox))
    return {"count": len(presets), "presets": [preset_item(preset) for preset in presets]}


@tool(
    title="List models",
    output=ListModelsOutput,
    read_only=True,
    parameter_names={"provider_filter": "providerFilter"},
)
def list_models(
    caller: Caller,
    providerFilter: Annotated[
        str | None, Field(description="Only these providers, comma-separated (e.g. 'openai,anthropic').")
    ] = None,
) -> dict:
    """List the models of the catalog a preset may use: provider, id, label, prices per
    million tokens (USD), capabilities and limits."""
    caller.actor.require(Verb.READ, caller.workspace)
    providers = {info.name: info for info in catalog.providers()}
    wanted = comma_list(providerFilter) or list(providers)
    unknown = [name for name in wanted if name not in providers]
    if unknown:
        raise ValidationError(
            {"provider_filter": f"Unknown provider {', '.join(map(repr, unknown))}; use {', '.join(providers)}."}
        )
    models = [model_item(model) for name in wanted for model in providers[name].models]
    return {"count": len(models), "models": models}


@tool(title="Inspect a model call", output=InspectAgentDebugOutput, read_only=True)
def inspect_agent_debug(
    caller: Caller,
    debugId: Annotated[int, Field(description="A debug log id, as run_agent_test returns it.", ge=1)],
) -> dict:
    """Read one model call of a turn as it was sent and answered: the rendered system
    prompt, the messages, the parameters sent, the response, usage, latency and the tool
    executions. Secrets are redacted."""
    log: DebugLog = debug_log_get(actor=caller.actor, workspace=caller.workspace, pk=debugId)
    system_prompt, tools, messages = debug_log_as_sent(log)
    return {
        "debugId": log.pk,
        "turnId": log.turn_id,
        "sequence": log.sequence,
        "agentKey": log.agent_key,
        "providerName": log.provider_name,
        "model": log.model,
        # Stored redacted already; redacted again on the way out, in case the
        # patterns grew since the call was recorded.
        "systemPrompt": redact(system_prompt, []),
        "messages": redact(messages, []),
        "droppedExchanges": log.dropped_exchanges,
        "toolsOffered": [tool_offered["name"] for tool_offered in tools],
        "parameters": redact(log.parameters, []),
        "response": redact(log.response, []),
        "finishReason": log.finish_reason,
        "toolExecutions": redact(log.tool_calls, []),
        "usage": {
            **usage_item(log.input_tokens, log.output_tokens),
            "cached_prompt_tokens": log.cached_input_tokens,
        },
        "costUsd": float(log.cost_usd),
        "latencyMs": log.latency_ms,
        "prefixHash": log.prefix_hash,
        "error": log.error or None,
        "createdAt": log.created_at,
    }
