"""Approval requests (issue 30): a person decides a held tool call; a task carries the
decision out exactly once and resumes the turn that waits for it.

Decisions (`approval_request_approve` / `_reject`, the clock's `approval_requests_expire`)
lock the request's row, re-check it is pending, and enqueue the carrying out on commit.
Carrying out (`approval_request_carry_out`, a task, safe to deliver twice) walks the
request's `progress` with conditional updates, each its own commit:

    ""  ─claim─▶ effect (lease) ─mark─▶ sending ─answer recorded─▶ recorded ─claim─▶ resuming (lease) ─▶ resumed
                                          └─ no answer, or its worker died ─▶ unknown ─a person─▶ "" or recorded

The effect runs under the request's `ledger_key` (the SMTP Message-ID, the HTTP
Idempotency-Key) and its result is written before the turn resumes: a resumed turn
reads the recorded result and never fires the call again. A worker that dies holding a
lease leaves its phase to the sweep (`approval_requests_sweep`, beat), which claims it
again once the lease has passed. A worker that died before the `sending` mark (its own
commit, immediately before the one network write after which the receiver may act)
made no effect: the call is made again, with the same ledger key. One that died after
it, or an attempt whose answer never came, may have acted, which only the receiver
knows: the request is `unknown` and waits for a person (`approval_request_resend`, or
`approval_request_confirm` when it did happen), never sent again by itself. After the
effect is recorded, only the turn is resumed again.

Not exported from `agents.services` (this module calls the turn loop, which imports
that package). It imports the runtime in the functions that carry out and resume: the
admin loads this module in every process, and the runtime brings the provider
adapters, the metrics and the policy's pydantic models.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, AgentTurn, ApprovalRequest
from aihummer.actors import Actor, Verb
from aihummer.exceptions import AlreadyDecided, ApplicationError, NotFound
from aihummer.models import Workspace
from aihummer.tasks import enqueue

logger = logging.getLogger(__name__)

CARRY_OUT_TASK = "agents.approval_request_carry_out"  # by name: agents.tasks imports this module
SWEEP_BATCH = 200

Status, Progress, Resolution = ApprovalRequest.Status, ApprovalRequest.Progress, ApprovalRequest.Resolution


class ArgumentsChanged(ApplicationError):
    """The caller reviewed other arguments than the request holds."""


FOUR_EYES = _("You started the turn or run this call comes from: another person must decide it (four eyes).")


# --- selectors --------------------------------------------------------------------------
def approval_request_list(*, actor: Actor, workspace: Workspace | None = None, status: str = "") -> QuerySet:
    """The requests `actor` may read, newest first (no sandbox rows: people decide)."""
    requests = ApprovalRequest.objects.select_related("workspace", "reviewed_by", "started_by", "resolved_by")
    workspace_ids = actor.workspace_ids(Verb.READ)
    if workspace_ids is not None:
        requests = requests.filter(workspace_id__in=workspace_ids)
    if workspace is not None:
        requests = requests.filter(workspace=workspace)
    if status:
        requests = requests.filter(status=status)
    return requests.defer("resume_state").order_by("-created_at", "-pk")


def approval_request_get(*, actor: Actor, pk: object) -> ApprovalRequest:
    """One request `actor` may read; another workspace's answers as a missing one."""
    try:
        return approval_request_list(actor=actor).get(pk=int(pk))
    except (ApprovalRequest.DoesNotExist, TypeError, ValueError):
        raise NotFound(f"No approval request '{pk}'.") from None


# --- decisions --------------------------------------------------------------------------
def approval_request_approve(
    *, request: ApprovalRequest, actor: Actor, note: str = "", arguments_hash: str | None = None
) -> ApprovalRequest:
    """Approve the call exactly as recorded: it is carried out once, with these
    arguments, after the commit. `arguments_hash` (what the reviewer was shown) must
    still be the request's. People only; whoever answers for the call may not."""
    return _decide(request, actor, Status.APPROVED, note, arguments_hash)


def approval_request_reject(*, request: ApprovalRequest, actor: Actor, note: str = "") -> ApprovalRequest:
    """Refuse the call: nothing runs; the model is told it was refused (and why)."""
    return _decide(request, actor, Status.REJECTED, note, None)


def _check_decider(request: ApprovalRequest, actor: Actor, note: str) -> None:
    workspace = request.workspace
    if not actor.belongs_to(workspace) or request.is_sandbox:
        raise NotFound(f"No approval request '{request.pk}'.")
    actor.require(Verb.DECIDE, workspace)  # people only: keys, agents, runs and the operator never decide
    if actor.answers_for(request.proposer_identity):
        raise PermissionDenied(FOUR_EYES)
    if not isinstance(note, str) or len(note) > 2000:
        raise ValidationError({"note": gettext("At most %(count)d characters.") % {"count": 2000}})


def _decide(
    request: ApprovalRequest, actor: Actor, status: str, note: str, arguments_hash: str | None
) -> ApprovalRequest:
    _check_decider(request, actor, note)
    with transaction.atomic():
        # Lock, then re-check: of two decisions at once, one wins, the other is told.
        locked = ApprovalRequest.all_objects.select_for_update().get(pk=request.pk)
        if not locked.is_pending:
            raise AlreadyDecided(f"Approval request {locked.pk} was already {locked.status}.")
        if locked.expires_at <= timezone.now():
            _expire(locked)
            raise AlreadyDecided(f"Approval request {locked.pk} expired at {locked.expires_at:%Y-%m-%d %H:%M} UTC.")
        if arguments_hash is not None and arguments_hash != locked.arguments_hash:
            raise ArgumentsChanged(
                f"Approval request {locked.pk} holds other arguments than the ones reviewed: reload it, review again."
            )
        locked.status, locked.reviewed_by, locked.reviewed_at = status, actor.person, timezone.now()
        locked.review_note = note.strip()
        locked.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_note", "updated_at"])
        enqueue(CARRY_OUT_TASK, locked.pk)
    return locked


def approval_request_resend(*, request: ApprovalRequest, actor: Actor, note: str = "") -> ApprovalRequest:
    """A call whose outcome is unknown, made again on a person's decision: the same
    arguments and ledger key (a receiver that keeps keys drops it as a duplicate)."""
    return _resolve(request, actor, Resolution.RESENT, note)


def approval_request_confirm(*, request: ApprovalRequest, actor: Actor, note: str = "") -> ApprovalRequest:
    """A call whose outcome is unknown, confirmed as carried out by a person (who asked
    the receiver): recorded as done, the turn resumes with that, nothing is sent again."""
    return _resolve(request, actor, Resolution.CONFIRMED, note)


def _resolve(request: ApprovalRequest, actor: Actor, resolution: str, note: str) -> ApprovalRequest:
    _check_decider(request, actor, note)
    now = timezone.now()
    with transaction.atomic():
        # Lock, then re-check: of two people at once, one decides, the other is told.
        locked = ApprovalRequest.all_objects.select_for_update().get(pk=request.pk)
        if not locked.is_in_doubt:
            raise AlreadyDecided(
                gettext("The outcome of approval request %(number)s is not in doubt any more.") % {"number": locked.pk}
            )
        locked.resolution, locked.resolved_by, locked.resolved_at = resolution, actor.person, now
        fields = ["progress", "resolution", "resolved_by", "resolved_at", "result", "effect_ok", "updated_at"]
        if note.strip():
            locked.review_note = f"{locked.review_note}\n{note.strip()}".strip()
            fields.append("review_note")
        if resolution == Resolution.RESENT:
            locked.progress, locked.result, locked.effect_ok = Progress.NONE, "", None
        else:
            who = actor.person.get_username() if actor.person else actor.identity_label
            locked.progress, locked.effect_ok, locked.executed_at = Progress.RECORDED, True, now
            locked.result = _confirmed_text(locked, who)
            fields.append("executed_at")
        locked.save(update_fields=fields)
        enqueue(CARRY_OUT_TASK, locked.pk)
    return locked


def _confirmed_text(request: ApprovalRequest, who: str) -> str:
    from agents.runtime.tools import REGISTRY

    tool_class = REGISTRY.get(request.tool_name)
    try:
        tool = tool_class()
        return tool.confirmed(tool.parse(request.arguments), str(request.ledger_key), by=who)
    except Exception:  # a tool gone since: still a readable outcome
        return f"{request.tool_name} was carried out (confirmed by {who}); its answer is not known."


def _expire(locked: ApprovalRequest) -> None:
    # Under the row's lock: an expired request is a refusal, carried out like one.
    locked.status = Status.EXPIRED
    locked.save(update_fields=["status", "updated_at"])
    enqueue(CARRY_OUT_TASK, locked.pk)


def approval_requests_expire(*, now: datetime | None = None) -> int:
    """Refuse every pending request past its expiry (each in its own transaction);
    returns how many. Safe to run twice."""
    now = now or timezone.now()
    ids = list(
        ApprovalRequest.all_objects.pending().filter(expires_at__lte=now).values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    expired = 0
    for pk in ids:
        with transaction.atomic():
            locked = ApprovalRequest.all_objects.select_for_update().filter(pk=pk, status=Status.PENDING).first()
            if locked is not None:
                _expire(locked)
                expired += 1
    return expired


def approval_requests_withdraw(*, run_id: object, note: str) -> int:
    """Refuse the pending requests of a run that ended (in the caller's transaction):
    carried out as refusals, so their turns end too. Returns how many."""
    ids = list(ApprovalRequest.all_objects.pending().filter(run_id=run_id).values_list("pk", flat=True))
    ApprovalRequest.all_objects.filter(pk__in=ids, status=Status.PENDING).update(
        status=Status.EXPIRED, review_note=note, updated_at=timezone.now()
    )
    for pk in ids:
        enqueue(CARRY_OUT_TASK, pk)
    return len(ids)


def approval_requests_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Beat: expire what nobody decided in time, and send again the carrying out of
    decided requests whose worker died (lease passed) or whose task was lost."""
    now = now or timezone.now()
    expired = approval_requests_expire(now=now)
    quiet = now - timedelta(seconds=settings.AIHUMMER_APPROVAL_EFFECT_LEASE_SEC)
    stalled = ApprovalRequest.all_objects.unfinished_work().filter(
        Q(progress__in=[Progress.EFFECT, Progress.SENDING, Progress.RESUMING], progress_until__lt=now)
        | Q(progress__in=[Progress.NONE, Progress.RECORDED], updated_at__lt=quiet)
    )
    ids = list(stalled.order_by("updated_at").values_list("pk", flat=True)[:SWEEP_BATCH])
    for pk in ids:
        enqueue(CARRY_OUT_TASK, pk)
    return {"expired": expired, "resent": len(ids)}


# --- carrying out -----------------------------------------------------------------------
def approval_request_carry_out(*, request_id: int) -> str:
    """Carry out a decided request and resume its turn, each phase claimed with a
    conditional update (a second delivery finds it taken and returns). Returns the
    request's progress afterwards."""
    _effect(request_id)
    _resume(request_id)
    return ApprovalRequest.all_objects.filter(pk=request_id).values_list("progress", flat=True).first() or ""


def _effect(request_id: int) -> None:
    now = timezone.now()
    if _doubt_a_lost_send(request_id, now):
        return
    lease = now + timedelta(seconds=settings.AIHUMMER_APPROVAL_EFFECT_LEASE_SEC)
    claimed = (
        ApprovalRequest.all_objects.filter(pk=request_id)
        .exclude(status=Status.PENDING)
        .filter(Q(progress=Progress.NONE) | Q(progress=Progress.EFFECT, progress_until__lt=now))
        .update(
            progress=Progress.EFFECT, progress_until=lease, effect_attempts=F("effect_attempts") + 1, updated_at=now
        )
    )
    if not claimed:
        return
    request = ApprovalRequest.all_objects.select_related("workspace").get(pk=request_id)
    attempt = ApprovalRequest.all_objects.filter(pk=request_id, effect_attempts=request.effect_attempts)

    def started() -> None:
        # Its own commit, immediately before the write after which the receiver may act:
        # from here on, an attempt that is lost is in doubt, never resent by itself.
        now = timezone.now()
        if not attempt.filter(progress=Progress.EFFECT).update(
            progress=Progress.SENDING, effect_started_at=now, updated_at=now
        ):
            raise AttemptTaken  # this worker outlived its lease: another attempt has the effect

    try:
        progress, ok, text = _outcome(request, started)
    except AttemptTaken:
        return
    now = timezone.now()
    # Recorded only while this attempt still holds the effect (a worker that outlived
    # its lease must not overwrite what a second attempt recorded); its own answer, when
    # it comes after all, stands over the doubt the sweep declared meanwhile.
    attempt.filter(progress__in=[Progress.EFFECT, Progress.SENDING, Progress.UNKNOWN]).update(
        progress=progress,
        result=text,
        effect_ok=ok,
        executed_at=now if progress == Progress.RECORDED else None,
        progress_until=None,
        updated_at=now,
    )


class AttemptTaken(Exception):
    """The effect passed to another attempt before this one began sending."""


def _doubt_a_lost_send(request_id: int, now: datetime) -> bool:
    """An attempt marked `sending` whose lease passed: its worker died between the mark
    and the record, and the receiver may have acted. In doubt: a person decides."""
    lost = (
        ApprovalRequest.all_objects.filter(pk=request_id, progress=Progress.SENDING, progress_until__lt=now)
        .values_list("effect_attempts", "effect_started_at")
        .first()
    )
    if lost is None:
        return False
    attempt, started_at = lost
    text = (
        f"Outcome unknown: attempt {attempt} handed the call to the receiver at {started_at:%Y-%m-%d %H:%M:%S} UTC "
        f"and its worker stopped before the answer was recorded. {IN_DOUBT_ADVICE}"
    )
    ApprovalRequest.all_objects.filter(pk=request_id, progress=Progress.SENDING, effect_attempts=attempt).update(
        progress=Progress.UNKNOWN, result=text, effect_ok=None, progress_until=None, updated_at=now
    )
    logger.warning("Approval request %s: the outcome of attempt %s is unknown; a person decides", request_id, attempt)
    return True


IN_DOUBT_ADVICE = (
    "It may have been carried out. Check with the receiver, then send it again (with the same ledger key) or "
    "confirm it was done."
)


def _outcome(request: ApprovalRequest, started: Callable[[], None]) -> tuple[str, bool | None, str]:
    """(the progress the attempt ends in, whether the effect happened, what the model is
    told or, in doubt, what a person is told)."""
    from agents.runtime.effects import OutcomeUnknown
    from agents.runtime.tools import REGISTRY, ToolError

    recorded = Progress.RECORDED
    who = request.reviewed_by.get_username() if request.reviewed_by_id else "a reviewer"
    if request.status == Status.REJECTED:
        why = f": {request.review_note}" if request.review_note else "."
        return recorded, None, f"Refused: {who} rejected this call{why} It was not executed; do not retry it as is."
    if request.status == Status.EXPIRED and request.review_note:  # withdrawn: its run ended
        return recorded, None, f"Refused: {request.review_note} It was not executed."
    if request.status == Status.EXPIRED:
        return (
            recorded,
            None,
            f"Refused: nobody approved this call before it expired at {request.expires_at:%Y-%m-%d %H:%M} UTC. "
            "It was not executed.",
        )
    tool_class = REGISTRY.get(request.tool_name)
    agent = _effect_agent(request)
    if tool_class is None or agent is None or not hasattr(tool_class, "perform"):
        return recorded, False, f"Not executed: '{request.tool_name}' is not available any more."
    tool = tool_class()
    try:
        arguments = tool.parse(request.arguments)
        text = tool.perform(agent=agent, arguments=arguments, ledger_key=str(request.ledger_key), started=started)
    except OutcomeUnknown as exc:
        return Progress.UNKNOWN, None, f"Outcome unknown: {exc} {IN_DOUBT_ADVICE}"
    except ToolError as exc:
        return recorded, False, str(exc)
    except AttemptTaken:
        raise
    except Exception as exc:  # a bug must still leave a recorded, readable outcome
        logger.exception("Approved request %s (%s) failed unexpectedly", request.pk, request.tool_name)
        return recorded, False, f"The call failed (internal error, {type(exc).__name__}); it was logged."
    return recorded, True, text


def _effect_agent(request: ApprovalRequest) -> Agent | None:
    return (
        Agent.all_objects.select_related("workspace__tool_policy", "tool_settings__smtp_password")
        .filter(pk=request.agent_id)
        .first()
    )


def _resume(request_id: int) -> None:
    now = timezone.now()
    lease = now + timedelta(seconds=settings.AIHUMMER_TURN_TIMEOUT_SEC + settings.AIHUMMER_APPROVAL_EFFECT_LEASE_SEC)
    claimed = (
        ApprovalRequest.all_objects.filter(pk=request_id)
        .filter(Q(progress=Progress.RECORDED) | Q(progress=Progress.RESUMING, progress_until__lt=now))
        .update(
            progress=Progress.RESUMING, progress_until=lease, resume_attempts=F("resume_attempts") + 1, updated_at=now
        )
    )
    if not claimed:
        return
    request = ApprovalRequest.all_objects.select_related("turn__version", "reviewed_by").get(pk=request_id)
    if request.turn is None or request.turn.status != AgentTurn.Status.WAITING:
        approval_request_resumed(request)  # nothing waits for it any more
        return
    # A turn whose every resume dies (its worker killed, or the resume raising) is not
    # resumed forever: as many attempts as a workflow step gets back from dead workers.
    # A step's own attempts count its resumes (`workflows.execution.step_resume`).
    allowed = 1 + settings.AIHUMMER_STEP_RECOVERIES
    if request.origin == ApprovalRequest.Origin.TURN and request.resume_attempts > allowed:
        _end_turn(
            request,
            f"The turn never finished after its approved call (request {request.pk}): its {allowed} resumes "
            "died (the worker stopped, or the resume failed). No attempts left.",
        )
        return
    resumer = RESUMERS[request.origin]
    (import_string(resumer) if isinstance(resumer, str) else resumer)(request)


def approval_request_resumed(request: ApprovalRequest) -> None:
    """Mark the request's turn as resumed (in the resumed turn's last transaction)."""
    ApprovalRequest.all_objects.filter(pk=request.pk, progress=Progress.RESUMING).update(
        progress=Progress.RESUMED, progress_until=None
    )


def resume_actor(request: ApprovalRequest) -> Actor:
    """The authority the resumed turn acts with: its starter's, confined to the
    request's workspace and to reading, running and proposing (as a run's steps)."""
    return Actor.for_workflow_run(
        workspace_id=request.workspace_id,
        source=request.actor_source,
        person_id=request.started_by_id,
        identity=request.proposer_identity,
    )


def _turn_resume(request: ApprovalRequest) -> None:
    from agents.runtime.conversations import conversation_turn_resumed
    from agents.runtime.loop import agent_turn_resume

    try:
        agent_turn_resume(
            turn=request.turn,
            request=request,
            actor=resume_actor(request),
            then=lambda turn: (approval_request_resumed(request), conversation_turn_resumed(turn)),
        )
    except Agent.DoesNotExist:
        _end_turn(request, f"Agent '{request.agent_key}' was deleted while the turn waited.")


def _end_turn(request: ApprovalRequest, error: str) -> None:
    with transaction.atomic():
        AgentTurn.all_objects.filter(pk=request.turn_id, status=AgentTurn.Status.WAITING).update(
            status=AgentTurn.Status.FAILED, error=error, finished_at=timezone.now()
        )
        approval_request_resumed(request)


# How each origin's turn goes on; a workflow step's by name (workflows sit above agents,
# as the step task is enqueued by name).
RESUMERS = {
    ApprovalRequest.Origin.TURN: _turn_resume,
    ApprovalRequest.Origin.WORKFLOW_STEP: "workflows.execution.step_resume",
}
