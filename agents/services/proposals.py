"""The approval queue: propose, approve, reject, withdraw, restore a prompt version, and
clone an agent from one. Four eyes: the reviewer is never the proposer."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from agents.diff import diff_stats
from agents.models import Agent, EvidenceRun, PromptVersion
from agents.services.agents import agent_create
from agents.services.common import identity_label, require_visible
from agents.services.evidence import evidence_request, evidence_require_confirmed
from agents.services.notifications import notify
from agents.services.versions import version_go_live, version_record
from agents.snapshot import SNAPSHOT_KEYS, apply_changes, content_hash, is_empty_prompt
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError
from aihummer.history import stamp


class IdenticalToLive(ApplicationError):
    """A proposal that would change nothing: nothing is recorded."""


class StaleProposal(ApplicationError):
    """The live version moved since the proposal was made; approval needs confirmation."""


PROPOSAL_MODES = ("pending", "live")


# What an agent may never change about itself, whoever it acts for.
AGENT_SELF_EDIT_FORBIDDEN = ("allowed_tool_names", "runtime_policy")


def prompt_version_propose(
    *,
    agent: Agent,
    changes: dict | Callable[[dict], dict],
    actor: Actor,
    reason: str = "",
    mode: str = "pending",
) -> PromptVersion:
    """Record a change to what `agent` is told: the only way a snapshot changes.

    `changes` maps snapshot keys to their whole new value (`identity` merges per field;
    `sections` is the full ordered list), or is a function of the live snapshot that
    returns them (called with live as it is under the agent's lock). `pending` leaves the live agent untouched
    until a person approves; `live` applies at once and needs the publish right. A
    sandbox agent's changes apply at once (nobody could review a hidden row). A change
    identical to live records nothing (IdenticalToLive); one identical to the
    proposer's own open proposal returns that proposal.
    """
    if mode not in PROPOSAL_MODES:
        raise ValidationError({"mode": f"Unknown mode '{mode}'; use pending or live."})
    require_visible(actor, agent.workspace)
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.PROPOSE, agent.workspace)
    applies_now = agent.is_sandbox or mode == "live"
    if mode == "live" and not agent.is_sandbox:
        actor.require(Verb.PUBLISH, agent.workspace)
        if agent.workspace.every_change_needs_review:
            raise PermissionDenied(
                f"Workspace '{agent.workspace.slug}' requires a second person for every change: "
                "propose it (mode pending)."
            )
    # The new snapshot and its size, worked out before the lock from live as the caller
    # read it (a large prompt's diff takes a while: the agent's lock must not wait on it).
    seen = agent.live_version if Agent.live_version.is_cached(agent) else None
    prepared = _prepared(seen, changes) if seen is not None else None
    with transaction.atomic():
        # The agent's row lock serialises proposals and decisions on one agent.
        agent = Agent.all_objects.select_for_update(of=("self",)).select_related("live_version").get(pk=agent.pk)
        live = agent.live_version
        if prepared is None or seen.pk != live.pk:  # live moved since: again, from it
            prepared = _prepared(live, changes)
        snapshot, stats = prepared
        if is_empty_prompt(snapshot):
            raise ValidationError(
                {"snapshot": "The agent would be told nothing: give an identity, sections or a prompt."}
            )
        if actor.kind == Actor.AGENT:
            touched = [key for key in AGENT_SELF_EDIT_FORBIDDEN if snapshot[key] != live.snapshot[key]]
            if touched:
                raise PermissionDenied(
                    f"An agent may not change its own {' or '.join(touched)}: a person must propose that."
                )
        digest = content_hash(snapshot)
        if digest == live.content_hash:
            raise IdenticalToLive(f"Identical to live version {live.number}; nothing recorded.")
        if not applies_now:
            duplicate = (
                PromptVersion.all_objects.pending()
                .filter(agent=agent, content_hash=digest, proposer_identity=identity_label(actor))
                .first()
            )
            if duplicate is not None:
                return duplicate
        status = PromptVersion.Status.APPROVED if applies_now else PromptVersion.Status.PENDING
        version = version_record(
            agent=agent, snapshot=snapshot, actor=actor, status=status, reason=reason, base_version=live, stats=stats
        )
        if applies_now:
            version.review_note = "applied directly" if not agent.is_sandbox else "sandbox: applied directly"
            version.save(update_fields=["review_note", "updated_at"])
            version_go_live(agent=agent, version=version, actor=actor)
        else:
            notify(version, "proposed")
            evidence_request(version=version, trigger=EvidenceRun.Trigger.PROPOSED)
    return version


def _prepared(live: PromptVersion, changes: dict | Callable[[dict], dict]) -> tuple[dict, dict]:
    """The snapshot `changes` make of `live`, and its diff stats against it."""
    snapshot = apply_changes(live.snapshot, changes(live.snapshot) if callable(changes) else changes)
    return snapshot, diff_stats(live.snapshot, snapshot)


def prompt_version_approve(
    *,
    version: PromptVersion,
    actor: Actor,
    note: str = "",
    confirm_stale: bool = False,
    confirm_regressions: Iterable[str] = (),
) -> PromptVersion:
    """Approve a pending proposal and put it live. The reviewer is never the proposer;
    a stale proposal (the live version moved since) needs `confirm_stale=True`; where
    the workspace blocks approval on regressions, `confirm_regressions` must name every
    test case the proposal fails and live passes."""
    return _decide(
        version=version,
        actor=actor,
        note=note,
        confirm_stale=confirm_stale,
        approve=True,
        confirm_regressions=confirm_regressions,
    )


def prompt_version_reject(*, version: PromptVersion, actor: Actor, note: str) -> PromptVersion:
    """Reject a pending proposal; it is never applied. A note saying why is required."""
    if not isinstance(note, str) or not note.strip():
        raise ValidationError({"note": "Say why you reject it: the proposer reads this note."})
    return _decide(version=version, actor=actor, note=note, confirm_stale=True, approve=False)


def _decide(
    *,
    version: PromptVersion,
    actor: Actor,
    note: str,
    confirm_stale: bool,
    approve: bool,
    confirm_regressions: Iterable[str] = (),
) -> PromptVersion:
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.DECIDE, version.workspace)
    with transaction.atomic():
        # Agent first, then version, always in this order: two reviewers deciding at
        # once serialise on the agent, and the second sees the first's decision.
        agent = Agent.all_objects.select_for_update().get(pk=version.agent_id)
        version = PromptVersion.all_objects.select_for_update().get(pk=version.pk)
        _require_pending(version)
        if identity_label(actor) == version.proposer_identity:
            raise PermissionDenied("You proposed this version: another person must decide it (four eyes).")
        if approve and not confirm_stale and agent.live_version_id != version.base_version_id:
            reverted = [f"v{v.number}" for v in prompt_version_reverts(version)]
            raise StaleProposal(
                f"Version {version.number} was proposed against v{version.base_version.number}, but the live version "
                f"moved since; approving would revert {', '.join(reverted) or 'later changes'}. Confirm to approve.",
                extra={"reverts": reverted},
            )
        if approve:
            evidence_require_confirmed(version=version, confirmed=confirm_regressions)
        version.status = PromptVersion.Status.APPROVED if approve else PromptVersion.Status.REJECTED
        version.reviewed_by = actor.person
        version.reviewed_at = timezone.now()
        version.review_note = note.strip()
        stamp(version, actor=actor, reason=version.status)
        version.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note", "updated_at"])
        if approve:
            version_go_live(agent=agent, version=version, actor=actor)
        notify(version, "decided")
    return version


def prompt_version_withdraw(*, version: PromptVersion, actor: Actor) -> PromptVersion:
    """The proposer takes back their pending proposal."""
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.WITHDRAW, version.workspace)
    with transaction.atomic():
        Agent.all_objects.select_for_update().get(pk=version.agent_id)
        version = PromptVersion.all_objects.select_for_update().get(pk=version.pk)
        _require_pending(version)
        if identity_label(actor) != version.proposer_identity:
            raise PermissionDenied("Only the proposer may withdraw a proposal; reviewers reject it instead.")
        version.status = PromptVersion.Status.WITHDRAWN
        version.reviewed_at = timezone.now()
        stamp(version, actor=actor, reason="withdrawn")
        version.save(update_fields=["status", "reviewed_at", "updated_at"])
    return version


def _require_pending(version: PromptVersion) -> None:
    if version.is_pending:
        return
    by = f" by {version.reviewed_by.get_username()}" if version.reviewed_by else ""
    raise AlreadyDecided(
        f"Version {version.number} of '{version.agent.key}' was already {version.status}{by} "
        f"at {version.reviewed_at:%Y-%m-%d %H:%M:%S} UTC."
    )


def prompt_version_reverts(version: PromptVersion) -> list[PromptVersion]:
    """The versions that went live after `version` was proposed: approving it would
    undo them. Empty when the proposal is not stale. Their number and reason only
    (a busy agent's snapshots would be megabytes)."""
    if version.agent.live_version_id == version.base_version_id:
        return []
    return list(
        PromptVersion.all_objects.filter(
            agent_id=version.agent_id, status=PromptVersion.Status.APPROVED, reviewed_at__gt=version.created_at
        )
        .exclude(pk=version.pk)
        .only("number", "reason", "reviewed_at")
        .order_by("reviewed_at")
    )


def prompt_version_restore(
    *, version: PromptVersion, actor: Actor, reason: str = "", mode: str = "pending"
) -> PromptVersion:
    """Propose (or, with publish and `live`, apply) an old snapshot as a new version.
    History is never rewritten: the old version stays as it was."""
    require_visible(actor, version.workspace, "version")
    changes = {key: version.snapshot[key] for key in SNAPSHOT_KEYS}
    label = f"restore of v{version.number}"
    return prompt_version_propose(
        agent=version.agent, changes=changes, actor=actor, reason=f"{label}: {reason}" if reason else label, mode=mode
    )


def agent_clone(*, version: PromptVersion, actor: Actor, key: str, name: str, description: str = "") -> Agent:
    """A new agent from any version of another (policy, tools and skills included),
    with its own version 1."""
    require_visible(actor, version.workspace, "version")
    source = version.agent
    return agent_create(
        workspace=source.workspace,
        actor=actor,
        key=key,
        name=name,
        description=description or source.description,
        preset=source.preset,
        snapshot=version.snapshot,
        is_sandbox=source.is_sandbox,
        reason=f"clone of {source.key} v{version.number}",
    )
