"""The turn's side of approvals (issue 30): which calls wait for a person, the pause,
and the state a resumed turn starts from.

When the model calls a tool that needs a person (the workspace's `approval_tools`
plus the agent's `extra_approval_tools`), the call is held: the other calls of the
same response run, the turn stops with `TurnWaiting`, and its caller records the
ApprovalRequest with the turn's `waiting` row in one transaction. Nothing waits in a
thread: the request is carried out, and the turn resumed, by a task once a person (or
the clock) decided (`agents.services.approvals`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.models import DEFAULT_APPROVAL_TOOLS, AgentToolSettings, ApprovalRequest
from agents.runtime.context import NO_HISTORY, History
from agents.runtime.providers.base import Message, ToolCall

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agents.models import Agent
    from agents.redaction import Redactor
    from agents.runtime.tools import Tool, TurnContext

WAITING = "waiting"  # a tool call's outcome while a person decides

HELD = (
    "This call needs a person's approval. It is recorded as approval request {pk}; the turn pauses until "
    "someone approves or rejects it."
)
ONE_AT_A_TIME = (
    "Refused: another call of this response already waits for a person's approval. Make this call again "
    "once that one is decided."
)
SANDBOX_REFUSAL = (
    "Not executed: '{tool}' needs a person's approval, and a sandbox agent's calls have no reviewer "
    "(nobody sees sandbox rows). Use a real agent for calls with effects outside."
)

CHILD_REFUSAL = (
    "Not executed: '{tool}' needs a person's approval, and a delegated turn cannot pause the turn that "
    "delegated to it. Return what you would send; the delegating agent may make the call itself."
)


class TurnWaiting(Exception):
    """The turn paused on a held call; `request` is its unsaved ApprovalRequest."""

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__(f"waiting for approval of {request.tool_name}")
        self.request = request


def approval_tools(agent: Agent) -> frozenset[str]:
    """The tools whose calls wait for a person in `agent`'s turns. No query: the turn's
    agent read brings both settings rows (`turn_agents`)."""
    policy = _related(agent.workspace, "tool_policy")
    tools = set(DEFAULT_APPROVAL_TOOLS if policy is None else policy.approval_tools)
    settings_row = _related(agent, "tool_settings")
    if settings_row is not None:
        tools.update(settings_row.extra_approval_tools)
    return frozenset(tools)


def _related(instance: object, name: str) -> object | None:
    try:
        return getattr(instance, name)
    except ObjectDoesNotExist:  # no row: the defaults
        return None


def expiry_hours(agent: Agent) -> int:
    policy = _related(agent.workspace, "tool_policy")
    return 72 if policy is None else policy.approval_expiry_hours


def hold(context: TurnContext, call: ToolCall, tool: Tool, arguments: BaseModel) -> tuple[str, str]:
    """A guarded call: (the text the model would see, the outcome). The first of a
    response is held (the turn pauses after the response's other calls); a second is
    refused; in a sandbox turn nothing is executed. A call that could never be carried
    out is refused at once (the tool's `check`, a ToolError), before any person sees it."""
    check = getattr(tool, "check", None)
    if check is not None:
        check(context.agent, arguments)
    if context.agent.is_sandbox:
        return SANDBOX_REFUSAL.format(tool=call.name), "refused"
    if context.depth > 0:
        return CHILD_REFUSAL.format(tool=call.name), "refused"
    if context.held is not None:
        return ONE_AT_A_TIME, "refused"
    context.held = (call, arguments.model_dump(mode="json"))
    return HELD.format(pk="(being recorded)"), WAITING


def pause(
    context: TurnContext,
    messages: list[Message],
    *,
    logged: int,
    redactor: Redactor,
    carried: tuple[dict | None, History] = (None, NO_HISTORY),
) -> TurnWaiting:
    """The pause of a turn whose held call is `context.held`: its request, unsaved,
    with the turn's messages up to that call (the held call's placeholder result left
    out: the decision's outcome takes its place on resume) and what the resumed turn
    must be sent as this one was (`carried`: the caller's render context, the
    conversation's history)."""
    call, arguments = context.held
    kept = [m for m in messages if m.tool_call_id != call.id]
    actor = context.actor
    now = timezone.now()
    request = ApprovalRequest(
        workspace_id=context.agent.workspace_id,
        agent_id=context.agent.pk,
        agent_key=context.agent.key,
        turn=context.turn,
        tool_name=call.name,
        call_id=call.id,
        arguments=arguments,
        arguments_hash=arguments_hash(call.name, arguments),
        proposer_identity=actor.identity_label,
        actor_source=actor.source,
        started_by=actor.person,
        expires_at=now + timedelta(hours=expiry_hours(context.agent)),
        resume_state={
            "messages": [_dump(m, redactor) for m in kept],
            "logged": logged,
            **_carried(*carried, redactor=redactor),
        },
        is_sandbox=context.agent.is_sandbox,
    )
    return TurnWaiting(request)


def record(request: ApprovalRequest, *, origin: tuple[str, str, str] | None) -> ApprovalRequest:
    """Save a paused turn's request (in the transaction that writes the turn as
    waiting). `origin`: (kind, run id, step name) for a workflow step's turn."""
    if origin is not None:
        request.origin, run_id, request.step_name = origin
        request.run_id = run_id
    try:
        with transaction.atomic():  # a savepoint: the turn's own write stands either way
            request.save(force_insert=True)
    except IntegrityError as exc:  # one pending request per turn (a constraint)
        raise RuntimeError(f"Turn {request.turn_id} already waits for a request") from exc
    return request


def arguments_hash(tool_name: str, arguments: dict) -> str:
    """What a reviewer approves: the tool and its canonical arguments, hashed."""
    canonical = json.dumps([tool_name, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def resume_messages(request: ApprovalRequest) -> tuple[list[Message], int]:
    """The paused turn's messages with the decision's outcome as the held call's
    result, and how many of them earlier debug logs hold."""
    state = request.resume_state
    messages = [_load(m) for m in state["messages"]]
    refused = request.status != ApprovalRequest.Status.APPROVED or request.effect_ok is False
    messages.append(
        Message(
            role="tool",
            content=request.result,
            tool_call_id=request.call_id,
            tool_name=request.tool_name,
            is_error=refused,
        )
    )
    return messages, state.get("logged", 0)


def ends_on_reject(request: ApprovalRequest) -> bool:
    """Whether a refused call ends the turn (the agent's `on_reject = end`)."""
    if request.status == ApprovalRequest.Status.APPROVED:
        return False
    row = AgentToolSettings.objects.filter(agent_id=request.agent_id).values_list("on_reject", flat=True).first()
    return row == AgentToolSettings.OnReject.END


def _carried(render_context: dict | None, history: History, *, redactor: Redactor) -> dict:
    carried: dict = {}
    if render_context:
        # Stored like every other text a turn keeps: redacted by value (secrets never render).
        carried["context"] = redactor.value(render_context)
    if history.messages or history.reference:
        carried["history"] = {
            "messages": [_dump(m, redactor) for m in history.messages],
            "written_at": list(history.written_at),
            "reference": redactor.text(history.reference),
        }
    return carried


def resume_context(request: ApprovalRequest) -> tuple[dict | None, History]:
    """The render context and the history the paused turn was sent with."""
    state = request.resume_state
    history = state.get("history")
    if not history:
        return state.get("context"), NO_HISTORY
    return state.get("context"), History(
        messages=tuple(_load(m) for m in history["messages"]),
        written_at=tuple(history["written_at"]),
        reference=history["reference"],
    )


def _dump(message: Message, redactor: Redactor) -> dict:
    data = {"role": message.role, "content": redactor.text(message.content)}
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "raw": redactor.text(c.raw_arguments),
                "signature": c.signature,
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id:
        data |= {"tool_call_id": message.tool_call_id, "tool_name": message.tool_name, "is_error": message.is_error}
    return data


def _load(data: dict) -> Message:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], raw_arguments=c["raw"], signature=c["signature"])
        for c in data.get("tool_calls", ())
    )
    return Message(
        role=data["role"],
        content=data["content"],
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id", ""),
        tool_name=data.get("tool_name", ""),
        is_error=data.get("is_error", False),
    )
