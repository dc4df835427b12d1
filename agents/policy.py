"""An agent's runtime policy: a strict, versioned JSON document stored in its snapshot.

Every field has a default, so `{}` is the default policy, and validation always returns
the full normalised document. Problems come back as one Django `ValidationError` with
one message per problem, each led by its JSON path (`$.children.max_depth: ...`), so
the admin, the API and MCP show the same text and no pydantic error escapes.
"""

from __future__ import annotations

import ast
import re
from typing import Annotated, Any, Literal

from django.core.exceptions import ValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from aihummer.jsonsafe import require_storable

NOT_ENFORCED_YET = "Stored and validated; enforced once conversations exist."
AGENT_KEY_PATTERN = r"^[a-z0-9_-]{1,50}$"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _no_wildcards(value: str) -> str:
    if "*" in value or "?" in value:
        raise ValueError("wildcards are not allowed")
    return value


def _unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"must not repeat '{value}'")
        seen.add(value)
    return values


AgentKey = Annotated[str, StringConstraints(pattern=AGENT_KEY_PATTERN)]
# A literal channel or user id: patterns would widen who may talk to an agent unseen.
ExactName = Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_no_wildcards)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ContextPolicy(StrictModel):
    """How much of the model's context window a request may use."""

    max_tokens: int = Field(128_000, ge=1_000, le=2_000_000, description="Request budget in tokens, input and output.")
    reserve_tokens: int = Field(4_096, ge=0, le=200_000, description="Tokens kept free for the answer.")
    history_share: float = Field(0.5, ge=0.05, le=0.95, description="Share of the budget the history may use.")
    bootstrap_max_chars: int = Field(
        20_000, ge=500, le=200_000, description="Cap in characters on the rendered profile block."
    )

    @model_validator(mode="after")
    def _reserve_fits_the_budget(self) -> ContextPolicy:
        if self.reserve_tokens >= self.max_tokens:
            raise ValueError(
                f"reserve_tokens must be less than max_tokens (got {self.reserve_tokens} >= {self.max_tokens})"
            )
        return self


class PruningPolicy(StrictModel):
    """How older tool results are trimmed from the history."""

    enabled: bool = Field(True, description="Whether older tool results are trimmed.")
    keep_last_tool_results: int = Field(3, ge=0, le=100, description="Newest tool results kept whole.")
    max_tool_result_chars: int = Field(4_000, ge=100, le=100_000, description="Older tool results are trimmed to this.")
    placeholder: str = Field(
        "[older tool result trimmed]", max_length=200, description="Text marking where a result was trimmed."
    )


class MemoryFlushPolicy(StrictModel):
    """Asking the agent to note what it must remember before the history is cut.

    Stored and validated; enforced once conversations exist.
    """

    enabled: bool = Field(False, description="Whether a memory flush runs before the history is cut.")
    threshold_share: float = Field(0.8, ge=0.1, le=1.0, description="Share of the history budget that triggers it.")
    prompt: str = Field(
        "Summarise what you must remember from this conversation.",
        max_length=2_000,
        description="Prompt sent to the agent for the flush.",
    )


class SessionPolicy(StrictModel):
    """When a conversation session ends.

    Stored and validated; enforced once conversations exist.
    """

    idle_minutes: int = Field(60, ge=1, le=10_080, description="Minutes of silence after which a session ends.")
    max_turns: int = Field(50, ge=1, le=1_000, description="Turns after which a session ends.")


class ChildrenPolicy(StrictModel):
    """Which child agents an agent may start, and how many."""

    max_depth: int = Field(1, ge=0, le=4, description="How deep children may nest; 0 forbids children.")
    max_concurrent: int = Field(2, ge=1, le=8, description="Children running at once.")
    max_per_parent: int = Field(3, ge=0, le=5, description="Children one run may start.")
    timeout_seconds: int = Field(600, ge=1, le=172_800, description="Seconds a child may run, at most 48 hours.")
    allowed_agents: Annotated[list[AgentKey], AfterValidator(_unique)] = Field(
        default=[],
        max_length=50,
        json_schema_extra={"uniqueItems": True},
        description="Agent keys that may be started as children; empty means any agent of the workspace.",
    )


class DirectCompletionPolicy(StrictModel):
    """A short completion answered without the agent loop."""

    enabled: bool = Field(False, description="Whether direct completions are allowed.")
    max_tokens: int = Field(1_024, ge=1, le=4_096, description="Output tokens of a direct completion.")
    timeout_ms: int = Field(15_000, ge=100, le=60_000, description="Milliseconds a direct completion may take.")


class AppPolicy(StrictModel):
    """Provider options sent with each model request."""

    reasoning_effort: Literal["minimal", "low", "medium", "high", None] = Field(
        None, description="Reasoning effort asked of the model; null leaves the provider's default."
    )
    service_tier: Literal["auto", "default", "flex", "priority", None] = Field(
        None, description="Provider service tier; null leaves the provider's default."
    )
    direct_completion: DirectCompletionPolicy = Field(
        DirectCompletionPolicy(), description="Short completions answered without the agent loop."
    )


class InteractionPolicy(StrictModel):
    """Who may talk to the agent, and where it answers.

    Stored and validated; enforced once conversations exist.
    """

    allowed_channels: list[ExactName] = Field(
        default=[], max_length=50, description="Channels the agent answers in, exact ids without wildcards."
    )
    allowed_users: list[ExactName] = Field(
        default=[], max_length=50, description="Users the agent answers, exact ids without wildcards."
    )
    reply_mode: Literal["direct", "thread"] = Field("direct", description="Whether replies go inline or in a thread.")


class RuntimePolicy(StrictModel):
    """An agent's runtime policy, as stored in its snapshot."""

    version: Literal[1] = Field(1, description="Format version of this policy.")
    context: ContextPolicy = Field(ContextPolicy(), description="How much of the context window a request may use.")
    pruning: PruningPolicy = Field(PruningPolicy(), description="How older tool results are trimmed.")
    memory_flush: MemoryFlushPolicy = Field(MemoryFlushPolicy(), description=NOT_ENFORCED_YET)
    session: SessionPolicy = Field(SessionPolicy(), description=NOT_ENFORCED_YET)
    children: ChildrenPolicy = Field(ChildrenPolicy(), description="Which child agents may be started, and how many.")
    max_iterations: int = Field(16, ge=1, le=256, description="Model calls one run may make.")
    app: AppPolicy = Field(AppPolicy(), description="Provider options passed with each request.")
    interaction: InteractionPolicy = Field(InteractionPolicy(), description=NOT_ENFORCED_YET)

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_an_integer(cls, value: object) -> object:
        # Literal[1] accepts True and 1.0 even in strict mode.
        if type(value) is not int:
            raise PydanticCustomError("literal_error", "Input should be 1", {"expected": "1"})
        return value


def validate_runtime_policy(data: object, *, field: str = "runtime_policy") -> dict:
    """The full normalised policy (every default filled in) for `data`; `{}` gives the defaults.

    Raises `ValidationError({field: [messages]})`, one message per problem, each led by
    its JSON path, e.g. "$.children.max_depth: must be at most 4 (got 9)".
    """
    require_storable(data, field=field)
    return _validate(data, field=field).model_dump(mode="json")


def resolve_runtime_policy(new: object | None, previous: dict | None) -> dict:
    """The policy to store when `new` is submitted over `previous`.

    Omission keeps: `None` returns `previous` (the defaults when there is none);
    anything else is validated, so `{}` resets to the defaults.
    """
    if new is None:
        return default_runtime_policy() if previous is None else previous
    return validate_runtime_policy(new)


def default_runtime_policy() -> dict:
    """The default policy, every field present."""
    return RuntimePolicy().model_dump(mode="json")


def parse_runtime_policy(data: dict) -> RuntimePolicy:
    """A typed policy for the runtime from a stored dict; raises `ValidationError` if it is not valid."""
    return _validate(data, field="runtime_policy")


def runtime_policy_json_schema() -> dict:
    """The JSON Schema of the policy, with the default of every field and block."""
    return RuntimePolicy.model_json_schema()


def _validate(data: object, *, field: str) -> RuntimePolicy:
    try:
        return RuntimePolicy.model_validate(data)
    except PydanticValidationError as exc:
        raise ValidationError({field: pydantic_error_messages(exc)}) from None


def pydantic_error_messages(exc: PydanticValidationError) -> list[str]:
    """One short message per problem, led by its JSON path (`$.a.b[2]: ...`)."""
    return [f"{_path(error['loc'])}: {_message(error)}" for error in exc.errors()]


def _path(loc: tuple[int | str, ...]) -> str:
    parts = ["$"]
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            parts.append(f".{part}")
        else:
            parts.append(f"[{part!r}]")
    return "".join(parts)


_TYPE_MESSAGES = {
    "int_type": "must be an integer",
    "bool_type": "must be a boolean",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "list_type": "must be a JSON array",
    "model_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
    "extra_forbidden": "unknown field",
    "invalid_key": "keys must be strings",
}


def _message(error: ErrorDetails) -> str:
    kind, ctx, value = error["type"], error.get("ctx", {}), error["input"]
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind]
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']} (got {value})"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']} (got {value})"
    if kind == "literal_error":
        choices = _choices(ctx["expected"])
        return f"must be {choices[0]}" if len(choices) == 1 else f"must be one of: {', '.join(choices)}"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} items (got {ctx['actual_length']})"
    if kind == "string_too_long":
        return f"must have at most {ctx['max_length']} characters (got {len(value)})"
    if kind == "string_too_short":
        return f"must have at least {ctx['min_length']} character{'' if ctx['min_length'] == 1 else 's'}"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx['pattern']}"
    if kind == "value_error":
        return str(ctx["error"])
    return error["msg"]


def _choices(expected: str) -> list[str]:
    # pydantic only gives the choices as text: "'low', 'high' or None".
    shown = []
    for item in re.split(r", | or ", expected):
        try:
            choice: Any = ast.literal_eval(item)
        except (ValueError, SyntaxError):
            return [expected]
        shown.append("null" if choice is None else str(choice))
    return shown
