"""Agents: create (with version 1 live), update what is not prompt-bearing, delete.
Rights: PUBLISH (SANDBOX for sandbox rows)."""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext

from agents.models import Agent, Preset, PromptVersion
from agents.policy import upgrade_stored_policy
from agents.services.approvals import approval_policy_get, publish_skips_review
from agents.services.notifications import notify
from agents.services.versions import agent_lock, snapshot_preset, version_go_live, version_record
from agents.snapshot import is_empty_prompt, normalize_snapshot
from agents.tiers import POWER
from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.models import Workspace
from aihummer.service_checks import (
    delete_with_dependents,
    deletion_refusal,
    name_dependents,
    no_sandbox_reference,
    require_key_free,
    same_workspace,
    save_checked,
    write_verb,
)

# What is not prompt-bearing, changed at once. The preset is not among them: which
# model answers is part of a version (its snapshot's `preset`), proposed like the rest.
AGENT_FIELDS = ("name", "description", "is_active")


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
    """A new agent with its version 1. Without a snapshot it is told only its name.
    `preset`, when given, is the one its snapshot names (otherwise the snapshot's own
    `preset`); a sandbox agent stores the preset resolved now (the default, if none).

    Version 1 obeys the rule of any change: it goes live at once when the actor may
    publish (or for a sandbox agent); otherwise — a workspace where every change needs
    a second person, or whose approval policy asks more than one approval or a wait for
    the power tier — it waits for review, and the agent does not run until then."""
    actor.require(write_verb(is_sandbox), workspace)
    snapshot = normalize_snapshot(snapshot if snapshot is not None else {"identity": {"name": name}})
    if is_empty_prompt(snapshot):
        message = gettext("The agent would be told nothing: give an identity, sections or a prompt.")
        raise ValidationError({"snapshot": message})
    agent = Agent(
        workspace=workspace,
        key=key,
        name=name,
        description=description,
        preset=preset,
        is_builtin=is_builtin,
        is_sandbox=is_sandbox,
    )
    if preset is None and snapshot["preset"] is not None:
        agent.preset = snapshot_preset(agent, snapshot["preset"])
    if is_sandbox and agent.preset is None:
        agent.preset = Preset.objects.for_workspace(workspace).active().first()
        if agent.preset is None:
            raise ValidationError({"preset": gettext("This workspace has no default preset; give one.")})
    same_workspace(agent.preset, workspace, "preset", "preset")
    no_sandbox_reference(agent, agent.preset, "preset", "preset")
    snapshot["preset"] = agent.preset.key if agent.preset else None
    require_key_free(Agent, workspace=workspace, key=key, noun="agent", actor=actor)
    with transaction.atomic():
        save_checked(agent, actor=actor, reason=reason, noun="agent")
        # A new agent's v1 is a power change (agents.tiers): the publish right puts it
        # live only where the power tier asks for no more than one approval and no wait.
        live_now = is_sandbox or (
            actor.may_publish(workspace) and publish_skips_review(approval_policy_get(workspace=workspace).rule(POWER))
        )
        status = PromptVersion.Status.APPROVED if live_now else PromptVersion.Status.PENDING
        version = version_record(agent=agent, snapshot=snapshot, actor=actor, status=status, reason=reason)
        if live_now:
            version_go_live(agent=agent, version=version, actor=actor)
        else:
            notify(version, "proposed")
    return agent


def agent_update(*, agent: Agent, actor: Actor, expected_live: int | None = None, **fields: object) -> Agent:
    """Change what is not prompt-bearing: name, description, enabled (`AGENT_FIELDS`).

    `expected_live`: the live version number the caller saw; another one is live now →
    `VersionMismatch`, nothing written (as for every write on an agent)."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    unknown = set(fields) - set(AGENT_FIELDS)
    if unknown:
        raise ValidationError(
            dict.fromkeys(sorted(unknown), "Not editable here: what an agent is told changes through a proposal.")
        )
    with transaction.atomic():
        agent = agent_lock(agent, expected_live=expected_live)
        for field, value in fields.items():
            setattr(agent, field, value)
        save_checked(agent, actor=actor, reason="updated", noun="agent")
    return agent


def agent_dependents(agent: Agent, *, actor: Actor | None = None) -> list[str]:
    """What would break without `agent`: agents that delegate to it by key, and
    workflows with a step it runs (sandbox ones named only to an `actor` that can see
    them)."""
    delegators = Agent.all_objects.filter(workspace_id=agent.workspace_id).exclude(pk=agent.pk).order_by("key")
    rows = [
        (gettext("agent '%(agent)s' delegates to it") % {"agent": other.key}, other.is_sandbox)
        for other in delegators.only("key", "is_sandbox", "runtime_policy")
        if agent.key in (_spawn_agent_ids(other.runtime_policy) or [])
    ]
    dependents = name_dependents(rows, actor=actor, workspace=agent.workspace, noun="agent")
    # Named by label: workflows build on agents, never the reverse.
    workflows = apps.get_model("workflows", "Workflow").all_objects.filter(workspace_id=agent.workspace_id)
    rows = []
    for workflow in workflows.only("key", "is_sandbox", "definition").order_by("key"):
        steps = workflow.definition.get("steps") if isinstance(workflow.definition, dict) else None
        names = [s.get("name") for s in steps or [] if isinstance(s, dict) and s.get("agent_name") == agent.key]
        if names:
            label = gettext("workflow '%(workflow)s' runs it in step %(steps)s") % {
                "workflow": workflow.key,
                "steps": ", ".join(map(str, names)),
            }
            rows.append((label, workflow.is_sandbox))
    return dependents + name_dependents(rows, actor=actor, workspace=agent.workspace, noun="workflow")


def _spawn_agent_ids(policy: object) -> list | None:
    """The agent keys a stored policy's `interaction.spawn_agent_ids` names (None: any)."""
    policy = upgrade_stored_policy(policy)
    interaction = policy.get("interaction") if isinstance(policy, dict) else None
    return interaction.get("spawn_agent_ids") if isinstance(interaction, dict) else None


def agent_delete(*, agent: Agent, actor: Actor, force: bool = False, expected_live: int | None = None) -> list[str]:
    """Delete an agent and its versions. Built-in agents never; with dependents only
    when forced. Returns the dependents it had. `expected_live` as for `agent_update`:
    nobody deletes an agent that moved on since they looked at it."""
    actor.require(write_verb(agent.is_sandbox), agent.workspace)
    if agent.is_builtin:
        raise ApplicationError(deletion_refusal(agent, noun="agent", dependents=[]))
    with transaction.atomic():
        # Dependents read under the lock: what they are now is what the delete breaks.
        agent = agent_lock(agent, expected_live=expected_live)
        dependents = agent_dependents(agent, actor=actor)
        return delete_with_dependents(agent, actor=actor, noun="agent", dependents=dependents, force=force)
