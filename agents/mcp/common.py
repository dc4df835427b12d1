"""What the agents' MCP tools share: parameter types, the items their answers are made of,
and how rows become those items."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import pydantic
from django.core.exceptions import ValidationError
from django.urls import reverse
from pydantic import Field

from agents import catalog
from agents.models import Agent, AgentTurn, ApprovalRequest, Preset, PromptVersion
from agents.selectors import (
    approval_requests_waited_for,
    preset_get_by_key,
)
from aihummer.exceptions import NotFound
from aihummer.mcp import (
    Caller,
    Out,
)

PENDING_MESSAGE = (
    "Proposal queued for human review (pending). It will NOT affect the live agent until an admin approves it."
)
NOTHING_GIVEN = "No fields provided — nothing changed."
KEY_PATTERN = r"^[a-z0-9_-]+$"

AgentKey = Annotated[
    str, Field(description="The agent's key ([a-z0-9_-], at most 50 characters).", pattern=KEY_PATTERN, max_length=50)
]
PresetKey = Annotated[
    str, Field(description="The preset's key ([a-z0-9_-], at most 50 characters).", pattern=KEY_PATTERN, max_length=50)
]
IncludeSandbox = Annotated[
    bool, Field(description="Also list sandbox rows (hidden from people, created by automated clients).")
]
Force = Annotated[bool, Field(description="Delete even when other rows depend on it (they are detached).")]


# --- answers (each tool's outputSchema) ---------------------------------------------------
class AgentItem(Out):
    key: str
    name: str
    description: str
    presetKey: str | None
    usesDefaultPreset: bool
    providerName: str | None
    model: str | None
    allowedToolNames: list[str]
    isActive: bool
    isBuiltin: bool
    isSandbox: bool
    liveVersion: int | None = pydantic.Field(description="null while version 1 waits for review.")


class PresetItem(Out):
    key: str
    name: str
    providerName: str
    model: str
    baseUrl: str | None
    isActive: bool
    isSandbox: bool
    temperature: float
    topP: float
    maxOutputTokens: int | None
    timeoutSeconds: int
    streamingEnabled: bool
    credentialSet: bool


class Pricing(Out):
    currency: Literal["USD"]
    inputPerMillionTokens: float
    outputPerMillionTokens: float
    cachedInputPerMillionTokens: float


class Capabilities(Out):
    streaming: bool
    tools: bool
    vision: bool


class Limits(Out):
    contextWindow: int
    maxOutputTokens: int


class ModelItem(Out):
    provider: str
    id: str
    label: str
    pricing: Pricing
    capabilities: Capabilities
    limits: Limits


class ProposalItem(Out):
    versionId: int
    number: int
    source: str
    reason: str
    proposedAt: datetime
    baseVersion: int | None
    stale: bool = pydantic.Field(description="The live version moved since it was proposed.")
    changes: dict[str, Any]
    reviewUrl: str = pydantic.Field(description="The admin page where a person reviews it.")


class Usage(Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CallUsage(Usage):
    cached_prompt_tokens: int


class WaitingFor(Out):
    """The tool call a waiting turn (or run step) waits for a person to decide."""

    approvalId: int
    tool: str
    reviewUrl: str = pydantic.Field(description="The admin page where a person decides it (hand it to one).")


WAITING_FOR = pydantic.Field(
    default=None, description="Only while a tool call waits for a person's approval: which, and where to decide it."
)


class LiveVersion(Out):
    versionId: int
    number: int
    source: str
    since: datetime | None


# --- formatting ---------------------------------------------------------------------------
def waiting_for(caller: Caller, requests: list[ApprovalRequest]) -> dict | None:
    """`waitingFor` of an answer: the oldest of the calls waiting for a person."""
    if not requests:
        return None
    request = requests[0]
    path = reverse("admin:agents_approvalrequest_review", args=[request.pk])
    return {"approvalId": request.pk, "tool": request.tool_name, "reviewUrl": caller.link(path)}


def turn_waiting_for(caller: Caller, turn: AgentTurn) -> dict | None:
    if turn.status != AgentTurn.Status.WAITING:
        return None  # no query for the others
    return waiting_for(caller, approval_requests_waited_for(turn_id=turn.pk))


def review_url(caller: Caller, version: PromptVersion) -> str | None:
    """The admin page where a person reviews a pending version (None once decided)."""
    if not version.is_pending:
        return None
    return caller.link(reverse("admin:agents_promptversion_review", args=[version.pk]))


def agent_item(agent: Agent, default: Preset | None) -> dict:
    preset = agent.preset or default
    return {
        "key": agent.key,
        "name": agent.name,
        "description": agent.description,
        "presetKey": preset.key if preset else None,
        "usesDefaultPreset": agent.preset_id is None,
        "providerName": preset.provider_name if preset else None,
        "model": preset.model if preset else None,
        "allowedToolNames": agent.allowed_tool_names,
        "isActive": agent.is_active,
        "isBuiltin": agent.is_builtin,
        "isSandbox": agent.is_sandbox,
        "liveVersion": agent.live_number,
    }


def preset_item(preset: Preset) -> dict:
    return {
        "key": preset.key,
        "name": preset.name,
        "providerName": preset.provider_name,
        "model": preset.model,
        "baseUrl": preset.base_url or None,
        "isActive": preset.is_active,
        "isSandbox": preset.is_sandbox,
        "temperature": preset.temperature,
        "topP": preset.top_p,
        "maxOutputTokens": preset.max_output_tokens,
        "timeoutSeconds": preset.timeout_seconds,
        "streamingEnabled": preset.streaming_enabled,
        "credentialSet": preset.credential_id is not None,
    }


def model_item(model: catalog.ModelInfo) -> dict:
    return {
        "provider": model.provider,
        "id": model.name,
        "label": model.label,
        "pricing": {
            "currency": "USD",
            "inputPerMillionTokens": float(model.input_per_mtok),
            "outputPerMillionTokens": float(model.output_per_mtok),
            "cachedInputPerMillionTokens": float(model.cached_input_per_mtok),
        },
        "capabilities": {"streaming": model.streaming, "tools": model.tools, "vision": model.vision},
        "limits": {"contextWindow": model.context_window, "maxOutputTokens": model.max_output_tokens},
    }


def proposal_item(caller: Caller, version: PromptVersion, agent: Agent) -> dict:
    return {
        "versionId": version.pk,
        "number": version.number,
        "source": version.source,
        "reason": version.reason,
        "proposedAt": version.created_at,
        "baseVersion": version.base_version.number if version.base_version else None,
        "stale": agent.live_version_id != version.base_version_id,
        "changes": version.diff_stats,
        "reviewUrl": review_url(caller, version),
    }


def usage_item(input_tokens: int, output_tokens: int) -> dict:
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def preset_for(caller: Caller, key: str) -> Preset | None:
    """`modelPresetKey`: "" means the workspace's default; an unknown key is a field error."""
    if key == "":
        return None
    try:
        return preset_get_by_key(actor=caller.actor, workspace=caller.workspace, key=key)
    except NotFound as exc:
        raise ValidationError({"preset": exc.message}) from None
