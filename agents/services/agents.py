"""Agents: create (with version 1 live), update what is not prompt-bearing, delete.
Rights: PUBLISH (SANDBOX for sandbox rows)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import Agent, Preset, PromptVersion
from agents.services.common import no_sandbox_reference, require_key_free, same_workspace, save_checked, write_verb
from agents.services.versions import version_go_live, version_record
from agents.snapshot import is_empty_prompt, normalize_snapshot
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.history import stamp
from aihummer.models import Workspace

AGENT_FIELDS = ("name", "description", "preset", "is_active")


def agent_create(
    *,
    workspace: Workspace,
    actor: Actor,
    key: str,
    name: str,
    description: str = "",
    preset: Preset | None = None,
    snapshot: dict | None = None,
    is_builtin: bool = False,
    is_sandbox: bool = False,
    reason: str = "created",
) -> Agent:
    """A new agent with its version 1 live. Without a snapshot it is told only its
    name. A sandbox agent stores the preset resolved now (the default, if none)."""
    actor.require(write_verb(is_sandbox), workspace)
    snapshot = normalize_snapshot(snapshot if snapshot is not None else {"identity": {"name": name}})
    if is_empty_prompt(snapshot):
        raise ValidationError({"snapshot": "The agent would be told nothing: give an identity, sections or a prompt."})
    agent = Agent(
        workspace=workspace,
        key=key,
        name=name,
        description=description,
        preset=preset,
        is_builtin=is_builtin,
        is_sandbox=is_sandbox,
    )
    if is_sandbox and preset is None:
        agent.preset = Preset.objects.for_workspace(workspace).active().first()
        if agent.preset is None:
            raise ValidationError({"preset": "This workspace has no default preset; give one."})
    same_workspace(agent.preset, workspace, "preset", "preset")
    no_sandbox_reference(agent, agent.preset, "preset", "preset")
    require_key_free(Agent, workspace=workspace, key=key, noun="agent")
    with transaction.atomic():
        save_checked(agent, actor=actor, reason=reason, noun="agent")
        version = version_record(
            agent=agent, snapshot=snapshot, actor=actor, status=PromptVersion.Status.APPROVED, reason=reason
        )
        version_go_live(agent=agent, version=version, actor=actor)
    return agent


def agent_update(*, agent: Agent, actor: Actor, **fields: object) -> Agent:
    """Change what is not prompt-bearing: name, description, preset, enabled."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    unknown = set(fields) - set(AGENT_FIELDS)
    if unknown:
        raise ValidationError(
            dict.fromkeys(sorted(unknown), "Not editable here: what an agent is told changes through a proposal.")
        )
    with transaction.atomic():
        agent = Agent.all_objects.select_for_update().get(pk=agent.pk)
        for field, value in fields.items():
            setattr(agent, field, value)
        same_workspace(agent.preset, agent.workspace, "preset", "preset")
        no_sandbox_reference(agent, agent.preset, "preset", "preset")
        save_checked(agent, actor=actor, reason="updated", noun="agent")
    return agent


def agent_dependents(agent: Agent) -> list[str]:
    """What would break without `agent`: agents that delegate to it by key."""
    delegators = Agent.all_objects.filter(workspace_id=agent.workspace_id).exclude(pk=agent.pk).order_by("key")
    return [
        f"agent '{other.key}' delegates to it" + (" (sandbox)" if other.is_sandbox else "")
        for other in delegators.only("key", "is_sandbox", "runtime_policy")
        if agent.key in ((other.runtime_policy or {}).get("children") or {}).get("allowed_agents", [])
    ]


def agent_delete(*, agent: Agent, actor: Actor, force: bool = False) -> list[str]:
    """Delete an agent and its versions. Built-in agents never; with dependents only
    when forced. Returns the dependents it had."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    if agent.is_builtin:
        raise ApplicationError(f"Agent '{agent.key}' is built in and cannot be deleted; disable it instead.")
    dependents = agent_dependents(agent)
    if dependents and not force:
        raise ApplicationError(
            f"Agent '{agent.key}' is used: {'; '.join(dependents)}. Delete with force to proceed.",
            extra={"dependents": dependents},
        )
    with transaction.atomic():
        stamp(agent, actor=actor, reason="deleted")
        agent.delete()
    return dependents
