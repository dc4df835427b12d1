"""Piecewise changes to what an agent is told (one section, one skill, the profile, the
policy), each recorded as a proposal through `prompt_version_propose`, and the
optimistic-concurrency check the REST API's `If-Match` needs.

Every function here takes the agent's row lock first (the order every writer on an
agent follows), checks the live version the caller saw, computes the new snapshot from
the live one under that lock, and only then proposes: two clients editing different
sections at once each get their own proposal against the same live version, and
neither silently drops the other's change.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import Agent, PromptVersion, Skill
from agents.policy import validate_runtime_policy
from agents.services.agents import agent_delete, agent_update
from agents.services.proposals import (
    StaleProposal,
    prompt_version_approve,
    prompt_version_propose,
    prompt_version_restore,
)
from agents.services.skills import skill_as_snapshot_entry
from aihummer.actors import Actor, Verb
from aihummer.exceptions import NotFound, VersionMismatch
from aihummer.service_checks import require_visible, write_verb

Edit = Callable[[dict], dict]


def _lock_at(agent: Agent, expected_live: int | None) -> Agent:
    """The agent, row-locked, after checking its live version is `expected_live`."""
    agent = Agent.all_objects.select_for_update(of=("self",)).select_related("live_version").get(pk=agent.pk)
    if expected_live is not None and agent.live_version.number != expected_live:
        raise VersionMismatch(
            f"Agent '{agent.key}' is at live version {agent.live_version.number}, not {expected_live}: "
            "re-read it, redo the change on top of it, and send it again.",
            extra={"live_version": agent.live_version.number},
        )
    return agent


def _require_write(actor: Actor, agent: Agent) -> None:
    # Checked before the lock, so a caller without the right learns that first.
    require_visible(actor, agent.workspace)
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.PROPOSE, agent.workspace)


def agent_snapshot_edit(
    *,
    agent: Agent,
    actor: Actor,
    edit: Edit,
    reason: str = "",
    mode: str = "pending",
    expected_live: int | None = None,
) -> PromptVersion:
    """Propose `edit(live snapshot)` (a `changes` dict) as a new version of `agent`.

    `expected_live`: the live version number the caller based the edit on; another
    one is live now → `VersionMismatch` (nothing recorded)."""
    _require_write(actor, agent)
    with transaction.atomic():
        agent = _lock_at(agent, expected_live)
        changes = edit(agent.live_version.snapshot)
        return prompt_version_propose(agent=agent, changes=changes, actor=actor, reason=reason, mode=mode)


def agent_update_checked(*, agent: Agent, actor: Actor, expected_live: int | None = None, **fields: object) -> Agent:
    """`agent_update` (name, description, preset, enabled) with the If-Match check."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    with transaction.atomic():
        _lock_at(agent, expected_live)
        return agent_update(agent=agent, actor=actor, **fields)


def agent_delete_checked(
    *, agent: Agent, actor: Actor, force: bool = False, expected_live: int | None = None
) -> list[str]:
    """`agent_delete` with the If-Match check: nobody deletes an agent that moved on
    since they looked at it."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    with transaction.atomic():
        _lock_at(agent, expected_live)
        return agent_delete(agent=agent, actor=actor, force=force)


def prompt_version_restore_checked(
    *, version: PromptVersion, actor: Actor, reason: str = "", mode: str = "pending", expected_live: int | None = None
) -> PromptVersion:
    """`prompt_version_restore` with the If-Match check."""
    _require_write(actor, version.agent)
    with transaction.atomic():
        _lock_at(version.agent, expected_live)
        return prompt_version_restore(version=version, actor=actor, reason=reason, mode=mode)


def prompt_version_approve_seen(
    *, version: PromptVersion, actor: Actor, note: str = "", live_version_seen: int | None = None
) -> PromptVersion:
    """Approve; a stale proposal needs the live version number the reviewer saw (their
    confirmation that approving reverts what went live since), and is refused again if
    yet another version went live after they looked."""
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.DECIDE, version.workspace)
    with transaction.atomic():
        agent = (
            Agent.all_objects.select_for_update(of=("self",)).select_related("live_version").get(pk=version.agent_id)
        )
        live = agent.live_version.number
        if (
            live_version_seen is not None
            and live_version_seen != live
            and agent.live_version_id != version.base_version_id
        ):
            raise StaleProposal(
                f"You confirmed against live v{live_version_seen}, but v{live} is live now: review the proposal "
                "again and confirm with the live version you see.",
                extra={"live_version": live},
            )
        return prompt_version_approve(
            version=version, actor=actor, note=note, confirm_stale=live_version_seen is not None
        )


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


def changes_as_given(changes: dict) -> Edit:
    """Whole snapshot keys, as `prompt_version_propose` takes them (profile, tools…)."""
    return lambda snapshot: changes


def agent_change(
    *,
    agent: Agent,
    actor: Actor,
    fields: dict,
    changes: dict | None = None,
    reason: str = "",
    mode: str = "pending",
    expected_live: int | None = None,
) -> tuple[Agent, PromptVersion | None]:
    """One update of an agent as the REST API takes it: plain `fields` (name,
    description, preset, enabled) applied at once with the publish right, and
    `changes` to what it is told (`runtime_policy`: `{}` resets, omitted keeps;
    `allowed_tool_names`) proposed like any other. Both or neither."""
    changes = changes or {}
    if not fields and not changes:
        raise ValidationError({"non_field_errors": "Name at least one field to change."})
    if "runtime_policy" in changes:
        runtime_policy_replace(policy=changes["runtime_policy"])  # paths from the policy's root
    version = None
    with transaction.atomic():
        if fields:
            agent = agent_update_checked(agent=agent, actor=actor, expected_live=expected_live, **fields)
        if changes:
            version = agent_snapshot_edit(
                agent=agent,
                actor=actor,
                edit=changes_as_given(changes),
                reason=reason,
                mode=mode,
                expected_live=expected_live,
            )
    return agent, version
