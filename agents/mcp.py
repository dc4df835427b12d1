"""MCP tools for agents and presets (assembled by `aihummer/mcp.py`).

Each tool parses its parameters, calls the same services and selectors as the admin,
and returns the payload of its success; failures are what the services raise, turned
into tool errors in one place. Names and shapes follow the seed (`update_agent_system_prompt`
of Synapse) and issue 16.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Any, Literal

import pydantic
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from pydantic import Field

from agents import catalog
from agents.models import Agent, AgentTurn, ApprovalRequest, DebugLog, Preset, PromptVersion
from agents.rendering import render_system_prompt
from agents.runtime import agent_run_test, conversation_send
from agents.runtime.conversations import conversation_handoff
from agents.runtime.debug import redact
from agents.runtime.tools import REGISTRY
from agents.selectors import (
    agent_get_by_key,
    agent_list,
    agent_open_proposals,
    approval_requests_waited_for,
    conversation_get,
    debug_log_as_sent,
    debug_log_get,
    debug_log_ids,
    preset_default,
    preset_get_by_key,
    preset_list,
)
from agents.services import (
    PROPOSAL_MODES,
    agent_change,
    agent_delete,
    preset_change,
    preset_delete,
    prompt_version_propose,
)
from aihummer.actors import Verb
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.mcp import (
    NOTHING_CHANGED,
    Caller,
    Out,
    Progress,
    ToolOutput,
    comma_list,
    differing,
    run_beside,
    saved_message,
    tool,
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


class UpdateAgentSystemPromptOutput(ToolOutput):
    agentId: str
    agentName: str
    mode: Literal["pending", "live"]
    message: str
    versionId: int
    versionNumber: int
    versionStatus: str
    reason: str
    newSystemPrompt: str | None
    reviewUrl: str | None = pydantic.Field(
        description="While the proposal waits: the admin page where a person reviews it (hand it to one)."
    )


class RunAgentTestOutput(ToolOutput):
    agentKey: str
    agentName: str
    input: str
    answer: str
    model: str
    debugId: int | None
    debugIds: list[int]
    turnId: int
    versionNumber: int | None
    usage: Usage
    costUsd: float
    waitingFor: WaitingFor | None = WAITING_FOR


class SendMessageOutput(ToolOutput):
    agentKey: str
    conversationId: int
    messageCount: int
    answer: str | None = pydantic.Field(description="null while the turn waits (see waitingFor).")
    turnId: int
    turnStatus: str = pydantic.Field(description="succeeded, or waiting for a person (waitingFor).")
    versionNumber: int | None
    model: str
    usage: Usage
    waitingFor: WaitingFor | None = WAITING_FOR
    message: str | None = pydantic.Field(default=None, description="Only while the turn waits: what happens next.")


class HandoffConversationOutput(ToolOutput):
    conversationId: int
    agentKey: str = pydantic.Field(description="The conversation's agent (messages are sent to it).")
    answeringAgent: str = pydantic.Field(description="The agent that answers the next messages.")
    message: str


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


def _agent_item(agent: Agent, default: Preset | None) -> dict:
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


def _preset_item(preset: Preset) -> dict:
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


def _model_item(model: catalog.ModelInfo) -> dict:
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


def _proposal_item(caller: Caller, version: PromptVersion, agent: Agent) -> dict:
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


def _usage(input_tokens: int, output_tokens: int) -> dict:
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _preset_for(caller: Caller, key: str) -> Preset | None:
    """`modelPresetKey`: "" means the workspace's default; an unknown key is a field error."""
    if key == "":
        return None
    try:
        return preset_get_by_key(actor=caller.actor, workspace=caller.workspace, key=key)
    except NotFound as exc:
        raise ValidationError({"preset": exc.message}) from None


# --- reading ------------------------------------------------------------------------------
@tool(title="List agents", output=ListAgentsOutput, read_only=True)
def list_agents(caller: Caller, includeSandbox: IncludeSandbox = False) -> dict:
    """List the workspace's agents: key, name, description, the preset and model each runs
    on, allowed tools, whether it is active, built in or a sandbox agent, and its live
    version number."""
    agents = list(agent_list(actor=caller.actor, workspace=caller.workspace, include_sandbox=includeSandbox))
    default = preset_default(workspace=caller.workspace)
    return {"count": len(agents), "agents": [_agent_item(agent, default) for agent in agents]}


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
        "agent": _agent_item(agent, default),
        "liveVersion": {"versionId": live.pk, "number": live.number, "source": live.source, "since": live.reviewed_at}
        if live
        else None,
        "profile": agent.live_snapshot,
        "renderedSystemPrompt": rendered.text if rendered else None,
        "openProposals": [_proposal_item(caller, version, agent) for version in agent_open_proposals(agent=agent)],
    }


@tool(title="List presets", output=ListPresetsOutput, read_only=True)
def list_presets(caller: Caller, includeSandbox: IncludeSandbox = False) -> dict:
    """List the workspace's model presets: key, name, provider, model, whether it is the
    default (active) or a sandbox preset, and its sampling settings. Secrets are never
    shown: `credentialSet` says whether an API key is stored."""
    presets = list(preset_list(actor=caller.actor, workspace=caller.workspace, include_sandbox=includeSandbox))
    return {"count": len(presets), "presets": [_preset_item(preset) for preset in presets]}


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
    models = [_model_item(model) for name in wanted for model in providers[name].models]
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
            **_usage(log.input_tokens, log.output_tokens),
            "cached_prompt_tokens": log.cached_input_tokens,
        },
        "costUsd": float(log.cost_usd),
        "latencyMs": log.latency_ms,
        "prefixHash": log.prefix_hash,
        "error": log.error or None,
        "createdAt": log.created_at,
    }


# --- proposing and testing --------------------------------------------------------------------
@tool(title="Propose a new system prompt", output=UpdateAgentSystemPromptOutput)
def update_agent_system_prompt(
    caller: Caller,
    agentId: Annotated[
        str, Field(description="The key of the agent to change ([a-z0-9_-]).", pattern=KEY_PATTERN, max_length=50)
    ],
    systemPrompt: Annotated[str, Field(description="The whole new system prompt.", min_length=1)],
    reason: Annotated[str | None, Field(description="Why: shown to the reviewer in the admin.")] = None,
    mode: Annotated[
        str,
        Field(
            description='"pending" (default): queued for a person to approve; the live agent is untouched until '
            'then. "live": applied at once; needs the API key\'s publish scope.'
        ),
    ] = "pending",
) -> dict:
    """Propose a new system prompt for an agent. By default (mode "pending") the proposal
    waits in the admin's review queue and the live agent does NOT change until a person
    approves it. Read the agent with get_agent first."""
    if mode not in PROPOSAL_MODES:
        raise ValidationError(f'Invalid mode "{mode}". Expected "pending" or "live".')
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentId)
    asked_at = timezone.now()
    version = prompt_version_propose(
        agent=agent, changes={"system_prompt": systemPrompt}, actor=caller.actor, reason=reason or "", mode=mode
    )
    if version.is_pending and version.created_at < asked_at:
        # The service answers a repeat of one's own open proposal with that proposal.
        message = (
            f"Identical to your open proposal v{version.number}, pending since "
            f"{version.created_at:%Y-%m-%d %H:%M:%S} UTC; nothing new recorded. "
            "It will NOT affect the live agent until an admin approves it."
        )
    elif version.is_pending:
        message = PENDING_MESSAGE
    elif agent.is_sandbox:
        message = f"Sandbox agent: applied at once as version {version.number} (sandbox agents have no review queue)."
    else:
        message = f"Applied live as version {version.number}: the agent runs with this prompt from now on."
    return {
        "agentId": agent.key,
        "agentName": agent.name,
        "mode": mode,
        "message": message,
        "versionId": version.pk,
        "versionNumber": version.number,
        "versionStatus": version.status,
        "reason": version.reason,
        "newSystemPrompt": version.snapshot["system_prompt"],
        "reviewUrl": review_url(caller, version),
    }


@tool(title="Try an agent", output=RunAgentTestOutput)
def run_agent_test(
    caller: Caller,
    agentKey: AgentKey,
    input: Annotated[str, Field(description="The user message to send to the agent.", min_length=1)],
) -> dict:
    """Run one turn of an agent's live version on a message and return its answer, the
    model, token usage and the debug id of the call (see inspect_agent_debug). The turn is
    recorded like any other; tools with side effects (self-edit, delegate) are recorded,
    not executed. With a progress token, progress goes 0/1 then 1/1; cancelling the call
    stops the wait, and the turn still ends and is recorded."""
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentKey)
    if caller.progress is not None:
        caller.progress.report(0, 1, f"Running one turn of {agent.key}")
    # The turn runs beside this thread, which polls: a cancelled call stops waiting and
    # the turn still ends and is recorded (read it later with its debug logs).
    turn: AgentTurn = run_beside(
        lambda: agent_run_test(agent=agent, message=input, actor=caller.actor),
        progress=caller.progress,
        name="run_agent_test",
    )
    if caller.progress is not None:
        caller.progress.report(1, 1, f"Turn {turn.status}")
    debug_ids = debug_log_ids(turn=turn)
    result = {
        "agentKey": agent.key,
        "agentName": agent.name,
        "input": input,
        "answer": turn.answer,
        "model": turn.model,
        "debugId": debug_ids[-1] if debug_ids else None,
        "debugIds": debug_ids,
        "turnId": turn.pk,
        "versionNumber": turn.version_number,
        "usage": _usage(turn.input_tokens, turn.output_tokens),
        "costUsd": float(turn.cost_usd),
        "waitingFor": turn_waiting_for(caller, turn),
    }
    if turn.status != AgentTurn.Status.SUCCEEDED:
        raise ApplicationError(f"The turn failed: {turn.error}", extra={k: result[k] for k in ("debugId", "turnId")})
    return result


@tool(title="Send a message to an agent", output=SendMessageOutput)
def send_message(
    caller: Caller,
    agentKey: AgentKey,
    message: Annotated[str, Field(description="The user message to send to the agent.", min_length=1)],
    channel: Annotated[
        str,
        Field(
            description="The channel (default mcp); with the agent's runtime_policy.session.scope per-channel-peer "
            "each channel has its own conversation.",
            pattern=r"^[a-z0-9_-]{1,50}$",
        ),
    ] = "mcp",
    peer: Annotated[
        str | None,
        Field(
            description="The person this key speaks for, by your own id for them (1 to 60 of A-Z a-z 0-9 _ . : @ + -); "
            "needs the key's vouch scope. Their conversation is then api_key:<the key's id>/<this id>. "
            "Omitted: the key's own conversation.",
        ),
    ] = None,
) -> dict:
    """Send a message to an agent in your conversation with it (one per channel, or one
    across channels when its runtime policy says per-peer) and return its answer. The
    agent is sent the conversation's recent history under its runtime policy; the
    message, the answer and the turn are recorded (see inspect_agent_debug). With a
    progress token, progress notifications carry the answer so far as it is written
    (progress: its length in characters)."""
    agent = agent_get_by_key(actor=caller.actor, workspace=caller.workspace, key=agentKey)
    streamed = AnswerSoFar(caller.progress)
    reply = conversation_send(
        agent=agent,
        actor=caller.actor,
        message=message,
        channel=channel,
        peer=peer,
        on_event=streamed.on_event if caller.progress is not None else None,
    )
    streamed.flush()
    turn = reply.turn
    result = {
        "agentKey": agent.key,
        "conversationId": reply.conversation.pk,
        "messageCount": reply.conversation.message_count,
        "answer": reply.answer.text if reply.answer else None,
        "turnId": turn.pk,
        "turnStatus": turn.status,
        "versionNumber": turn.version_number,
        "model": turn.model,
        "usage": _usage(turn.input_tokens, turn.output_tokens),
        "waitingFor": turn_waiting_for(caller, turn),
    }
    if turn.status == AgentTurn.Status.WAITING:
        result["message"] = (
            "A tool call waits for a person's approval (waitingFor.reviewUrl). Once decided, the turn goes on "
            "and its answer is added to this conversation."
        )
        return result
    if turn.status != AgentTurn.Status.SUCCEEDED:
        raise ApplicationError(
            f"The turn failed: {turn.error}", extra={k: result[k] for k in ("conversationId", "turnId")}
        )
    return result


@tool(title="Hand a conversation to another agent", output=HandoffConversationOutput)
def handoff_conversation(
    caller: Caller,
    conversationId: Annotated[int, Field(description="The conversation (send_message's conversationId).", ge=1)],
    agentKey: AgentKey,
) -> dict:
    """Hand a conversation to another agent of the workspace: it answers the next
    messages (still sent to the conversation's agent) under its own profile and the
    runtime policy of the agent answering now, which it inherits."""
    conversation = conversation_get(actor=caller.actor, workspace=caller.workspace, pk=conversationId)
    handed = conversation_handoff(conversation=conversation, agent_key=agentKey, actor=caller.actor)
    return {
        "conversationId": handed.pk,
        "agentKey": handed.agent.key,
        "answeringAgent": handed.answering_agent.key,
        "message": f"Agent '{agentKey}' answers this conversation from the next message on, under the inherited "
        "runtime policy.",
    }


ANSWER_PROGRESS_SECONDS = 0.2  # at most this often a notification of the answer so far


class AnswerSoFar:
    """A turn's text deltas to progress notifications of its answer so far (progress:
    its length in characters), sent at most every ANSWER_PROGRESS_SECONDS and once
    more at the end, for a client that asked for progress."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.text: list[str] = []
        self.sent_at = 0.0

    def on_event(self, kind: str, data: dict) -> None:
        if kind == "delta":
            self.text.append(data["text"])
            if time.monotonic() - self.sent_at >= ANSWER_PROGRESS_SECONDS:
                self.flush()

    def flush(self) -> None:
        if self.progress is not None and self.text:
            self.sent_at = time.monotonic()
            so_far = "".join(self.text)
            self.progress.report(len(so_far), None, so_far)  # a repeat of the last length is not sent


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
        "agent": _agent_item(agent, default),
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
        "preset": _preset_item(preset),
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


TOOLS = [
    list_agents,
    get_agent,
    list_presets,
    list_models,
    update_agent_system_prompt,
    run_agent_test,
    send_message,
    handoff_conversation,
    inspect_agent_debug,
    update_agent,
    update_preset,
    delete_agent,
    delete_preset,
]
