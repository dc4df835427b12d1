"""The recorder's primitives: the one code path that appends a prompt version and the one
that puts a version live (rewriting the agent's profile rows from its snapshot)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from agents.diff import diff_stats
from agents.models import Agent, AgentSection, AgentSkill, Preset, PromptVersion
from agents.services.secrets import refuse_vault_secrets
from agents.snapshot import content_hash
from agents.tiers import change_tier
from aihummer.actors import Actor
from aihummer.exceptions import VersionMismatch
from aihummer.history import stamp
from aihummer.service_checks import no_sandbox_reference


def agent_lock(agent: Agent, *, expected_live: int | None = None) -> Agent:
    """`agent` row-locked (the caller is in a transaction), its live version read after
    the lock, and checked to be `expected_live` (the number the caller saw) when given.

    One statement joins the live version. When the lock had to wait for a writer that
    put another version live, the join (evaluated on the snapshot from before the wait)
    shows the old version, or none: then the live version is read again, by its id."""
    agent = Agent.all_objects.select_for_update(of=("self",)).select_related("live_version").get(pk=agent.pk)
    if agent.live_version_id and (agent.live_version is None or agent.live_version.pk != agent.live_version_id):
        agent.live_version = PromptVersion.all_objects.get(pk=agent.live_version_id)
    live = agent.live_version.number if agent.live_version else None
    if expected_live is not None and live != expected_live:
        seen = f"live version {live}" if live is not None else "no live version yet"
        raise VersionMismatch(
            f"Agent '{agent.key}' is at {seen}, not {expected_live}: re-read it, redo the change on top of it, "
            "and send it again.",
            extra={"live_version": live},
        )
    return agent


def version_record(
    *,
    agent: Agent,
    snapshot: dict,
    actor: Actor,
    status: str,
    reason: str = "",
    base_version: PromptVersion | None = None,
    stats: dict | None = None,
    proposer_of: PromptVersion | None = None,
) -> PromptVersion:
    """Append a version to `agent` (the caller holds the agent's row lock or has just
    created it). An approved version is recorded as decided by the actor, now.
    `stats`: its diff stats against `base_version`, when the caller has them.
    `proposer_of`: a version whose change this one carries (a rebase): its proposer
    stays the proposer, and four eyes also excludes the actor who carried it over."""
    refuse_vault_secrets(workspace_id=agent.workspace_id, values=snapshot, json_paths=True)
    last = PromptVersion.all_objects.filter(agent=agent).order_by("-number").values_list("number", flat=True).first()
    decided = status != PromptVersion.Status.PENDING
    tier, reasons = change_tier(base_version.snapshot if base_version else None, snapshot)
    version = PromptVersion(
        workspace_id=agent.workspace_id,
        agent=agent,
        number=(last or 0) + 1,
        status=status,
        snapshot=snapshot,
        content_hash=content_hash(snapshot),
        source=actor.source if proposer_of is None else f"{proposer_of.source} (rebased by {actor.source})"[:200],
        reason=reason,
        proposed_by=actor.person if proposer_of is None else proposer_of.proposed_by,
        proposer_identity=actor.identity_label if proposer_of is None else _joined(proposer_of, actor),
        base_version=base_version,
        reviewed_by=actor.person if decided else None,
        reviewed_at=timezone.now() if decided else None,
        is_sandbox=agent.is_sandbox,
        tier=tier,
        tier_reasons=[reason.as_json() for reason in reasons],
        diff_stats=stats
        if stats is not None
        else diff_stats(base_version.snapshot if base_version else None, snapshot),
    )
    stamp(version, actor=actor, reason=status)
    version.save()
    return version


def _joined(proposer_of: PromptVersion, actor: Actor) -> str:
    labels = proposer_of.proposer_identity.split(",") + actor.identity_label.split(",")
    return ",".join(dict.fromkeys(labels))[:120]


def snapshot_preset(agent: Agent, key: str | None) -> Preset | None:
    """The preset a snapshot's `preset` names for `agent` (None: the workspace's
    default), or a field error: another workspace's key reads as unknown, and a sandbox
    preset serves only sandbox agents."""
    if key is None:
        return None
    preset = Preset.all_objects.filter(workspace_id=agent.workspace_id, key=key).first()
    if preset is None:
        raise ValidationError({"preset": f"Unknown preset '{key}'."})
    no_sandbox_reference(agent, preset, "preset", "preset")
    return preset


def version_go_live(*, agent: Agent, version: PromptVersion, actor: Actor) -> Agent:
    """Point `agent` at `version` and rewrite its profile rows from the snapshot. A
    preset the snapshot names that is gone by now is a field error: nothing goes live."""
    snapshot = version.snapshot
    identity = snapshot["identity"]
    _bind_preset(agent, snapshot["preset"])
    agent.live_version = version
    agent.identity_name = identity["name"]
    agent.role = identity["role"]
    agent.persona = identity["persona"]
    agent.language = identity["language"]
    agent.goals = identity["goals"]
    agent.system_prompt = snapshot["system_prompt"]
    agent.onboarding = snapshot["onboarding"]
    agent.allowed_tool_names = snapshot["allowed_tool_names"]
    agent.runtime_policy = snapshot["runtime_policy"]
    stamp(agent, actor=actor, reason=f"version {version.number} live")
    agent.save()
    _sync_projection(agent, AgentSection, snapshot["sections"], ("title", "body", "position", "enabled"), actor)
    skills = [{**skill, "position": index} for index, skill in enumerate(snapshot["skills"])]
    _sync_projection(agent, AgentSkill, skills, ("title", "body", "shared", "position"), actor)
    return agent


def _bind_preset(agent: Agent, key: str | None) -> None:
    """`agent.preset` as the snapshot names it, read only when it changes: the
    binding always projects the live version's `preset`."""
    was_live = agent.live_version if Agent.live_version.is_cached(agent) else None
    if was_live is not None and was_live.snapshot["preset"] == key and (key is None) == (agent.preset_id is None):
        return
    bound = agent.preset if Agent.preset.is_cached(agent) else None
    if key is None or bound is None or bound.key != key:
        agent.preset = snapshot_preset(agent, key)


def _sync_projection(
    agent: Agent, model: type[models.Model], items: list[dict], fields: tuple[str, ...], actor: Actor
) -> None:
    """Make `agent`'s rows of `model` equal `items`, row by row, so history shows what
    changed rather than a wholesale replacement."""
    existing = {row.key: row for row in model.objects.filter(agent=agent)}
    wanted = {item["key"]: item for item in items}
    for key, row in existing.items():
        if key not in wanted:
            stamp(row, actor=actor, reason="removed")
            row.delete()
    for key, item in wanted.items():
        row = existing.get(key) or model(agent=agent, key=key)
        changed = [field for field in fields if getattr(row, field, None) != item[field]]
        if row.pk and not changed:
            continue
        for field in fields:
            setattr(row, field, item[field])
        stamp(row, actor=actor, reason="updated" if row.pk else "added")
        row.save()


def agent_snapshot(agent: Agent) -> dict:
    """The live snapshot of `agent`."""
    return agent.live_version.snapshot
