"""The agents' MCP tools that change or delete agents and presets (a change to what an
agent is told becomes a proposal for review)."""

from __future__ import annotations

from typing import Annotated

import pydantic
from django.core.exceptions import ValidationError
from pydantic import Field

from agents.mcp.common import (
    NOTHING_GIVEN,
    AgentItem,
    AgentKey,
    Force,
    PresetItem,
    PresetKey,
    agent_item,
    preset_item,
    review_url,
)
from agents.models import PromptVersion
from agents.runtime.tools import REGISTRY
from agents.selectors import (
    agent_get_by_key,
    preset_default,
    preset_get_by_key,
)
from agents.services import (
    agent_change,
    agent_delete,
    preset_change,
    preset_delete,
)
from aihummer.mcp import (
    NOTHING_CHANGED,
    Caller,
    ToolOutput,
    comma_list,
    differing,
    saved_message,
    tool,
)


class UpdateAgentOutput(ToolOutput):
    agentKey: str
    changed: list[str]
    message: str
    versionId: int | None
    reviewUrl: str | None = pydantic.Field(
        description="When the change waits for review: the admin page where a person reviews it."
    )
    agent: AgentItem


class UpdatePresetOutput(ToolOutput):
    presetKey: str
    changed: list[str]
    message: str
    preset: PresetItem


class DeleteAgentOutput(ToolOutput):
    agentKey: str
    deleted: bool
    dependents: list[str]


class DeletePresetOutput(ToolOutput):
    presetKey: str
    deleted: bool
    detached: list[str]


# --- maintaining -------------------------------------------------------------------------------
@tool(
    title="Update an agent",
    output=UpdateAgentOutput,
    parameter_names={"preset": "modelPresetKey", "allowed_tool_names": "allowedToolNames", "is_active": "isActive"},
)
def update_agent(
    caller: Caller,
    agentKey: AgentKey,
    name: Annotated[str | None, Field(description="New display name.", min_length=1, max_length=200)] = None,
    description: Annotated[str | None, Field(description="New description.")] = None,
    modelPresetKey: Annotated[
        str | None,
        Field(
            description="Key of the preset to run on; empty string: the workspace's default preset. "
            "Goes through review (another model is a power change)."
        ),
    ] = None,
    allowedToolNames: Annotated[
        str | None,
        Field(description="The tools the agent may call, comma-separated; empty string: none. Goes through review."),
    ] = None,
    isActive: Annotated[bool | None, Field(description="Enable or disable the agent.")] = None,
) -> dict:
    """Update an agent. Name, description and enabled apply at once and need the API
    key's publish scope. The allowed tools and the preset change what the agent is and
    does, so they go through the approval queue: a pending version a person approves in
    the admin."""
    given = {
        "name": name,
        "description": description,
        "modelPresetKey": modelPresetKey,
        "allowedToolNames": allowedToolNames,
        "isActive": isActive,
    }
    if all(value is None for value in given.values()):
        raise ValidationError(NOTHING_GIVEN)
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentKey)
    fields = {name: value for name, value in (("name", name), ("description", description)) if value is not None}
    if isActive is not None:
        fields["is_active"] = isActive
    changes = {"allowed_tool_names": known_tools(allowedToolNames)} if allowedToolNames is not None else {}
    if modelPresetKey is not None:
        changes["preset"] = modelPresetKey or None
    agent, version, written = agent_change(
        agent=agent, actor=caller.actor, fields=fields, changes=changes, reason="update_agent over MCP"
    )
    changed = [update_agent.parameter_for(field) for field in written]
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agent.key)
    default = None if agent.preset_id else preset_default(workspace=caller.workspace)
    return {
        "agentKey": agent.key,
        "changed": changed,
        "message": _update_agent_message(changed, version),
        "versionId": version.pk if version else None,
        "reviewUrl": review_url(caller, version) if version else None,
        "agent": agent_item(agent, default),
    }


def known_tools(names: str | None) -> list[str]:
    """A comma-separated tool list, each one a tool the runtime has (REST's choices and
    the admin's checkboxes offer no other); otherwise a field error listing them."""
    tools = comma_list(names)
    unknown = [name for name in tools if name not in REGISTRY]
    if unknown:
        raise ValidationError(
            {
                "allowed_tool_names": f"Unknown tool {', '.join(map(repr, unknown))}; the tools are: "
                f"{', '.join(sorted(REGISTRY))}."
            }
        )
    return tools


# update_agent's parameters that become a proposal rather than a write.
PROPOSED_PARAMETERS = ("allowedToolNames", "modelPresetKey")


def _update_agent_message(changed: list[str], version: PromptVersion | None) -> str:
    if not changed:
        return NOTHING_CHANGED
    proposed = [name for name in changed if name in PROPOSED_PARAMETERS]
    saved = [name for name in changed if name not in PROPOSED_PARAMETERS]
    parts = [saved_message(saved)] if saved else []
    if version is not None and version.is_pending:
        parts.append(
            f"The change to {', '.join(proposed)} waits for review as version {version.number} (pending): "
            "it will NOT affect the live agent until an admin approves it."
        )
    elif version is not None:
        parts.append(
            f"The change to {', '.join(proposed)} applied at once as version {version.number} (sandbox agent)."
        )
    return " ".join(parts)


@tool(
    title="Update a preset",
    output=UpdatePresetOutput,
    refused={
        "providerName": "A preset's provider and model cannot change: create a new preset instead.",
        "model": "A preset's provider and model cannot change: create a new preset instead.",
    },
)
def update_preset(
    caller: Caller,
    key: PresetKey,
    name: Annotated[str | None, Field(description="New display name.", min_length=1, max_length=200)] = None,
    temperature: Annotated[float | None, Field(description="Sampling temperature, 0 to 2.", ge=0, le=2)] = None,
    topP: Annotated[float | None, Field(description="Nucleus sampling (top-p), 0 to 1.", ge=0, le=1)] = None,
    maxOutputTokens: Annotated[
        int | None, Field(description="Longest answer in tokens; 0: the model's own maximum.", ge=0)
    ] = None,
    streamingEnabled: Annotated[bool | None, Field(description="Stream answers.")] = None,
    isActive: Annotated[
        bool | None, Field(description="true: make this preset the workspace's default (the previous one stops being).")
    ] = None,
) -> dict:
    """Update a preset's name and sampling settings, or make it the workspace's default
    preset. Applies at once and needs the API key's publish scope. Provider and model
    cannot change: create a new preset instead."""
    given = [name, temperature, topP, maxOutputTokens, streamingEnabled, isActive]
    if all(value is None for value in given):
        raise ValidationError(NOTHING_GIVEN)
    preset = preset_get_by_key(actor=caller.actor, workspace=caller.workspace, key=key)
    wanted = {"name": name, "temperature": temperature, "top_p": topP, "streaming_enabled": streamingEnabled}
    fields = differing(preset, wanted)
    if maxOutputTokens is not None and (maxOutputTokens or None) != preset.max_output_tokens:
        fields["max_output_tokens"] = maxOutputTokens or None
    activate = isActive is True and not preset.is_active
    preset = preset_change(preset=preset, actor=caller.actor, fields=fields, is_active=isActive)
    changed = [update_preset.parameter_for(field) for field in fields] + (["isActive"] if activate else [])
    return {
        "presetKey": preset.key,
        "changed": changed,
        "message": saved_message(changed),
        "preset": preset_item(preset),
    }


@tool(title="Delete an agent", output=DeleteAgentOutput, destructive=True)
def delete_agent(caller: Caller, agentKey: AgentKey, force: Force = False) -> dict:
    """Delete an agent and its versions (debug logs are kept). Refused for built-in agents,
    and, unless force is true, when other agents delegate to it (they are listed)."""
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentKey)
    dependents = agent_delete(agent=agent, actor=caller.actor, force=force)
    return {"agentKey": agentKey, "deleted": True, "dependents": dependents}


@tool(title="Delete a preset", output=DeletePresetOutput, destructive=True)
def delete_preset(caller: Caller, key: PresetKey, force: Force = False) -> dict:
    """Delete a preset. Unless force is true it is refused when agents use it (they are
    listed); with force they fall back to the workspace's default preset."""
    preset = preset_get_by_key(actor=caller.actor, workspace=caller.workspace, key=key)
    dependents = preset_delete(preset=preset, actor=caller.actor, force=force)
    return {"presetKey": key, "deleted": True, "detached": dependents}
