"""The approval queue: propose, approve, reject, withdraw, restore a prompt version, and
clone an agent from one. Four eyes: the reviewer is never the proposer."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from agents.diff import diff_stats
from agents.models import Agent, EvidenceRun, PromptVersion
from agents.policy import upgrade_stored_policy
from agents.services.agents import agent_create
from agents.services.approvals import approval_policy_get, decision_apply, publish_skips_review, require_schedule
from agents.services.evidence import evidence_request, evidence_require_confirmed
from agents.services.notifications import notify
from agents.services.versions import agent_lock, snapshot_preset, version_go_live, version_record
from agents.snapshot import SNAPSHOT_KEYS, apply_changes, content_hash, is_empty_prompt
from agents.tiers import change_tier, widening_reasons
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError
from aihummer.history import stamp
from aihummer.jsonsafe import require_text
from aihummer.service_checks import identity_label, require_live, require_visible


class IdenticalToLive(ApplicationError):
    """A proposal that would change nothing: nothing is recorded."""


class StaleProposal(ApplicationError):
    """The live version moved since the proposal was made; approval needs confirmation."""


PROPOSAL_MODES = ("pending", "live")
# Why a change is proposed, and why it is decided: read by people, quoted in mails.
MAX_REASON_CHARS = 2000
MAX_NOTE_CHARS = 2000


def prompt_version_propose(
    *,
    agent: Agent,
    changes: dict | Callable[[dict], dict],
    actor: Actor,
    reason: str = "",
    mode: str = "pending",
    expected_live: int | None = None,
) -> PromptVersion:
    """Record a change to what `agent` is told: the only way a snapshot changes.

    `changes` maps snapshot keys to their whole new value (`identity` merges per field;
    `sections` is the full ordered list), or is a function of the live snapshot that
    returns them (called with live as it is under the agent's lock). `pending` leaves the live agent untouched
    until a person approves; `live` applies at once and needs the publish right. A
    sandbox agent's changes apply at once (nobody could review a hidden row). A change
    identical to live records nothing (IdenticalToLive); one identical to the
    proposer's own open proposal returns that proposal.

    `expected_live`: the live version number the caller based the change on (a form's
    hidden field, `If-Match`); another one is live now → `VersionMismatch`, nothing
    recorded. Without it the change applies to live as it is under the lock.
    """
    if mode not in PROPOSAL_MODES:
        raise ValidationError({"mode": f"Unknown mode '{mode}'; use pending or live."})
    reason = require_text(reason, field="reason", max_chars=MAX_REASON_CHARS)
    require_visible(actor, agent.workspace)
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.PROPOSE, agent.workspace)
    applies_now = agent.is_sandbox or mode == "live"
    if mode == "live" and not agent.is_sandbox:
        actor.require(Verb.PUBLISH, agent.workspace)
        if agent.workspace.every_change_needs_review:
            every = gettext(
                "Workspace '%(workspace)s' requires a second person for every change: propose it (mode pending)."
            )
            raise PermissionDenied(every % {"workspace": agent.workspace.slug})
    # The new snapshot and its size, worked out before the lock from live as the caller
    # read it (a large prompt's diff takes a while: the agent's lock must not wait on it).
    seen = agent.live_version if Agent.live_version.is_cached(agent) else None
    prepared = _prepared(seen, changes) if seen is not None else None
    with transaction.atomic():
        # The agent's row lock serialises proposals and decisions on one agent.
        agent = agent_lock(agent, expected_live=expected_live)
        live = require_live(agent)
        if prepared is None or seen.pk != live.pk:  # live moved since: again, from it
            prepared = _prepared(live, changes)
        snapshot, stats = prepared
        if is_empty_prompt(snapshot):
            raise ValidationError(
                {"snapshot": gettext("The agent would be told nothing: give an identity, sections or a prompt.")}
            )
        if snapshot["preset"] != live.snapshot["preset"]:
            snapshot_preset(agent, snapshot["preset"])  # a preset of its workspace, as a field error
        if actor.kind == Actor.AGENT:
            _require_narrowing(live.snapshot, snapshot)
        digest = content_hash(snapshot)
        if digest == live.content_hash:
            raise IdenticalToLive(f"Identical to live version {live.number}; nothing recorded.")
        if applies_now and not agent.is_sandbox:
            _require_publishable(agent, live.snapshot, snapshot)
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


def _require_narrowing(live: dict, snapshot: dict) -> None:
    """An agent's own proposal may reword and narrow, never widen its power (the
    `power` tier): whoever it acts for, a person proposes that. The message is read by
    the model, so it says what widened and what it may do instead."""
    widening = widening_reasons(live, snapshot)
    if widening:
        raise PermissionDenied(
            f"An agent may not widen its own power ({'; '.join(reason.line for reason in widening)}). "
            "You may propose wording changes and narrowing ones (removing a tool, lowering a limit); "
            "ask a person to propose this one."
        )


def _require_publishable(agent: Agent, live: dict, snapshot: dict) -> None:
    """The publish right skips review only where the change's tier asks for no more than
    one approval and no wait: a workspace that wants two people for what widens power
    gets them, whoever proposes."""
    tier, reasons = change_tier(live, snapshot)
    rule = approval_policy_get(workspace=agent.workspace).rule(tier)
    if not publish_skips_review(rule):
        needs = f"{rule.approvals} approvals" if rule.approvals > 1 else f"a {rule.wait_minutes}-minute wait"
        why = "; ".join(reason.line for reason in reasons if reason.tier == tier)
        raise PermissionDenied(
            f"This change is in the {tier} tier ({why}), which needs {needs} under workspace "
            f"'{agent.workspace.slug}''s approval policy: propose it (mode pending)."
        )


def _prepared(live: PromptVersion, changes: dict | Callable[[dict], dict]) -> tuple[dict, dict]:
    """The snapshot `changes` make of `live`, and its diff stats against it."""
    snapshot = apply_changes(live.snapshot, changes(live.snapshot) if callable(changes) else changes)
    return snapshot, diff_stats(live.snapshot, snapshot)


def prompt_version_approve(
    *,
    version: PromptVersion,
    actor: Actor,
    note: str = "",
    expected_live: int | None = None,
    confirm_stale: bool = False,
    may_revert: Collection[int] | None = None,
    confirm_regressions: Iterable[str] = (),
    live_at: datetime | None = None,
) -> PromptVersion:
    """Approve a pending proposal: one approval of the quorum its tier needs under the
    workspace's approval policy (distinct people, none of them the proposer or the
    creator of the proposing key). The last required approval puts it live, or
    schedules it for the latest `live_at` an approver asked (the tier's wait time is a
    minimum); before that it stays pending (`approval_state` says "1 of 2 approvals").

    `expected_live`: the live version number the reviewer saw; another one is live now
    → `StaleProposal`, so they look at the change again. A stale proposal (live moved
    since it was proposed) needs `confirm_stale=True`, which holds for `expected_live`
    only. `may_revert`
    (ids, for bulk approval) limits which later versions the approval may undo. Where
    the workspace blocks approval on regressions, `confirm_regressions` must name every
    test case the proposal fails and live passes."""
    return _decide(
        version=version,
        actor=actor,
        note=note,
        approve=True,
        expected_live=expected_live,
        stale=_StaleConsent(confirm_stale, may_revert),
        confirm_regressions=confirm_regressions,
        live_at=require_schedule(live_at),
    )


def prompt_version_reject(*, version: PromptVersion, actor: Actor, note: str) -> PromptVersion:
    """Reject a pending proposal; it is never applied. A note saying why is required.
    Where the tier is not consensus, the rejection is recorded and the proposal is
    rejected once rejections are as many as the approvals it needs."""
    if not isinstance(note, str) or not note.strip():
        raise ValidationError({"note": gettext("Say why you reject it: the proposer reads this note.")})
    return _decide(version=version, actor=actor, note=note, approve=False, stale=_StaleConsent(True, None))


@dataclass(frozen=True)
class _StaleConsent:
    confirmed: bool
    may_revert: Collection[int] | None


def _decide(
    *,
    version: PromptVersion,
    actor: Actor,
    note: str,
    approve: bool,
    stale: _StaleConsent,
    expected_live: int | None = None,
    confirm_regressions: Iterable[str] = (),
    live_at: datetime | None = None,
) -> PromptVersion:
    note = require_text(note, field="note", max_chars=MAX_NOTE_CHARS)
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.DECIDE, version.workspace)
    with transaction.atomic():
        agent, version = _lock_pending(version)
        actor.require_may_decide(version.proposer_identity)
        if approve:
            _require_live_seen(agent, version, expected_live)
        if approve and agent.live_version_id != version.base_version_id:
            _require_stale_consent(agent, version, stale)
        if approve:
            evidence_require_confirmed(version=version, confirmed=confirm_regressions)
        # Recorded one by one; the last required decision decides (the locks above
        # make "the last" one person, however many approve at once).
        decision_apply(agent=agent, version=version, actor=actor, approve=approve, note=note, live_at=live_at)
    return version


def _require_live_seen(agent: Agent, version: PromptVersion, expected_live: int | None) -> None:
    """The reviewer decided on the page as it was at `expected_live`: if another version
    went live since, what they approve is not what they looked at."""
    live_number = agent.live_version.number if agent.live_version else None
    if expected_live is None or expected_live == live_number:
        return
    labels = [f"v{v.number}" for v in prompt_version_reverts(version)]
    raise StaleProposal(
        f"You looked at live v{expected_live}, but v{live_number} is live now: review the proposal again and "
        "approve it against the live version you see.",
        extra={"reverts": labels, "live_number": live_number, "live_version": live_number},
    )


def _require_stale_consent(agent: Agent, version: PromptVersion, stale: _StaleConsent) -> None:
    """Approving `version` would undo what went live since it was proposed: only with a
    confirmation given for the live version as it is now, covering what it reverts."""
    reverted = prompt_version_reverts(version)
    labels = [f"v{v.number}" for v in reverted]
    live_number = agent.live_version.number if agent.live_version else None
    base = f"v{version.base_version.number}" if version.base_version_id else "no live version"
    if not stale.confirmed:
        raise StaleProposal(
            f"Version {version.number} was proposed against {base}, but the live version moved since; "
            f"approving would revert {', '.join(labels) or 'later changes'}. Confirm to approve.",
            extra={"reverts": labels, "live_number": live_number},
        )
    if stale.may_revert is not None:
        unlisted = [f"v{v.number}" for v in reverted if v.pk not in stale.may_revert]
        if unlisted:
            raise StaleProposal(
                f"Approving version {version.number} would revert {', '.join(unlisted)}, which is not in the "
                "selection; approve it from its review page to confirm that.",
                extra={"reverts": labels, "live_number": live_number},
            )


def prompt_version_withdraw(*, version: PromptVersion, actor: Actor) -> PromptVersion:
    """The proposer takes back their pending proposal."""
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.WITHDRAW, version.workspace)
    with transaction.atomic():
        version = _lock_pending(version)[1]
        if not actor.answers_for(version.proposer_identity):
            raise PermissionDenied(gettext("Only the proposer may withdraw a proposal; reviewers reject it instead."))
        version.status = PromptVersion.Status.WITHDRAWN
        version.reviewed_at = timezone.now()
        version.go_live_at = None
        stamp(version, actor=actor, reason="withdrawn")
        version.save(update_fields=["status", "reviewed_at", "go_live_at", "updated_at"])
    return version


def _lock_pending(version: PromptVersion) -> tuple[Agent, PromptVersion]:
    """Inside a transaction: `version`'s agent and the version, locked and read again,
    or a conflict when it is no longer pending. Agent first, then version, always in
    this order: two people deciding (or withdrawing) at once serialise on the agent, and
    the second sees the first's decision; read again under the locks, a decision made
    while we waited counts."""
    agent = agent_lock(version.agent)
    version = PromptVersion.all_objects.select_for_update().get(pk=version.pk)
    _require_pending(version, agent)
    return agent, version


def _require_pending(version: PromptVersion, agent: Agent) -> None:
    """A decision lost to one made first is a conflict that says where things stand now
    (`agent` as read under its lock)."""
    if version.is_pending:
        return
    by = f" by {version.reviewed_by.get_username()}" if version.reviewed_by else ""
    raise AlreadyDecided(
        f"Version {version.number} of '{agent.key}' was already {version.status}{by} "
        f"at {version.reviewed_at:%Y-%m-%d %H:%M:%S} UTC.",
        extra={"status": version.status, "live_version": agent.live_version.number if agent.live_version else None},
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
    *, version: PromptVersion, actor: Actor, reason: str = "", mode: str = "pending", expected_live: int | None = None
) -> PromptVersion:
    """Propose (or, with publish and `live`, apply) an old snapshot as a new version.
    History is never rewritten: the old version stays as it was. `expected_live` as for
    `prompt_version_propose`."""
    require_visible(actor, version.workspace, "version")
    changes = {key: version.snapshot[key] for key in SNAPSHOT_KEYS}
    changes["runtime_policy"] = upgrade_stored_policy(changes["runtime_policy"])  # an old version's names
    label = f"restore of v{version.number}"
    return prompt_version_propose(
        agent=version.agent,
        changes=changes,
        actor=actor,
        reason=f"{label}: {reason}" if reason else label,
        mode=mode,
        expected_live=expected_live,
    )


def agent_clone(*, version: PromptVersion, actor: Actor, key: str, name: str, description: str = "") -> Agent:
    """A new agent from a version of another (policy, tools and skills included), with
    its own version 1. Only a version that was once live, unless the actor may publish:
    a clone must not put live what no reviewer approved."""
    require_visible(actor, version.workspace, "version")
    source = version.agent
    if version.status != PromptVersion.Status.APPROVED and not actor.may_publish(source.workspace):
        never = gettext(
            "Version %(number)s of '%(agent)s' was never live: clone a version that was live, "
            "or ask someone who may publish."
        )
        raise PermissionDenied(never % {"number": version.number, "agent": source.key})
    return agent_create(
        workspace=source.workspace,
        actor=actor,
        key=key,
        name=name,
        description=description or source.description,
        snapshot={**version.snapshot, "runtime_policy": upgrade_stored_policy(version.snapshot["runtime_policy"])},
        is_sandbox=source.is_sandbox,
        reason=f"clone of {source.key} v{version.number}",
    )
