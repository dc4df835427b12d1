"""An agent's runtime policy: a strict, versioned JSON document stored in its snapshot,
field for field the product document's ("Politique d'exécution": context, pruning,
memory_flush, session, children, max_iterations, app, interaction). Fields of
AiHummer's own say so in their description (`OWN_FIELD`).

Every field has a default, so `{}` is the default policy, and validation always returns
the full normalised document. Problems come back as one Django `ValidationError` with
one message per problem, each led by its JSON path (`$.children.max_depth: ...`), so
the admin, the API and MCP show the same text and no pydantic error escapes.

The pydantic models themselves are `agents.policy_models` (import them from there),
loaded here at the first validation: every process loads this module with the admin
and the services, and pydantic costs 50 ms.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from agents.policy_upgrades import from_allowed_agents, from_first_release, is_first_release, names_allowed_agents
from aihummer.jsonsafe import require_storable

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic import ValidationError as PydanticValidationError
    from pydantic_core import ErrorDetails

    from agents.policy_models import RuntimePolicy

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    from agents.policy_models import RuntimePolicy

    return RuntimePolicy().model_dump(mode="json")


def parse_runtime_policy(data: dict) -> RuntimePolicy:
    """A typed policy for the runtime from a stored dict (an old version's format is
    upgraded first); raises `ValidationError` if it is not valid."""
    return _validate(upgrade_stored_policy(data), field="runtime_policy")


def upgrade_stored_policy(data: object) -> object:
    """A stored policy in the current format: a version recorded in an earlier format
    keeps it in the database (history is never rewritten) and is upgraded when read, to
    run, restore or clone it. Anything else is returned as it is."""
    if is_first_release(data):
        data = from_first_release(data)
    if names_allowed_agents(data):
        data = from_allowed_agents(data)
    return data


@dataclass(frozen=True)
class PolicySetting:
    """One field of a policy as the admin reads it: its path in the section, value,
    default and what it does."""

    name: str
    value: object
    default: object
    description: str

    @property
    def is_default(self) -> bool:
        return self.value == self.default

    @property
    def value_json(self) -> str:
        return json.dumps(self.value, ensure_ascii=False)

    @property
    def default_json(self) -> str:
        return json.dumps(self.default, ensure_ascii=False)


@dataclass(frozen=True)
class PolicySection:
    key: str  # "" for the top-level fields
    description: str
    settings: list[PolicySetting]


def runtime_policy_sections(data: object) -> list[PolicySection]:
    """A stored policy as sections of settings, each with its value and default: the
    top-level fields first, then one section per block (nested blocks flattened into
    dotted names). A field the stored document lacks reads as its default."""
    from pydantic import BaseModel

    from agents.policy_models import RuntimePolicy

    data = upgrade_stored_policy(data)
    general = PolicySection("", "", [])
    sections = [general]
    for name, field in RuntimePolicy.model_fields.items():
        default = field.default
        value = data.get(name, default) if isinstance(data, dict) else default
        if isinstance(default, BaseModel):
            settings = _settings(type(default), default.model_dump(mode="json"), value)
            sections.append(PolicySection(name, field.description or "", settings))
        else:
            general.settings.append(PolicySetting(name, value, default, field.description or ""))
    return sections


def _settings(model: type[BaseModel], defaults: dict, values: object, prefix: str = "") -> list[PolicySetting]:
    from pydantic import BaseModel

    values = values if isinstance(values, dict) else {}
    settings = []
    for name, field in model.model_fields.items():
        default, value = defaults.get(name), values.get(name, defaults.get(name))
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            settings += _settings(annotation, default or {}, value, prefix=f"{prefix}{name}.")
        else:
            settings.append(PolicySetting(f"{prefix}{name}", value, default, field.description or ""))
    return settings


def runtime_policy_json_schema() -> dict:
    """The JSON Schema of the policy, with the default of every field and block."""
    from agents.policy_models import RuntimePolicy

    return RuntimePolicy.model_json_schema()


# Raised by validators across fields, which no JSON Schema states.
_RULE_ERRORS = frozenset({"value_error", "assertion_error"})


def runtime_policy_schema_errors(data: object) -> list[str]:
    """The problems of `data` that the policy's JSON Schema states (names, types, bounds),
    each led by its path; the rules across fields are `validate_runtime_policy`'s."""
    from pydantic import ValidationError as PydanticValidationError

    from agents.policy_models import RuntimePolicy

    try:
        RuntimePolicy.model_validate(data)
    except PydanticValidationError as exc:
        return [f"{_path(e['loc'])}: {_message(e)}" for e in exc.errors() if e["type"] not in _RULE_ERRORS]
    return []


def _validate(data: object, *, field: str) -> RuntimePolicy:
    from pydantic import ValidationError as PydanticValidationError

    from agents.policy_models import RuntimePolicy

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
