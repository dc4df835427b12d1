"""The runtime policy's pydantic models, one per block of the document (see
`agents.policy`, which validates, upgrades and describes policies with them).

A module of its own so that a process loads pydantic when it validates or runs a
policy, not when it loads the models and the admin: `agents.policy` imports it where
it validates.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.utils.translation import gettext_noop
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator
from pydantic_core import PydanticCustomError

AGENT_KEY_PATTERN = r"^[a-z0-9_-]{1,50}$"
TREE_MAX_CONCURRENT = 8  # the document's bound on children running at once in one execution tree
# Said in the description of every field the product document does not name.
OWN_FIELD = "AiHummer's own field, not in the product document."


def _unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"must not repeat '{value}'")
        seen.add(value)
    return values


AgentKey = Annotated[str, StringConstraints(pattern=AGENT_KEY_PATTERN)]


class StrictModel(BaseModel):
    # Built at first use, not at import: every process imports these, few validate a policy.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class ContextPolicy(StrictModel):
    """The history budget: how much of a conversation enters a request."""

    max_tokens: int | None = Field(
        None,
        ge=1_000,
        le=2_000_000,
        description=gettext_noop(
            "Budget of one request in tokens, input and output. null: the model's context window "
            "(from the catalog; 128000 for a model it does not know). A number makes the context explicit: "
            "older messages that no longer fit are then compacted into a summary, in batches, before the "
            "request is built, instead of leaving the window."
        ),
    )
    reserve_tokens: int = Field(
        4_096, ge=0, le=200_000, description=gettext_noop("Tokens of the budget kept free for the answer.")
    )
    history_share: float = Field(
        0.5,
        ge=0.05,
        le=0.95,
        description=gettext_noop("Share of the budget (less reserve_tokens) the history may use."),
    )
    max_history_messages: int = Field(
        200, ge=1, le=5_000, description=gettext_noop("Most messages of the conversation's history a request carries.")
    )
    bootstrap_max_chars: int = Field(
        20_000, ge=500, le=200_000, description=gettext_noop("Cap in characters on the rendered profile block.")
    )

    @model_validator(mode="after")
    def _reserve_fits_the_budget(self) -> ContextPolicy:
        if self.max_tokens is not None and self.reserve_tokens >= self.max_tokens:
            raise ValueError(
                f"reserve_tokens must be less than max_tokens (got {self.reserve_tokens} >= {self.max_tokens})"
            )
        return self


class PruningPolicy(StrictModel):
    """Stale tool results trimmed from what is sent (never from the database, never the user's text)."""

    ttl_seconds: int = Field(
        300,
        ge=0,
        le=2_592_000,
        description=gettext_noop("A tool result older than this may be trimmed; newer ones stay whole."),
    )
    keep_last_assistants: int = Field(
        3,
        ge=0,
        le=100,
        description=gettext_noop(
            "Tool results after the last this-many assistant answers stay whole; with fewer answers "
            "in the history, nothing is pruned."
        ),
    )
    soft_trim_ratio: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description=gettext_noop(
            "When the request fills more than this share of the budget, stale tool results longer "
            "than head_chars + tail_chars keep only their head and tail."
        ),
    )
    head_chars: int = Field(
        1_500, ge=0, le=100_000, description=gettext_noop("Characters a soft trim keeps from the start.")
    )
    tail_chars: int = Field(
        1_500, ge=0, le=100_000, description=gettext_noop("Characters a soft trim keeps from the end.")
    )
    hard_clear_ratio: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=gettext_noop(
            "When the request still fills more than this share of the budget after the soft trim, "
            "stale tool results are replaced by the placeholder, oldest first, until it no longer does."
        ),
    )
    placeholder: str = Field(
        "[older tool result trimmed]",
        max_length=200,
        description=gettext_noop("The text a cleared tool result is replaced by."),
    )

    @model_validator(mode="after")
    def _soft_before_hard(self) -> PruningPolicy:
        if self.soft_trim_ratio > self.hard_clear_ratio:
            raise ValueError(
                "soft_trim_ratio must not exceed hard_clear_ratio "
                f"(got {self.soft_trim_ratio} > {self.hard_clear_ratio})"
            )
        return self


class MemoryFlushPolicy(StrictModel):
    """Before the history is compacted, a tool-less call writes a short note on goals,
    decisions and open points; the conversation's last three notes go into its requests
    as an unverified reference."""

    # The whole sentence is one message (OWN_FIELD included) so the desk translates it.
    enabled: bool = Field(
        True, description=gettext_noop("Whether notes are written. AiHummer's own field, not in the product document.")
    )
    soft_threshold_tokens: int = Field(
        4_000,
        ge=0,
        le=200_000,
        description=gettext_noop(
            "The note is written once the history comes within this many tokens of what the window "
            "holds, once before each compaction. Only with an explicit context (context.max_tokens set): "
            "without one nothing is compacted, so no note is written."
        ),
    )


class SessionPolicy(StrictModel):
    """The conversation's life: which conversation a message lands in, fresh contexts
    after a pause, and which conversations the default list shows."""

    scope: Literal["per-peer", "per-channel-peer"] = Field(
        "per-channel-peer",
        description=gettext_noop(
            "per-peer: one conversation per verified peer across channels; per-channel-peer: one per channel and peer."
        ),
    )
    idle_reset_minutes: int | None = Field(
        None,
        ge=1,
        le=525_600,
        description=gettext_noop(
            "After this many minutes without a message, the next one opens a new context (the raw "
            "history is kept). null: never."
        ),
    )
    index_prune_after_days: int | None = Field(
        None,
        ge=1,
        le=3_650,
        description=gettext_noop(
            "Conversations without a message for this many days leave the default list (never deleted). null: never."
        ),
    )
    index_max_entries: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description=gettext_noop(
            "The default list shows at most this many of the agent's conversations, the most recent "
            "(the others are kept). null: all."
        ),
    )


class ChildrenPolicy(StrictModel):
    """Child agents: how deep, how many, how long, and how long finished ones stay listed.
    A number replaces the global setting for this agent, lower or higher; null takes it."""

    max_depth: int | None = Field(
        None,
        ge=0,
        le=4,
        description=gettext_noop(
            "How deep children may nest below the tree's root, never deeper than the delegating "
            "agent's own limit; 0 forbids children. null: AIHUMMER_SUBAGENT_MAX_DEPTH."
        ),
    )
    max_concurrent: int = Field(
        2,
        ge=1,
        le=TREE_MAX_CONCURRENT,
        description=gettext_noop(
            "Children running at once in the execution tree below this agent, whatever process runs "
            "them: the strictest value on the way down from the tree's root applies."
        ),
    )
    max_per_parent: int = Field(3, ge=0, le=5, description=gettext_noop("Children one turn may start."))
    timeout_seconds: int | None = Field(
        None,
        ge=1,
        le=172_800,
        description=gettext_noop(
            "Seconds a child may run, at most 48 hours and never more than its parent has left. "
            "null: AIHUMMER_SUBAGENT_TIMEOUT_SEC."
        ),
    )
    archive_after_minutes: int = Field(
        60,
        ge=0,
        le=43_200,
        description=gettext_noop(
            "Minutes after which this agent's finished child turns leave the default list of turns (never deleted)."
        ),
    )


class DirectCompletionPolicy(StrictModel):
    """A short answer in one model call, without the tool loop."""

    mode: Literal["auto", "always"] = Field(
        "auto",
        description=gettext_noop(
            "auto: AiHummer's own short calls (compaction summaries, memory notes) are direct "
            "completions, the agent's answers run the tool loop; always: every answer of the agent is one too."
        ),
    )
    max_tokens: int = Field(1_024, ge=1, le=4_096, description=gettext_noop("Output tokens of a direct completion."))
    timeout_ms: int = Field(
        15_000, ge=100, le=60_000, description=gettext_noop("Milliseconds a direct completion may take.")
    )


class AppPolicy(StrictModel):
    """Options of the AiHummer application: provider options sent with each request, and direct completions."""

    reasoning_effort: Literal["minimal", "low", "medium", "high", None] = Field(
        None, description=gettext_noop("Reasoning effort asked of the model; null leaves the provider's default.")
    )
    service_tier: Literal["auto", "default", "flex", "priority", None] = Field(
        None, description=gettext_noop("Provider service tier; null leaves the provider's default.")
    )
    direct_completion: DirectCompletionPolicy = Field(
        DirectCompletionPolicy.model_construct(),
        description=gettext_noop("Short answers in one call, without the tool loop."),
    )


# A verified peer as conversations name it (`agents.runtime.conversations`), or a
# Telegram user for the channel connector to come: no pattern admits a wildcard.
PEER_ID_PATTERN = r"^((user|api_key|operator|run):[A-Za-z0-9_.:@+/-]{1,80}|telegram:[0-9]{1,20})$"
TELEGRAM_ID_PATTERN = r"^telegram:[0-9]{1,20}$"
TOOL_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
PeerId = Annotated[str, StringConstraints(pattern=PEER_ID_PATTERN)]
TelegramId = Annotated[str, StringConstraints(pattern=TELEGRAM_ID_PATTERN)]
ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]


def _distinct(*, limit: int, description: str, default: list | None = None) -> Any:
    """A list field of distinct items, at most `limit` of them."""
    return Field(
        default=default,
        max_length=limit,
        json_schema_extra={"uniqueItems": True},
        description=description,
    )


class InteractionPolicy(StrictModel):
    """Explicit interaction rights: lists of named peers, agents and tools, never a
    wildcard nor a grant to the whole workspace. A right only narrows what the agent's
    tools already allow; it grants no tool."""

    user_ids: Annotated[list[PeerId], AfterValidator(_unique)] | None = _distinct(
        limit=500,
        description=gettext_noop(
            "The verified peers who may talk to the agent, as conversations name them (user:<id>, "
            "api_key:<id>, api_key:<id>/<vouched id>, telegram:<id>): a conversation message from anyone else is "
            "refused. null: anyone who may run the agent."
        ),
    )
    spawn_agent_ids: Annotated[list[AgentKey], AfterValidator(_unique)] | None = _distinct(
        limit=50,
        description=gettext_noop(
            "Keys of the agents it may start as children ([]: none). null: any agent of the workspace "
            "its delegate tool reaches."
        ),
    )
    session_agent_ids: Annotated[list[AgentKey], AfterValidator(_unique)] = _distinct(
        limit=50,
        default=[],
        description=gettext_noop("Agents whose conversations it may read when session_visibility is granted."),
    )
    session_visibility: Literal["self", "agent", "granted"] = Field(
        "self",
        description=gettext_noop(
            "Whose conversations its tools may read: self, the conversation its turn answers; agent, "
            "every conversation of this agent; granted, those and the conversations of session_agent_ids."
        ),
    )
    session_send: bool = Field(False, description=gettext_noop("Whether it may post into another conversation."))
    child_tool_deny: Annotated[list[ToolName], AfterValidator(_unique)] = _distinct(
        limit=50,
        default=[],
        description=gettext_noop("Tools its children (and theirs) are never offered, whatever their own tools."),
    )
    child_leaf_tool_deny: Annotated[list[ToolName], AfterValidator(_unique)] = _distinct(
        limit=50,
        default=[],
        description=gettext_noop(
            "Tools its leaf children (those at the depth limit, which may not delegate) are never offered."
        ),
    )
    elevated_telegram_user_ids: Annotated[list[TelegramId], AfterValidator(_unique)] = _distinct(
        limit=100,
        default=[],
        description=gettext_noop(
            "Telegram users, a subset of user_ids, who may ask for an explicitly elevated code_exec "
            "run (approvals still apply); kept for the channel connector that reads it."
        ),
    )

    @model_validator(mode="after")
    def _elevated_are_users(self) -> InteractionPolicy:
        missing = [peer for peer in self.elevated_telegram_user_ids if peer not in (self.user_ids or [])]
        if missing:
            raise ValueError(
                f"elevated_telegram_user_ids must be a subset of user_ids (not in it: {', '.join(missing)})"
            )
        return self


class RuntimePolicy(StrictModel):
    """An agent's runtime policy, as stored in its snapshot: budgets and delays only,
    it grants no tool and widens no right."""

    # Each block's default is `model_construct()`, its fields' defaults unvalidated (the
    # same instance and schema): calling the class would build its validator at import,
    # which `defer_build` leaves to the first use (10 ms of every process's start).

    version: Literal[1] = Field(1, description=gettext_noop("Format version of this policy."))
    context: ContextPolicy = Field(
        ContextPolicy.model_construct(), description=gettext_noop("The history budget of each request.")
    )
    pruning: PruningPolicy = Field(
        PruningPolicy.model_construct(), description=gettext_noop("Stale tool results trimmed from what is sent.")
    )
    memory_flush: MemoryFlushPolicy = Field(
        MemoryFlushPolicy.model_construct(), description=gettext_noop("Notes written before the history is compacted.")
    )
    session: SessionPolicy = Field(
        SessionPolicy.model_construct(),
        description=gettext_noop("The conversation's life: routing, fresh contexts, the default list."),
    )
    children: ChildrenPolicy = Field(
        ChildrenPolicy.model_construct(), description=gettext_noop("Child agents: depth, number, time, listing.")
    )
    max_iterations: int = Field(
        16, ge=1, le=256, description=gettext_noop("Model calls one turn's tool loop may make.")
    )
    app: AppPolicy = Field(
        AppPolicy.model_construct(), description=gettext_noop("Options of the AiHummer application.")
    )
    interaction: InteractionPolicy = Field(
        InteractionPolicy.model_construct(),
        description=gettext_noop("Explicit interaction rights: peers, children, conversations, tools."),
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_an_integer(cls, value: object) -> object:
        # Literal[1] accepts True and 1.0 even in strict mode.
        if type(value) is not int:
            raise PydanticCustomError("literal_error", "Input should be 1", {"expected": "1"})
        return value
