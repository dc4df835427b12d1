"""Tools an agent may call during a turn.

A tool is one small class: a name, a description, a pydantic model for its arguments
(whose JSON Schema is what the model is shown) and `run()`. Only tools listed in the
snapshot's `allowed_tool_names` *and* registered here are offered or run. Tools with
side effects run dry in try-it turns: recorded in the debug log, not executed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, ClassVar

from django.core.exceptions import PermissionDenied, ValidationError
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from agents.policy import pydantic_error_messages
from agents.runtime.providers.base import ToolSpec
from agents.runtime.tree import ROOT, Branch
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError

if TYPE_CHECKING:
    from agents.models import Agent, AgentTurn, PromptVersion
    from agents.policy_models import RuntimePolicy

REGISTRY: dict[str, type[Tool]] = {}


class ToolError(Exception):
    """A tool call that could not be carried out; the message goes back to the model."""


@dataclass
class Handoff:
    """A conversation's hand-off its turn asked for (the `handoff` tool): the agent it
    goes to, recorded with the turn's messages (`agents.runtime.conversations`)."""

    target: Agent | None = None
    conversation_id: int | None = None  # the conversation the turn answers (None: its first message)


@dataclass
class TurnContext:
    """What a tool sees of the turn that calls it."""

    agent: Agent
    version: PromptVersion
    actor: Actor
    turn: AgentTurn
    policy: RuntimePolicy
    depth: int
    deadline: float
    dry_run: bool
    depth_limit: int = 0
    branch: Branch = ROOT  # where the turn sits in its execution tree (`agents.runtime.tree`)
    # Runs a child agent for the `delegate` tool; set by the turn loop, so tools never
    # import the loop: (context, *, agent_key, message) -> the child's answer.
    delegate: Callable[..., str] | None = None
    delegations: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Tools whose calls wait for a person (`agents.runtime.approvals`), and the call of
    # this response held for one: (call, parsed arguments).
    guarded: frozenset[str] = frozenset()
    held: tuple | None = None
    handoff: Handoff | None = None  # set when the turn answers a conversation


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type[BaseModel]]
    has_side_effects: ClassVar[bool] = False

    @classmethod
    def spec(cls) -> ToolSpec:
        """What the model is shown; built once per tool class (a JSON Schema takes pydantic
        a while), not on every model call."""
        spec = cls.__dict__.get("_spec")
        if spec is None:
            spec = ToolSpec(name=cls.name, description=cls.description, parameters=cls.Arguments.model_json_schema())
            cls._spec = spec
        return spec

    def parse(self, arguments: dict) -> BaseModel:
        try:
            return self.Arguments.model_validate(arguments)
        except PydanticValidationError as exc:
            raise ToolError("Invalid arguments: " + "; ".join(pydantic_error_messages(exc))) from None

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        raise NotImplementedError


def register(tool: type[Tool]) -> type[Tool]:
    REGISTRY[tool.name] = tool
    return tool


def available_tools(allowed_tool_names: list[str], *, deny: frozenset[str] = frozenset()) -> list[type[Tool]]:
    """The registered tools of `allowed_tool_names`, but those `deny` names (a child's
    `runtime_policy.interaction.child_tool_deny` from an ancestor)."""
    return [REGISTRY[name] for name in allowed_tool_names if name in REGISTRY and name not in deny]


class _Arguments(BaseModel):
    # Built at first use, not at import: most processes never parse a tool call.
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- self-edit ------------------------------------------------------------------------
QUEUED = (
    "Your proposal is queued for human review as version {number}. Your live instructions do not change until "
    "a reviewer approves it; continue with the current ones."
)

APPLIED = "Your change is live as version {number} (a sandbox agent's changes apply at once)."


class SelfEditTool(Tool):
    """Proposes a change to the calling agent's own prompt, always as pending."""

    has_side_effects = True

    def changes(self, live: dict, arguments: BaseModel) -> dict:
        """The change to propose, given the live snapshot."""
        raise NotImplementedError

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        from agents.models import PromptVersion
        from agents.services import IdenticalToLive, prompt_version_propose

        try:
            version = prompt_version_propose(
                agent=context.agent,
                # Worked out by the service under the agent's lock, from live as it is
                # then: another edit may have gone live since the turn began.
                changes=lambda live: self.changes(live, arguments),
                actor=Actor.for_agent(context.agent, on_behalf_of=context.actor),
                reason=arguments.reason,
            )
        except IdenticalToLive:
            return "Nothing to propose: this is already what your live instructions say."
        except ValidationError as exc:
            raise ToolError("Proposal refused: " + "; ".join(exc.messages)) from None
        except (PermissionDenied, ApplicationError) as exc:
            raise ToolError(f"Proposal refused: {exc}") from None
        if version.status == PromptVersion.Status.APPROVED:
            # A sandbox agent's change is live at once (the service locks and re-reads live
            # anyway; this spares the next edit of the turn a second diff).
            context.agent.live_version = version
            return APPLIED.format(number=version.number)
        return QUEUED.format(number=version.number)


@register
class ProposeSectionEdit(SelfEditTool):
    name = "propose_section_edit"
    description = (
        "Propose a new text for one section of your own instructions (or a new section). A human reviews it; "
        "nothing changes until then."
    )

    class Arguments(_Arguments):
        section_key: str = Field(pattern=r"^[a-z0-9_-]{1,50}$", description="Key of the section to change or add.")
        body: str = Field(min_length=1, description="The complete new text of the section.")
        title: str | None = Field(None, max_length=200, description="A title, for a new section.")
        reason: str = Field(min_length=1, max_length=1000, description="Why this change would help.")

    def changes(self, live: dict, arguments: BaseModel) -> dict:
        sections = [dict(s) for s in live["sections"]]
        existing = next((s for s in sections if s["key"] == arguments.section_key), None)
        if existing is None:
            sections.append(
                {
                    "key": arguments.section_key,
                    "title": arguments.title or arguments.section_key,
                    "body": arguments.body,
                }
            )
        else:
            existing["body"] = arguments.body
            existing["title"] = arguments.title or existing["title"]
        return {"sections": sections}


@register
class ProposeOnboardingEdit(SelfEditTool):
    name = "propose_onboarding_edit"
    description = "Propose a new onboarding text (what you say on a first turn). A human reviews it."

    class Arguments(_Arguments):
        onboarding: str = Field(description="The complete new onboarding text.")
        reason: str = Field(min_length=1, max_length=1000)

    def changes(self, live: dict, arguments: BaseModel) -> dict:
        return {"onboarding": arguments.onboarding}


@register
class ProposePersonaEdit(SelfEditTool):
    name = "propose_persona_edit"
    description = "Propose a new persona (how you come across). A human reviews it."

    class Arguments(_Arguments):
        persona: str = Field(min_length=1, description="The complete new persona text.")
        reason: str = Field(min_length=1, max_length=1000)

    def changes(self, live: dict, arguments: BaseModel) -> dict:
        return {"identity": {"persona": arguments.persona}}


@register
class ProposeToolsEdit(SelfEditTool):
    name = "propose_tools_edit"
    description = (
        "Propose to stop using some of your tools (narrowing is welcome). Adding a tool widens your power: it is "
        "refused, a person proposes that. A human reviews it; nothing changes until then."
    )

    class Arguments(_Arguments):
        remove: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]] = Field(
            default_factory=list, max_length=50, description="Tool names to give up."
        )
        add: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]] = Field(
            default_factory=list, max_length=50, description="Tool names to be given (always refused)."
        )
        reason: str = Field(min_length=1, max_length=1000, description="Why this change would help.")

    def changes(self, live: dict, arguments: BaseModel) -> dict:
        kept = [name for name in live["allowed_tool_names"] if name not in arguments.remove]
        return {"allowed_tool_names": kept + [name for name in arguments.add if name not in kept]}


# --- delegate -------------------------------------------------------------------------
@register
class Delegate(Tool):
    name = "delegate"
    description = "Ask another agent of your workspace to handle a task; you get its answer back."
    has_side_effects = True

    class Arguments(_Arguments):
        agent: str = Field(pattern=r"^[a-z0-9_-]{1,50}$", description="Key of the agent to delegate to.")
        message: str = Field(min_length=1, description="What you ask of it, with everything it needs to know.")

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        if context.delegate is None:
            raise ToolError("Delegation is not available in this turn.")
        return context.delegate(context, agent_key=arguments.agent, message=arguments.message)


# --- handoff --------------------------------------------------------------------------
def handoff_target(*, agent: Agent, key: str, allowed: list[str] | None = None) -> Agent:
    """The agent of `agent`'s workspace a conversation of `agent` may be handed to:
    enabled, with a live version, a sandbox one only from a sandbox conversation, and
    named by `allowed` (the handing policy's `interaction.spawn_agent_ids`) when that is
    a list. Raises ValidationError({"agent"}) otherwise."""
    from agents.models import Agent

    if allowed is not None and key not in allowed:
        raise ValidationError(
            {
                "agent": f"'{key}' is not among the agents this conversation may go to (runtime_policy.interaction."
                "spawn_agent_ids)."
            }
        )

    target = (
        Agent.all_objects.filter(workspace_id=agent.workspace_id, key=key, is_active=True, live_version__isnull=False)
        .filter(is_sandbox__in=[False, agent.is_sandbox])
        .first()
    )
    if target is None:
        raise ValidationError({"agent": f"No enabled agent '{key}' with a live version in this workspace."})
    return target


@register
class HandoffTool(Tool):
    name = "handoff"
    description = (
        "Pass this conversation to another agent of your workspace: it answers the next messages, under your "
        "runtime policy. Still give your own answer now (say who takes over)."
    )
    has_side_effects = True

    class Arguments(_Arguments):
        agent: str = Field(pattern=r"^[a-z0-9_-]{1,50}$", description="Key of the agent to hand the conversation to.")

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        if context.handoff is None:
            raise ToolError("Hand-off refused: this turn answers no conversation.")
        if arguments.agent == context.agent.key:
            raise ToolError(f"Hand-off refused: you are '{arguments.agent}', the agent answering already.")
        try:
            context.handoff.target = handoff_target(
                agent=context.agent, key=arguments.agent, allowed=context.policy.interaction.spawn_agent_ids
            )
        except ValidationError as exc:
            raise ToolError(f"Hand-off refused: {' '.join(exc.messages)}") from None
        return (
            f"The conversation goes to agent '{arguments.agent}' once your answer is recorded: it answers the next "
            "messages, under your runtime policy."
        )


# --- other conversations (runtime_policy.interaction.session_*) ------------------------
def readable_conversation(context: TurnContext, pk: int | None) -> object:
    """The conversation `pk` (None: the one this turn answers) if
    `interaction.session_visibility` lets the agent read it: self, the one its turn
    answers; agent, any of this agent's (sent to it or handed to it); granted, those
    and the conversations of `session_agent_ids`. Always of its workspace. Raises
    ToolError with the rule otherwise."""
    from agents.models import Conversation

    interaction = context.policy.interaction
    own = context.handoff.conversation_id if context.handoff else None
    pk = own if pk is None else pk
    if pk is None:
        raise ToolError("This turn answers no earlier conversation: give a conversation id.")
    if interaction.session_visibility == "self" and pk != own:
        raise ToolError(
            "Refused: runtime_policy.interaction.session_visibility is self, so you may read only the "
            "conversation your turn answers."
        )
    rows = Conversation.all_objects.filter(
        pk=pk, workspace_id=context.agent.workspace_id, is_sandbox__in=[False, context.agent.is_sandbox]
    ).select_related("agent")
    conversation = rows.first()
    mine = conversation is not None and context.agent.pk in (conversation.agent_id, conversation.answering_agent_id)
    granted = (
        conversation is not None
        and interaction.session_visibility == "granted"
        and conversation.agent.key in interaction.session_agent_ids
    )
    if pk != own and not (mine or granted):
        raise ToolError(
            f"Refused: conversation {pk} is not one runtime_policy.interaction.session_visibility "
            f"({interaction.session_visibility}) lets you read."
        )
    return conversation


@register
class ReadConversation(Tool):
    name = "read_conversation"
    description = (
        "Read the latest messages of a conversation: the one you answer by default, others as your runtime "
        "policy's session_visibility allows."
    )

    class Arguments(_Arguments):
        conversation: int | None = Field(None, ge=1, description="Conversation id; omitted: the one you answer.")
        limit: int = Field(20, ge=1, le=50, description="How many of its latest messages.")

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        conversation = readable_conversation(context, arguments.conversation)
        rows = list(conversation.messages(manager="all_objects").order_by("-sequence")[: arguments.limit])
        lines = [f"#{m.sequence} {m.role}{f' ({m.agent_key})' if m.agent_key else ''}: {m.text}" for m in rows[::-1]]
        return f"Conversation {conversation.pk} of {conversation.peer} with '{conversation.agent.key}':\n" + (
            "\n".join(lines) or "(no messages)"
        )


@register
class PostToConversation(Tool):
    name = "post_to_conversation"
    description = (
        "Post a message, as yourself, into another conversation you may read (only when your runtime policy's "
        "session_send allows it)."
    )
    has_side_effects = True

    class Arguments(_Arguments):
        conversation: int = Field(ge=1, description="Conversation id.")
        text: str = Field(min_length=1, max_length=20_000, description="The message to post.")

    def run(self, context: TurnContext, arguments: BaseModel) -> str:
        from django.db import transaction
        from django.utils import timezone

        from agents.models import Conversation, ConversationMessage

        if not context.policy.interaction.session_send:
            raise ToolError("Refused: runtime_policy.interaction.session_send is false.")
        own = context.handoff.conversation_id if context.handoff else None
        if arguments.conversation == own:
            raise ToolError("Refused: this is the conversation you answer; answer it instead of posting.")
        found = readable_conversation(context, arguments.conversation)
        with transaction.atomic():
            conversation = Conversation.all_objects.select_for_update().get(pk=found.pk)
            now = timezone.now()
            ConversationMessage.all_objects.create(
                conversation=conversation,
                sequence=conversation.message_count + 1,
                role=ConversationMessage.Role.ASSISTANT,
                channel="agent",
                text=arguments.text,
                turn_id=context.turn.pk,
                version_number=context.version.number,
                agent_key=context.agent.key,
                created_at=now,
                is_sandbox=conversation.is_sandbox,
            )
            conversation.message_count += 1
            conversation.last_message_at = now
            conversation.save(update_fields=["message_count", "last_message_at", "updated_at"])
        return f"Posted into conversation {conversation.pk} as message #{conversation.message_count}."
