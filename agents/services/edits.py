"""Piecewise changes to what an agent is told (one section, one skill, the profile, the
policy), each a function of the live snapshot that `prompt_version_propose` calls under
the agent's row lock, and `agent_change`: one update of an agent as REST's PATCH and
MCP's `update_agent` take it.

Computing the new snapshot from live under the lock means two clients editing
different sections at once each get their own proposal against the same live version,
and neither silently drops the other's change. The concurrency check (`expected_live`)
lives in the base services themselves, for every surface.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import Agent, PromptVersion, Skill
from agents.policy import validate_runtime_policy
from agents.services.agents import agent_update
from agents.services.proposals import IdenticalToLive, prompt_version_propose
from agents.services.skills import skill_as_snapshot_entry
from agents.services.versions import agent_lock
from agents.snapshot import validate_snapshot_policy
from aihummer.actors import Actor
from aihummer.exceptions import NotFound
from aihummer.service_checks import write_verb

Edit = Callable[[dict], dict]


class AgentChange(NamedTuple):
    agent: Agent
    version: PromptVersion | None
    changed: list[str]  # the plain fields written, then the snapshot keys proposed


def agent_change(
    *,
    agent: Agent,
    actor: Actor,
    fields: dict | None = None,
    changes: dict | None = None,
    reason: str = "",
    mode: str = "pending",
    expected_live: int | None = None,
) -> AgentChange:
    """One update of an agent: plain `fields` (name, description, enabled) applied at
    once with the publish right, and `changes` to what it is told (`runtime_policy`:
    `{}` resets, omitted keeps; `allowed_tool_names`; `preset`, a key or None for the
    workspace's default) proposed like any other. Both or neither. Values equal to the current ones change nothing (no
    write, no proposal); naming nothing at all is refused. `expected_live` as for every
    write on an agent."""
    fields, changes = dict(fields or {}), dict(changes or {})
    if not fields and not changes:
        raise ValidationError({"non_field_errors": "Name at least one field to change."})
    if fields:
        actor.require(write_verb(agent.is_sandbox), agent.workspace)  # before the lock, as every writer
    if "runtime_policy" in changes:
        # Before the lock; paths as the body names it: `runtime_policy.children.max_depth`.
        validate_snapshot_policy(changes["runtime_policy"])
    version = None
    with transaction.atomic():
        agent = agent_lock(agent, expected_live=expected_live)
        fields = {name: value for name, value in fields.items() if _differs(agent, name, value)}
        if fields:
            agent = agent_update(agent=agent, actor=actor, **fields)
        if changes:
            try:
                version = prompt_version_propose(
                    agent=agent, changes=changes, actor=actor, reason=reason, mode=mode, expected_live=expected_live
                )
            except IdenticalToLive:
                version = None
    return AgentChange(agent, version, [*fields, *(changes if version else ())])


def _differs(agent: Agent, name: str, value: object) -> bool:
    field = Agent._meta.get_field(name)
    if field.is_relation:
        return (value.pk if value is not None else None) != getattr(agent, field.attname)
    return value != getattr(agent, name)


# --- edits: each returns the `changes` of a proposal from the live snapshot ----------
def _find(items: list[dict], key: str, noun: str) -> int:
    for index, item in enumerate(items):
        if item["key"] == key:
            return index
    raise NotFound(f"The agent has no {noun} '{key}'.")


def section_add(
    *, key: str, title: str = "", body: str = "", enabled: bool = True, position: int | None = None
) -> Edit:
    def edit(snapshot: dict) -> dict:
        sections = [dict(s) for s in snapshot["sections"]]
        if any(s["key"] == key for s in sections):
            raise ValidationError({"key": f"The agent already has a section '{key}'; update it instead."})
        index = len(sections) if position is None else min(position, len(sections))
        sections.insert(index, {"key": key, "title": title, "body": body, "enabled": enabled, "position": index})
        return {"sections": sections}

    return edit


def section_update(*, key: str, **fields: object) -> Edit:
    def edit(snapshot: dict) -> dict:
        sections = [dict(s) for s in snapshot["sections"]]
        index = _find(sections, key, "section")
        sections[index].update({name: value for name, value in fields.items() if value is not None})
        return {"sections": sections}

    return edit


def section_remove(*, key: str) -> Edit:
    def edit(snapshot: dict) -> dict:
        sections = list(snapshot["sections"])
        del sections[_find(sections, key, "section")]
        return {"sections": sections}

    return edit


def sections_reorder(*, keys: list[str]) -> Edit:
    def edit(snapshot: dict) -> dict:
        by_key = {s["key"]: s for s in snapshot["sections"]}
        if sorted(keys) != sorted(by_key) or len(set(keys)) != len(keys):
            raise ValidationError(
                {"keys": f"Give every section key exactly once, in the new order: {', '.join(by_key)}."}
            )
        return {"sections": [by_key[key] for key in keys]}

    return edit


def skill_attach(*, skill: Skill) -> Edit:
    """Copy a shared skill, by value, into the agent's skills."""

    def edit(snapshot: dict) -> dict:
        skills = list(snapshot["skills"])
        if any(s["key"] == skill.key for s in skills):
            raise ValidationError({"shared_skill": f"The agent already has a skill '{skill.key}'."})
        return {"skills": [*skills, skill_as_snapshot_entry(skill)]}

    return edit


def own_skill_add(*, key: str, title: str = "", body: str = "") -> Edit:
    def edit(snapshot: dict) -> dict:
        skills = list(snapshot["skills"])
        if any(s["key"] == key for s in skills):
            raise ValidationError({"key": f"The agent already has a skill '{key}'; update it instead."})
        return {"skills": [*skills, {"key": key, "title": title, "body": body, "shared": False}]}

    return edit


def own_skill_update(*, key: str, title: str | None = None, body: str | None = None) -> Edit:
    def edit(snapshot: dict) -> dict:
        skills = [dict(s) for s in snapshot["skills"]]
        index = _find(skills, key, "skill")
        if skills[index]["shared"]:
            raise ValidationError(
                {"key": f"'{key}' is a shared skill: edit it under /v1/admin/skills/{key}, or detach it."}
            )
        skills[index].update({name: value for name, value in (("title", title), ("body", body)) if value is not None})
        return {"skills": skills}

    return edit


def skill_detach(*, key: str) -> Edit:
    def edit(snapshot: dict) -> dict:
        skills = list(snapshot["skills"])
        del skills[_find(skills, key, "skill")]
        return {"skills": skills}

    return edit


def runtime_policy_replace(*, policy: object) -> Edit:
    """The whole policy; `{}` resets it to the defaults."""
    # Validated on its own first, so error paths start at the policy (`$.children…`).
    validate_runtime_policy(policy)

    def edit(snapshot: dict) -> dict:
        return {"runtime_policy": policy}

    return edit
