"""The snapshot: everything an agent is told, as one canonical JSON document.

```
{"schema": 1,
 "identity": {"name", "role", "persona", "language", "goals": []},
 "system_prompt": str | null,
 "sections": [{"key", "title", "body", "position", "enabled"}],
 "onboarding": str,
 "skills": [{"key", "title", "body", "shared": bool}],
 "runtime_policy": {...},
 "allowed_tool_names": [...],
 "preset": str | null}
```
`preset` is the key of the model preset the agent runs with (null: the workspace's
default at run time): which model answers is part of what a version decides, so a
change of it is reviewed like any other (a `power` change, `agents.tiers`).
`normalize_snapshot` validates a whole snapshot and returns its canonical form (every
key present, positions renumbered in list order, the policy with its defaults), so
equal content always has an equal `content_hash`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Literal

from django.conf import settings
from django.core.exceptions import ValidationError

from agents.policy import pydantic_error_messages, validate_runtime_policy
from aihummer.jsonsafe import storable_problem

if TYPE_CHECKING:
    from pydantic import BaseModel

SNAPSHOT_KEYS = (
    "identity",
    "system_prompt",
    "sections",
    "onboarding",
    "skills",
    "runtime_policy",
    "allowed_tool_names",
    "preset",
)
IDENTITY_FIELDS = ("name", "role", "persona", "language", "goals")
KEY_PATTERN = r"^[a-z0-9_-]{1,50}$"
TOOL_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"


@functools.cache
def _snapshot_model() -> type[BaseModel]:
    """The pydantic model of a snapshot, made at the first validation: every process
    imports this module (its keys, its hash), few validate a snapshot, and pydantic
    costs 50 ms to load."""
    from pydantic import BaseModel, ConfigDict, Field

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    class Identity(_Strict):
        name: str = Field("", max_length=200)
        role: str = Field("", max_length=500)
        persona: str = ""
        language: str = Field("", max_length=35)
        goals: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=20)

    class Section(_Strict):
        key: str = Field(pattern=KEY_PATTERN)
        title: str = Field("", max_length=200)
        body: str = ""
        position: int = Field(0, ge=0)
        enabled: bool = True

    class Skill(_Strict):
        key: str = Field(pattern=KEY_PATTERN)
        title: str = Field("", max_length=200)
        body: str = ""
        shared: bool = False

    class Snapshot(_Strict):
        schema_version: Literal[1] = Field(1, alias="schema")
        identity: Identity = Field(default_factory=Identity)
        system_prompt: str | None = None
        sections: list[Section] = Field(default_factory=list)
        onboarding: str = ""
        skills: list[Skill] = Field(default_factory=list)
        runtime_policy: dict = Field(default_factory=dict)
        allowed_tool_names: list[Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]] = Field(default_factory=list)
        preset: str | None = Field(None, pattern=KEY_PATTERN)

    return Snapshot


def canonical_json(snapshot: dict) -> str:
    return json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(snapshot: dict) -> str:
    return hashlib.sha256(canonical_json(snapshot).encode()).hexdigest()


def empty_snapshot() -> dict:
    return normalize_snapshot({})


def validate_snapshot_policy(policy: object) -> dict:
    """`validate_runtime_policy`, its error paths starting at the snapshot
    (`$.runtime_policy.children.max_depth`), as every snapshot error's do."""
    try:
        return validate_runtime_policy(policy)
    except ValidationError as exc:
        # The policy's paths start at the policy; a snapshot's start at the snapshot.
        messages = [m.replace("$", "$.runtime_policy", 1) for m in exc.message_dict["runtime_policy"]]
        raise ValidationError({"runtime_policy": messages}) from None


def normalize_snapshot(data: object) -> dict:
    """The canonical form of `data`, or a `ValidationError` keyed by snapshot key whose
    messages start with their JSON path (`$.sections[2].key: ...`)."""
    if not isinstance(data, dict):
        raise ValidationError({"snapshot": ["$: must be a JSON object"]})
    problem = storable_problem(data)
    if problem:
        raise ValidationError(_by_top_level_key([problem]))
    from pydantic import ValidationError as PydanticValidationError

    try:
        parsed = _snapshot_model().model_validate(data)
    except PydanticValidationError as exc:
        raise ValidationError(_by_top_level_key(pydantic_error_messages(exc))) from None
    snapshot = parsed.model_dump(mode="json", by_alias=True)
    snapshot["runtime_policy"] = validate_snapshot_policy(data.get("runtime_policy", {}))
    for position, section in enumerate(snapshot["sections"]):
        section["position"] = position
    _check_rules(snapshot)
    return snapshot


def apply_changes(base: dict, changes: object) -> dict:
    """`base` with `changes` applied: each top-level key replaces the whole value,
    except `identity`, which merges per field, and `runtime_policy`, where `{}`
    resets to the defaults. Returns the normalised result."""
    if not isinstance(changes, dict):
        raise ValidationError({"changes": ["$: must be a JSON object"]})
    unknown = sorted(set(changes) - set(SNAPSHOT_KEYS))
    if unknown:
        raise ValidationError(
            {key: [f"unknown snapshot key; use one of: {', '.join(SNAPSHOT_KEYS)}"] for key in unknown}
        )
    merged = {**base, **changes}
    if "identity" in changes:
        if not isinstance(changes["identity"], dict):
            raise ValidationError({"identity": ["$.identity: must be a JSON object"]})
        merged["identity"] = {**base.get("identity", {}), **changes["identity"]}
    if changes.get("runtime_policy") is None:  # omitted (or null): keep the previous policy
        merged["runtime_policy"] = base.get("runtime_policy", {})
    return normalize_snapshot(merged)


def _by_top_level_key(messages: list[str]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for message in messages:
        path = message.split(":", 1)[0]
        key = path.removeprefix("$.").split(".", 1)[0].split("[", 1)[0] if path.startswith("$.") else "snapshot"
        errors.setdefault("schema" if key == "schema" else key, []).append(message)
    return errors


def _check_rules(snapshot: dict) -> None:
    """The rules a schema cannot say: unique keys, limits from settings, not empty."""
    errors: dict[str, list[str]] = {}
    max_text = settings.AIHUMMER_MAX_TEXT_CHARS

    def refuse(key: str, message: str) -> None:
        errors.setdefault(key, []).append(message)

    for key, items, limit in (
        ("sections", snapshot["sections"], settings.AIHUMMER_MAX_SECTIONS),
        ("skills", snapshot["skills"], settings.AIHUMMER_MAX_SKILLS),
    ):
        if len(items) > limit:
            refuse(key, f"$.{key}: at most {limit} {key} (got {len(items)})")
        seen: set[str] = set()
        for index, item in enumerate(items):
            if item["key"] in seen:
                refuse(key, f"$.{key}[{index}].key: duplicate key '{item['key']}'")
            seen.add(item["key"])
            if len(item["body"]) > max_text:
                refuse(key, f"$.{key}[{index}].body: at most {max_text} characters (got {len(item['body'])})")
    duplicates = sorted(
        {name for name in snapshot["allowed_tool_names"] if snapshot["allowed_tool_names"].count(name) > 1}
    )
    if duplicates:
        refuse("allowed_tool_names", f"$.allowed_tool_names: listed twice: {', '.join(duplicates)}")
    for key, text in (
        ("system_prompt", snapshot["system_prompt"] or ""),
        ("onboarding", snapshot["onboarding"]),
        ("identity", snapshot["identity"]["persona"]),
    ):
        if len(text) > max_text:
            path = "$.identity.persona" if key == "identity" else f"$.{key}"
            refuse(key, f"{path}: at most {max_text} characters (got {len(text)})")
    if snapshot["system_prompt"] is not None and not snapshot["system_prompt"].strip():
        refuse("system_prompt", "$.system_prompt: must not be blank (use null for no override)")
    size = len(canonical_json(snapshot))
    if size > settings.AIHUMMER_MAX_SNAPSHOT_CHARS:
        refuse(
            "snapshot", f"$: the whole snapshot is {size} characters; at most {settings.AIHUMMER_MAX_SNAPSHOT_CHARS}"
        )
    if errors:
        raise ValidationError(errors)


def is_empty_prompt(snapshot: dict) -> bool:
    """True when the snapshot would tell the agent nothing at all."""
    identity = snapshot["identity"]
    return not (
        snapshot["system_prompt"]
        or any(identity[field] for field in ("name", "role", "persona"))
        or any(section["enabled"] and section["body"].strip() for section in snapshot["sections"])
    )
