"""Shared skills: text copied by value into agents' snapshots; editing one proposes the
new text to every agent that carries it."""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent, PromptVersion, Skill
from agents.services.proposals import IdenticalToLive, prompt_version_propose
from agents.services.secrets import refuse_vault_secrets
from aihummer.actors import Actor, Verb
from aihummer.history import stamp
from aihummer.models import Workspace
from aihummer.service_checks import require_key_free, require_visible, save_checked


def skill_create(*, workspace: Workspace, key: str, title: str, body: str, actor: Actor) -> Skill:
    """A shared skill. It reaches an agent only through that agent's versions."""
    actor.require(Verb.PROPOSE, workspace)
    require_key_free(Skill, workspace=workspace, key=key, noun="skill", actor=actor)
    skill = Skill(workspace=workspace, key=key, title=title, body=body)
    refuse_vault_secrets(workspace_id=workspace.pk, values={"title": title, "body": body}, json_paths=False)
    save_checked(skill, actor=actor, reason="created", noun="skill")
    return skill


def skill_as_snapshot_entry(skill: Skill) -> dict:
    """How a shared skill is copied, by value, into a snapshot."""
    return {"key": skill.key, "title": skill.title, "body": skill.body, "shared": True}


def skill_update(
    *, skill: Skill, actor: Actor, title: str | None = None, body: str | None = None, reason: str = ""
) -> list[PromptVersion]:
    """Edit a shared skill and propose the new text to every agent that carries it,
    one proposal each, so no live agent changes without review. Returns them."""
    require_visible(actor, skill.workspace, "skill")
    actor.require(Verb.PROPOSE, skill.workspace)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        skill.title = skill.title if title is None else title
        skill.body = skill.body if body is None else body
        skill.full_clean(validate_unique=False, validate_constraints=False)
        refuse_vault_secrets(
            workspace_id=skill.workspace_id, values={"title": skill.title, "body": skill.body}, json_paths=False
        )
        stamp(skill, actor=actor, reason=reason or "updated")
        skill.save()
        entry = skill_as_snapshot_entry(skill)
        # all_objects: sandbox agents carry shared skills too (their changes apply at once).
        carriers = Agent.all_objects.filter(
            workspace_id=skill.workspace_id, skills__key=skill.key, skills__shared=True
        ).order_by("pk")
        proposals = []
        for agent in carriers.select_related("live_version", "workspace"):
            skills = [
                entry if s["key"] == skill.key and s["shared"] else s for s in agent.live_version.snapshot["skills"]
            ]
            try:
                proposals.append(
                    prompt_version_propose(
                        agent=agent,
                        changes={"skills": skills},
                        actor=actor,
                        reason=reason or f"shared skill '{skill.key}' updated",
                    )
                )
            except IdenticalToLive:
                continue
    return proposals
