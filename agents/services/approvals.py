"""The approval policy (how much review each risk tier needs) and the quorum: each
person's approval or rejection recorded one by one, the proposal decided on the last
required one, and scheduled go-live (beat puts a fully approved version live at its
time). `prompt_version_approve`/`_reject` (proposals.py) call `decision_apply` under
the agent's and the version's locks; nothing else decides a proposal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext, ngettext

from agents.models import TIER_FIELDS, Agent, ApprovalPolicy, PromptVersion, TierRule, VersionDecision
from agents.services.notifications import notify
from agents.services.versions import agent_lock, version_go_live
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError
from aihummer.history import stamp
from aihummer.models import Workspace
from aihummer.service_checks import require_visible

# How far ahead an approver may schedule a go-live.
MAX_SCHEDULE_AHEAD = timedelta(days=90)
# Versions one beat tick puts live at most; the rest wait for the next tick (each is
# one short transaction on its agent's lock).
GO_LIVE_BATCH = 100
POLICY_FIELDS = tuple(f"{tier}_{name}" for tier in PromptVersion.Tier.values for name in TIER_FIELDS)


class AlreadyApprovedByYou(ApplicationError):
    """The same person deciding a proposal twice: the quorum counts people, not clicks."""


# --- the policy -----------------------------------------------------------------------
def approval_policy_get(*, workspace: Workspace) -> ApprovalPolicy:
    """The workspace's policy; the default (unsaved) when it has none yet."""
    policy = ApprovalPolicy.objects.filter(workspace=workspace).first()
    return policy or ApprovalPolicy(workspace=workspace)


def approval_policy_update(*, workspace: Workspace, actor: Actor, reason: str = "", **fields: object) -> ApprovalPolicy:
    """Change the workspace's approval policy (admins: the manage right). Unknown fields
    and values out of range are field errors; history records who and why."""
    require_visible(actor, workspace, "workspace")
    actor.require(Verb.MANAGE, workspace)
    unknown = sorted(set(fields) - set(POLICY_FIELDS))
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "Unknown field of the approval policy."))
    with transaction.atomic():
        # The workspace row serialises two admins creating the policy at once.
        Workspace.objects.select_for_update().get(pk=workspace.pk)
        policy = approval_policy_get(workspace=workspace)
        for name, value in fields.items():
            setattr(policy, name, value)
        policy.full_clean(exclude=["workspace"], validate_unique=False)
        stamp(policy, actor=actor, reason=reason or "approval policy changed")
        policy.save()
    return policy


def publish_skips_review(rule: TierRule) -> bool:
    """Whether the publish right may put a change of `rule`'s tier live at once: only
    where one approval and no wait is all the tier asks."""
    return rule.approvals <= 1 and not rule.wait_minutes


def approval_rule(version: PromptVersion) -> TierRule:
    """What `version`'s tier needs under its workspace's policy (one query, none where
    the caller selected `workspace__approval_policy` with the version)."""
    workspace = version.workspace
    try:
        policy = workspace.approval_policy
    except ApprovalPolicy.DoesNotExist:
        policy = ApprovalPolicy(workspace=workspace)
    return policy.rule(version.tier)


# --- where a proposal stands ----------------------------------------------------------
@dataclass(frozen=True)
class ApprovalState:
    rule: TierRule
    decisions: list[VersionDecision]

    @property
    def approvals(self) -> list[VersionDecision]:
        return [d for d in self.decisions if d.kind == VersionDecision.Kind.APPROVE]

    @property
    def rejections(self) -> list[VersionDecision]:
        return [d for d in self.decisions if d.kind == VersionDecision.Kind.REJECT]

    @property
    def summary(self) -> str:
        """ "1 of 2 approvals", in the reader's language."""
        needed = self.rule.approvals
        return ngettext("%(given)d of %(needed)d approval", "%(given)d of %(needed)d approvals", needed) % {
            "given": len(self.approvals),
            "needed": needed,
        }

    @property
    def recorded_summary(self) -> str:
        """The summary as history records keep it: in LANGUAGE_CODE, whoever decided."""
        with translation.override(settings.LANGUAGE_CODE):
            return self.summary

    def refusal_for(self, actor: Actor) -> str | None:
        """Why `actor` has no decision left to give here (the quorum counts people)."""
        mine = next((d for d in self.decisions if actor.person is not None and d.reviewer_id == actor.person.pk), None)
        if mine is None:
            return None
        said = (
            gettext("You approved this version at %(at)s UTC (%(summary)s): the next decision is another person's.")
            if mine.kind == VersionDecision.Kind.APPROVE
            else gettext(
                "You rejected this version at %(at)s UTC (%(summary)s): the next decision is another person's."
            )
        )
        return said % {"at": f"{mine.created_at:%Y-%m-%d %H:%M}", "summary": self.summary}

    def as_json(self) -> dict:
        return {
            "tier": self.rule.tier,
            "given": len(self.approvals),
            "needed": self.rule.approvals,
            "consensus": self.rule.consensus,
            "wait_minutes": self.rule.wait_minutes,
            "summary": self.summary,
            "decisions": [
                {
                    "kind": d.kind,
                    "reviewer": d.reviewer.get_username(),
                    "at": d.created_at.isoformat(),
                    "seen_live_number": d.seen_live_number,
                    "live_at": d.live_at.isoformat() if d.live_at else None,
                }
                for d in self.decisions
            ],
        }


def approval_state(version: PromptVersion) -> ApprovalState:
    """Who approved or rejected `version` so far, and what its tier needs (2 queries)."""
    decisions = list(VersionDecision.objects.filter(version=version).select_related("reviewer"))
    return ApprovalState(approval_rule(version), decisions)


# --- deciding -------------------------------------------------------------------------
def decision_apply(
    *, agent: Agent, version: PromptVersion, actor: Actor, approve: bool, note: str, live_at: datetime | None = None
) -> bool:
    """Record `actor`'s approval or rejection of `version` (the caller holds the agent's
    then the version's lock, and checked four eyes and staleness) and decide it when it
    is the last one needed: live now, or at its scheduled time; rejected. Returns
    whether the proposal was decided (False: it stays pending, short of its quorum)."""
    if VersionDecision.objects.filter(version=version, reviewer=actor.person).exists():
        raise AlreadyApprovedByYou(
            f"You already decided version {version.number}: the next decision is another person's.",
            extra={"approvals": approval_state(version).as_json()},
        )
    if approve and version.go_live_at is not None:
        raise AlreadyDecided(
            f"Version {version.number} has every approval it needs and goes live at "
            f"{version.go_live_at:%Y-%m-%d %H:%M} UTC.",
            extra={"status": version.status, "go_live_at": version.go_live_at.isoformat()},
        )
    now = timezone.now()
    VersionDecision.objects.create(
        workspace_id=version.workspace_id,
        version=version,
        kind=VersionDecision.Kind.APPROVE if approve else VersionDecision.Kind.REJECT,
        reviewer=actor.person,
        seen_live_number=agent.live_number,
        note=note.strip(),
        live_at=live_at,
        created_at=now,
    )
    state = approval_state(version)
    if approve:
        return _after_approval(agent, version, actor, state, note, now)
    if state.rule.consensus or len(state.rejections) >= state.rule.approvals:
        _decide(version, actor, PromptVersion.Status.REJECTED, note, now)
        return True
    _progress(version, actor, f"rejection {len(state.rejections)}; {state.recorded_summary}")
    return False


def _after_approval(
    agent: Agent, version: PromptVersion, actor: Actor, state: ApprovalState, note: str, now: datetime
) -> bool:
    if len(state.approvals) < state.rule.approvals:
        _progress(version, actor, state.recorded_summary)
        return False
    asked = [d.live_at for d in state.approvals if d.live_at]
    at = max([*asked, version.created_at + state.rule.wait])
    if at > now:
        version.go_live_at, version.go_live_problem = at, ""
        stamp(version, actor=actor, reason=f"{state.recorded_summary}; live at {at:%Y-%m-%d %H:%M} UTC")

        version.save(update_fields=["go_live_at", "go_live_problem", "updated_at"])
        return False
    _decide(version, actor, PromptVersion.Status.APPROVED, note, now)
    version_go_live(agent=agent, version=version, actor=actor)
    return True


def _progress(version: PromptVersion, actor: Actor, reason: str) -> None:
    """A decision short of the quorum: the version's history says so."""
    stamp(version, actor=actor, reason=reason)
    version.save(update_fields=["updated_at"])


def _decide(version: PromptVersion, actor: Actor, status: str, note: str, now: datetime) -> None:
    version.status = status
    version.reviewed_by = actor.person
    version.reviewed_at = now
    version.review_note = note.strip()
    version.go_live_at = None
    stamp(version, actor=actor, reason=status)
    version.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note", "go_live_at", "updated_at"])
    notify(version, "decided")


def require_schedule(live_at: datetime | None) -> datetime | None:
    """`live_at` checked: in the future, at most `MAX_SCHEDULE_AHEAD` away."""
    if live_at is None:
        return None
    if not isinstance(live_at, datetime) or timezone.is_naive(live_at):
        raise ValidationError({"live_at": gettext("Give a date and time with its time zone (ISO 8601).")})
    now = timezone.now()
    if live_at <= now:
        raise ValidationError({"live_at": gettext("Give a time in the future, or leave it empty to go live at once.")})
    if live_at > now + MAX_SCHEDULE_AHEAD:
        ahead = gettext("At most %(days)d days ahead.") % {"days": MAX_SCHEDULE_AHEAD.days}
        raise ValidationError({"live_at": ahead})
    return live_at


# --- scheduled go-live (beat) ---------------------------------------------------------
def prompt_versions_go_live_due() -> dict[str, int]:
    """Beat: put live every fully approved version whose time came, unless the live
    version moved since its last approval (then it stays pending with a reason, for a
    reviewer to look again). Returns counts; safe to run twice (each version is
    re-checked under its locks)."""
    due = list(
        PromptVersion.all_objects.pending()
        .filter(go_live_at__lte=timezone.now())
        .order_by("go_live_at", "pk")
        .values_list("pk", flat=True)[:GO_LIVE_BATCH]
    )
    counts = {"live": 0, "left": 0}
    for pk in due:
        outcome = _go_live_scheduled(pk)
        if outcome:
            counts[outcome] += 1
    return counts


def _go_live_scheduled(pk: int) -> str | None:
    actor = Actor.for_operator(name="schedule", surface="task")
    with transaction.atomic():
        # Agent, then version: the order of every decision on an agent.
        agent_id = PromptVersion.all_objects.values_list("agent_id", flat=True).get(pk=pk)
        agent = agent_lock(Agent(pk=agent_id))
        version = PromptVersion.all_objects.select_for_update().get(pk=pk)
        if not version.is_pending or version.go_live_at is None or version.go_live_at > timezone.now():
            return None  # decided, withdrawn or rescheduled while we waited
        last = version.decisions.filter(kind=VersionDecision.Kind.APPROVE).order_by("-created_at", "-id").first()
        if agent.live_number != last.seen_live_number:
            version.go_live_at = None
            version.go_live_problem = (
                f"Not put live at its scheduled time: v{agent.live_number} went live after it was approved "
                f"against v{last.seen_live_number}. Review it again."
            )
            stamp(version, actor=actor, reason="scheduled go-live skipped: stale")
            version.save(update_fields=["go_live_at", "go_live_problem", "updated_at"])
            return "left"
        version.status = PromptVersion.Status.APPROVED
        version.reviewed_by = last.reviewer
        version.reviewed_at = timezone.now()
        version.review_note = last.note
        version.go_live_at = None
        stamp(version, actor=actor, reason="approved: live at its scheduled time")
        version.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note", "go_live_at", "updated_at"])
        version_go_live(agent=agent, version=version, actor=actor)
        notify(version, "decided")
    return "live"
