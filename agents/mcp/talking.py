"""The agents' MCP tools that propose, try and talk: a new system prompt for review, a
try-it turn, a conversation message and its hand-off."""

from __future__ import annotations

import time
from typing import Annotated, Literal

import pydantic
from django.core.exceptions import ValidationError
from django.utils import timezone
from pydantic import Field

from agents.mcp.common import (
    KEY_PATTERN,
    PENDING_MESSAGE,
    WAITING_FOR,
    AgentKey,
    Usage,
    WaitingFor,
    review_url,
    turn_waiting_for,
    usage_item,
)
from agents.models import AgentTurn
from agents.runtime import agent_run_test, conversation_send
from agents.runtime.conversations import conversation_handoff
from agents.selectors import (
    agent_get_by_key,
    conversation_get,
    debug_log_ids,
)
from agents.services import (
    PROPOSAL_MODES,
    prompt_version_propose,
)
from aihummer.exceptions import ApplicationError
from aihummer.mcp import (
    Caller,
    Progress,
    ToolOutput,
    run_beside,
    tool,
)


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
        "usage": usage_item(turn.input_tokens, turn.output_tokens),
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
        "usage": usage_item(turn.input_tokens, turn.output_tokens),
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
