"""Stale proposals rebased: when the live version moved under a pending proposal and
the two changes touch different parts, the proposal's change is carried onto live as a
new pending version (evidence run again, approvals start over) and the old one is
withdrawn, pointing at it. Overlapping changes are refused with each conflicting part
three ways (agents.rebase)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agents.models import Agent, EvidenceRun, PromptVersion
from agents.rebase import Merge, three_way
from agents.services.evidence import evidence_request
from agents.services.notifications import notify
from agents.services.proposals import IdenticalToLive
from agents.services.versions import agent_lock, version_record
from agents.snapshot import content_hash
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError
from aihummer.history import stamp
from aihummer.service_checks import require_live, require_visible


class NotStale(ApplicationError):
    """Only a proposal the live version moved under is rebased."""


class RebaseConflict(ApplicationError):
    """Both the proposal and live changed the same part: a person merges it."""


def prompt_version_rebase_plan(version: PromptVersion) -> Merge | None:
    """What rebasing `version` onto the live version would give (the merged snapshot,
    or the conflicting parts three ways); None when it is not a stale proposal."""
    live = version.agent.live_version
    if not version.is_pending or version.base_version is None or live is None or live.pk == version.base_version_id:
        return None
    return three_way(version.base_version.snapshot, live.snapshot, version.snapshot)


def prompt_version_rebase(*, version: PromptVersion, actor: Actor, expected_live: int | None = None) -> PromptVersion:
    """Carry a stale proposal's change onto the live version: a new pending version
    (its proposer still the proposer; the rebaser may not approve it either), its
    evidence requested, no approval carried over; the old one withdrawn with a link to
    the new. Refused (`RebaseConflict`, listing the parts) when both changed a part."""
    require_visible(actor, version.workspace, "version")
    actor.require(Verb.PROPOSE, version.workspace)
    with transaction.atomic():
        # Agent, then version: the lock order of every decision on an agent.
        agent = agent_lock(version.agent, expected_live=expected_live)
        version = (
            PromptVersion.all_objects.select_related("base_version").select_for_update(of=("self",)).get(pk=version.pk)
        )
        live = require_live(agent)
        merge = _plan(agent, version, live)
        if content_hash(merge.snapshot) == live.content_hash:
            raise IdenticalToLive(f"Version {version.number}'s change is already live in v{live.number}: withdraw it.")
        rebased = version_record(
            agent=agent,
            snapshot=merge.snapshot,
            actor=actor,
            status=PromptVersion.Status.PENDING,
            reason=f"{version.reason} (v{version.number} rebased onto v{live.number})".strip(),
            base_version=live,
            proposer_of=version,
        )
        version.status = PromptVersion.Status.WITHDRAWN
        version.reviewed_at = timezone.now()
        version.go_live_at = None
        version.superseded_by = rebased
        stamp(version, actor=actor, reason=f"rebased onto v{live.number} as v{rebased.number}")
        version.save(update_fields=["status", "reviewed_at", "go_live_at", "superseded_by", "updated_at"])
        notify(rebased, "proposed")
        evidence_request(version=rebased, trigger=EvidenceRun.Trigger.PROPOSED)
    return rebased


def _plan(agent: Agent, version: PromptVersion, live: PromptVersion) -> Merge:
    if not version.is_pending:
        raise AlreadyDecided(
            f"Version {version.number} of '{agent.key}' was already {version.status}.", extra={"status": version.status}
        )
    if version.base_version is None or version.base_version_id == live.pk:
        raise NotStale(f"Version {version.number} was proposed against live v{live.number}: review it as it is.")
    merge = three_way(version.base_version.snapshot, live.snapshot, version.snapshot)
    if not merge.clean:
        parts = ", ".join(conflict.part for conflict in merge.conflicts)
        raise RebaseConflict(
            f"Version {version.number} and live v{live.number} both changed {parts}: it cannot be rebased "
            "automatically. Propose the merged text by hand (the review page shows base, live and proposal).",
            extra={"conflicts": [conflict.part for conflict in merge.conflicts]},
        )
    return merge
