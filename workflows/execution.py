"""Running a step: claim it, run its agent's turn, record it, dispatch what became ready.

Every step is one task call of `workflow_step_run(run_id=…, step=…)`, on any worker.
The database holds the state: a step is claimed with a conditional update (a second
delivery of the same task finds it taken and returns), recorded once per (run, step),
and its dependents are enqueued as soon as they are ready, together, so independent
steps run at the same time on a threads-pool worker. No transaction and no lock is held
while the model answers: claim and finish are single statements before and after.

Per echo step on PostgreSQL, 2 statements and 2 commits: the claim with the turn's
agent read (its own commit, starting the run on its first step), then one statement
for the turn with its debug log and the finish (its own commit). On a worker, a step
whose only dependent depends on it alone claims that dependent, with its agent read,
in the same statement, and the dependent runs next in the same task: a chain's step is
1 statement and 1 commit. A step whose finish may end its run (the last one, a
failure) or gives it back for a retry takes the finish apart, in the turn's
transaction, with the run's end: 4 statements for the last step (see
`workflows/tests/test_execution.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from agents.models import Agent, AgentTurn
from agents.runtime import PreparedTurn, agent_turn_complete, agent_turn_prepare
from agents.runtime.loop import agent_turn_resume, turn_agent_joined
from agents.services.tool_approvals import approval_request_resumed, resume_actor
from aihummer import metrics, telemetry
from aihummer.actors import Actor
from aihummer.db import Tail
from aihummer.models import Workspace
from aihummer.tasks import enqueue, enqueue_in
from workflows.engine import (
    MappingError,
    Plan,
    Step,
    compile_definition,
    run_answer,
    run_outputs,
    skip_reason,
    step_message,
    step_output,
)
from workflows.models import RunStatus, StepRun, StepStatus, WorkflowRun
from workflows.store import (
    Claim,
    Outcome,
    Successor,
    run_complete,
    step_claim,
    step_count_attempt,
    step_finish,
    step_finish_tail,
    step_finished,
    step_release,
    step_renew_leases,
    step_successor,
    step_take_back,
    step_wait,
)

logger = logging.getLogger(__name__)

# Compiled plans by run: a run's definition never changes, so it is compiled once per
# process, not once per step.
_PLANS: OrderedDict[UUID, Plan] = OrderedDict()
_PLANS_LOCK = threading.Lock()
PLAN_CACHE_SIZE = 512


def cached_plan(run_id: UUID) -> Plan | None:
    """The run's plan if this process compiled it already (then a claim need not
    bring the definition)."""
    with _PLANS_LOCK:
        plan = _PLANS.get(run_id)
        if plan is not None:
            _PLANS.move_to_end(run_id)
        return plan


def plan_for(run_id: UUID, definition: dict) -> Plan:
    with _PLANS_LOCK:
        plan = _PLANS.get(run_id)
        if plan is not None:
            _PLANS.move_to_end(run_id)
            return plan
    plan = compile_definition(definition)
    with _PLANS_LOCK:
        _PLANS[run_id] = plan
        while len(_PLANS) > PLAN_CACHE_SIZE:
            _PLANS.popitem(last=False)
    return plan


REVIVE_BATCH = 200
# A run goes on (its steps may finish, fail it or complete it) while one of its steps
# waits for a person.
ACTIVE = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)
WORKFLOW_STEP = "workflow_step"  # ApprovalRequest.Origin.WORKFLOW_STEP
# By name: `workflows.tasks` calls this module, so this one does not import it back.
STEP_TASK = "workflows.workflow_step_run"


def dispatch(run_id: UUID | str, names: list[str], *, delay: float = 0.0) -> None:
    """Enqueue these steps of the run, each as its own task (they may run at once)."""
    for name in names:
        if delay > 0:
            enqueue_in(delay, STEP_TASK, str(run_id), name)
        else:
            enqueue(STEP_TASK, str(run_id), name)


def wall_clock_error() -> str:
    return f"The run passed its wall-clock limit of {settings.AIHUMMER_RUN_TIMEOUT_SEC} s (AIHUMMER_RUN_TIMEOUT_SEC)."


def workflow_step_run(*, run_id: UUID | str, step: str) -> str | None:
    """Run step `step` of run `run_id` if it is still to run; returns the status it
    ended with ("pending" when it will be retried), or None when there was nothing to
    do (taken, done, or run stopped).

    On a worker, a lone step this one made ready runs next in the same task, without
    a trip through the broker: it is claimed in the database like any step, in the
    statement finishing this one when it is this step's only dependent (then a crash
    before it runs leaves it held until its lease passes, and the beat's sweep gives it
    another attempt), else by a claim of its own (a crash before that leaves it
    pending, and the sweep sends it again)."""
    status, successor = _step_run_once(run_id, step)
    while successor is not None:
        _, successor = _step_run_once(run_id, successor)
    return status


# What a step hands on to run next in the same task: a step to claim (by name), or one
# its finish claimed already.
Next = str | Claim | None


def _step_run_once(run_id: UUID | str, step: str | Claim) -> tuple[str | None, Next]:
    """One step: claim it (one commit) and read its agent, unless its predecessor's
    finish did both; run the turn, record the turn, its debug log, the step, what it
    made ready (a second commit), and its lone successor's claim. Returns its status
    and what to run next here, if anything."""
    now = timezone.now()
    if isinstance(step, Claim):
        claim, known = step, cached_plan(step.run_id) or _plan_read(step.run_id)
    else:
        known = cached_plan(UUID(str(run_id)))
        # The claim commits on its own (one statement on PostgreSQL, no BEGIN/COMMIT
        # round trips) and brings the turn's agent read, in the same round trip.
        claim = step_claim(
            run_id=run_id,
            name=step,
            now=now,
            lease_until=now + timedelta(seconds=settings.AIHUMMER_STEP_LEASE_SEC),
            reads=known.by_name[step].reads if known else None,
            with_definition=known is None,
            agent=turn_agent_joined(pk="step.agent_id"),
        )
    if claim is None:
        return None, None
    plan = known or plan_for(claim.run_id, claim.definition)
    start = _step_start(claim, plan, now)
    span = telemetry.step_span(run_id=claim.run_id, step=claim.name, agent_key=claim.agent_key, attempt=claim.attempts)
    with LEASES.holding(claim), span:
        if isinstance(start, Outcome):
            with transaction.atomic():
                return _settle(claim, plan, start)
        return _step_turn(claim, plan, start)


def _plan_read(run_id: UUID) -> Plan:
    # A successor's claim brings no definition: its predecessor had the plan, which the
    # process's other runs may have pushed out of the cache since (rare).
    return plan_for(run_id, WorkflowRun.all_objects.values_list("definition", flat=True).get(pk=run_id))


def _step_start(claim: Claim, plan: Plan, now: datetime) -> Outcome | PreparedTurn:
    """How the claimed step ends without a turn (an Outcome), or its turn, prepared."""
    step = plan.by_name[claim.name]
    if claim.deadline_at is not None and now >= claim.deadline_at:
        return Outcome(status=StepStatus.FAILED, error=wall_clock_error())
    reason = skip_reason(step, claim.context)
    if reason is not None:
        return Outcome(status=StepStatus.SKIPPED, error=reason)
    try:
        message = step_message(step, claim.context)
    except MappingError as exc:
        return Outcome(status=StepStatus.FAILED, error=str(exc))
    deleted = Outcome(
        status=StepStatus.FAILED, input=message, error=f"Agent '{claim.agent_key}' was deleted after the run started."
    )
    if claim.agent_id is None:
        return deleted
    # Built from the claim, not loaded: the turn reads the agent's row itself.
    workspace = Workspace(pk=claim.workspace_id)
    agent = Agent(pk=claim.agent_id, key=claim.agent_key, workspace=workspace, is_sandbox=claim.is_sandbox)
    actor = Actor.for_workflow_run(
        workspace_id=claim.workspace_id,
        source=claim.actor_source,
        person_id=claim.started_by_id,
        identity=claim.actor_identity,
    )
    try:  # raised before any write: the claim's transaction stays sound
        # The step's timeout is the turn's deadline: the turn stops there by itself.
        prepared = agent_turn_prepare(
            agent=agent,
            message=message,
            actor=actor,
            timeout_seconds=step.timeout_seconds,
            read=(lambda: claim.agent) if claim.agent_read else None,
        )
    except Agent.DoesNotExist:
        return deleted
    except (ValidationError, PermissionDenied) as exc:
        return Outcome(status=StepStatus.FAILED, input=message, error="; ".join(getattr(exc, "messages", [str(exc)])))
    # A call the turn holds for a person is recorded against this step (issue 30).
    prepared.origin = (WORKFLOW_STEP, str(claim.run_id), claim.name)
    return prepared


def _step_turn(claim: Claim, plan: Plan, prepared: PreparedTurn) -> tuple[str | None, Next]:
    """Run the step's turn here; the step is settled in the turn's own last
    transaction, once. A step's `timeout_seconds` is its turn's deadline (model calls,
    tools and children stop at it), so a step that times out has a turn that has ended:
    nothing of it still runs when the step is retried."""
    settled: list[tuple[str | None, Next]] = []
    spec = plan.by_name[claim.name]

    def settle(turn: AgentTurn) -> None:
        settled.append(_settle(claim, plan, _turn_outcome(prepared.message, turn, spec)))

    def compose(turn: AgentTurn) -> tuple[Tail, Callable[[tuple | None], None]] | None:
        # A completed step with dependents can neither complete nor fail its run: its
        # finish is the tail of the turn's statement (one statement, one commit). The
        # last step, a failure, a retry keep the transaction: there the run's end (or the
        # release) must commit with the finish.
        outcome = _turn_outcome(prepared.message, turn, spec)
        if outcome.status != StepStatus.COMPLETED or not plan.dependents.get(claim.name):
            return None
        now = timezone.now()
        successor = _successor(plan, claim.name, now)
        tail = step_finish_tail(claim=claim, outcome=outcome, now=now, steps=len(plan.steps), successor=successor)
        if tail is None:
            return None

        def done(row: tuple | None) -> None:
            outcome_with_turn = dataclasses.replace(outcome, turn_id=turn.pk)
            status, ready = _finished(claim, plan, outcome_with_turn, step_finished(row))
            if successor is not None:
                # Claimed: it runs here, whatever the run became since (a claimed step
                # runs to its end, as after any claim); not claimed: nothing to run.
                ready = step_successor(row, run_id=claim.run_id, successor=successor)
            settled.append((status, ready))

        return tail, done

    agent_turn_complete(prepared, then=settle, compose=compose)
    return settled[0]


def _successor(plan: Plan, name: str, now: datetime) -> Successor | None:
    """On a worker, the step that step `name`'s completion alone makes ready, for its
    finish to claim (it runs next in this task): the hand-off costs no statement."""
    step = plan.successor(name)
    if step is None or not settings.CELERY_BROKER_URL:
        return None
    lease_until = now + timedelta(seconds=settings.AIHUMMER_STEP_LEASE_SEC)
    agent = turn_agent_joined(pk="finished.next_agent_id")
    return Successor(name=step.name, reads=step.reads, lease_until=lease_until, agent=agent)


def _turn_outcome(message: str, turn: AgentTurn, spec: Step) -> Outcome:
    if turn.status == AgentTurn.Status.WAITING:
        return Outcome(
            status=StepStatus.WAITING,
            input=message,
            turn_id=turn.pk,
            agent_version=turn.version_number,
            prefix_hash=turn.prefix_hash,
        )
    succeeded = turn.status == AgentTurn.Status.SUCCEEDED
    error = "" if succeeded else turn.error
    if _out_of_step_time(turn, spec):
        error = f"Step '{spec.name}' timed out after {spec.timeout_seconds} s (timeout_seconds)."
    return Outcome(
        transient=turn.failed_transiently,  # by the turn's error kind, never by its text
        status=StepStatus.COMPLETED if succeeded else StepStatus.FAILED,
        input=message,
        output=step_output(turn.answer) if succeeded else None,
        error=error,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        cost_usd=turn.cost_usd,
        turn_id=turn.pk,
        agent_version=turn.version_number,
        prefix_hash=turn.prefix_hash,
    )


def _out_of_step_time(turn: AgentTurn, spec: Step) -> bool:
    # The turn's deadline passed, and that deadline was the step's (not the global limit).
    return (
        spec.timeout_seconds is not None
        and spec.timeout_seconds <= settings.AIHUMMER_TURN_TIMEOUT_SEC
        and turn.error_kind == AgentTurn.ErrorKind.DEADLINE
    )


def _settle(claim: Claim, plan: Plan, outcome: Outcome) -> tuple[str | None, str | None]:
    """Record the step's end (in the caller's transaction): give it back for a retry,
    or finish it and start what it made ready. Returns its status and a lone successor
    for this worker to run next."""
    spec = plan.by_name[claim.name]
    if outcome.status == StepStatus.WAITING:  # no worker waits with it: the request holds it
        return (StepStatus.WAITING if step_wait(claim=claim, outcome=outcome) else None), None
    if outcome.status == StepStatus.FAILED and outcome.transient and claim.attempts < 1 + spec.retries:
        return _retry_later(claim, outcome), None
    finished = step_finish(claim=claim, outcome=outcome, now=timezone.now(), steps=len(plan.steps))
    return _finished(claim, plan, outcome, finished)


def _finished(
    claim: Claim, plan: Plan, outcome: Outcome, finished: tuple[str, dict] | None
) -> tuple[str | None, str | None]:
    """After the step's finish (`finished`: what `step_finish` returned): drop a result
    whose claim was lost, else start what the step made ready."""
    if finished is None:
        logger.warning(
            "Step %s of run %s lost its claim before finishing; its result is dropped", claim.name, claim.run_id
        )
        return None, None
    run_status, context = finished
    metrics.observe_step(outcome.status)
    return outcome.status, _advance(plan, claim, outcome, run_status, context)


def _retry_later(claim: Claim, outcome: Outcome) -> str | None:
    # Exponential backoff: base, then twice that, and so on, from the first retry.
    delay = settings.AIHUMMER_STEP_RETRY_BACKOFF_SEC * 2 ** (claim.attempts - 1)
    error = f"Attempt {claim.attempts} failed ({outcome.error}); retrying in {delay:g} s."
    now = timezone.now()
    released = step_release(
        claim=claim, error=error, not_before=now + timedelta(seconds=delay), now=now, turn_id=outcome.turn_id
    )
    if not released:
        return None
    dispatch(claim.run_id, [claim.name], delay=delay)
    return StepStatus.PENDING


class LeaseKeeper:
    """One heartbeat per worker process: a thread renewing, in one statement, the lease
    of every step the process runs, a third of a lease before it would pass, so a live
    worker's step is never taken for a dead one's. Without a broker nothing could take
    a step over: no heartbeat then."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[Claim, float]] = {}  # step id → (claim, renew at, monotonic)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._next = float("inf")  # when the thread means to wake next

    @contextmanager
    def holding(self, claim: Claim) -> Iterator[None]:
        if not settings.CELERY_BROKER_URL:
            yield
            return
        renew_at = time.monotonic() + settings.AIHUMMER_STEP_LEASE_SEC / 3
        with self._lock:
            self._held[claim.step_id] = (claim, renew_at)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._beat, name="lease-keeper", daemon=True)
                self._thread.start()
            if renew_at < self._next:
                self._wake.set()  # sooner than planned (a shorter lease than the others')
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(claim.step_id, None)

    def _beat(self) -> None:
        while True:
            with self._lock:
                self._next = min((at for _, at in self._held.values()), default=time.monotonic() + 60)
            self._wake.wait(max(self._next - time.monotonic(), 0))
            self._wake.clear()
            now = time.monotonic()
            lease = settings.AIHUMMER_STEP_LEASE_SEC
            with self._lock:
                due = [claim for claim, at in self._held.values() if at <= now]
                for claim in due:
                    self._held[claim.step_id] = (claim, now + lease / 3)
            if due:
                self._renew(due, lease)

    def _renew(self, claims: list[Claim], lease: int) -> None:
        try:
            step_renew_leases(claims=claims, until=timezone.now() + timedelta(seconds=lease))
        except Exception:  # a missed renewal only risks a duplicate attempt, which claims absorb
            logger.exception("Heartbeat of %d step(s) failed", len(claims))
        finally:
            connection.close()  # back to the pool between beats, not held


LEASES = LeaseKeeper()


def _advance(plan: Plan, claim: Claim, outcome: Outcome, run_status: str, context: dict) -> str | None:
    """After a step: fail the run, complete it, or start the steps now ready. On a
    worker, a lone ready step is returned to run next in this task; otherwise (none,
    several, or inline) they are dispatched, on commit."""
    if run_status not in ACTIVE:
        return None  # cancelled or failed meanwhile: running steps finish, none starts
    if outcome.status == StepStatus.FAILED:
        run_fail(run_id=claim.run_id, error=f"Step '{claim.name}' failed: {outcome.error}", context=context, plan=plan)
    elif plan.is_complete(context):
        _run_complete(claim.run_id, plan, context)
    else:
        ready = [step.name for step in plan.ready_after(claim.name, context)]
        if len(ready) == 1 and settings.CELERY_BROKER_URL:
            return ready[0]
        dispatch(claim.run_id, ready)
    return None


def _run_complete(run_id: UUID, plan: Plan, context: dict) -> None:
    outputs = run_outputs(plan, context)
    if run_complete(run_id=run_id, outputs=outputs, answer=run_answer(outputs), now=timezone.now()):
        telemetry.run_finished(run_id)


def run_fail(*, run_id: UUID, error: str, context: dict | None = None, plan: Plan | None = None) -> bool:
    """End an unfinished run as failed, saying why (with the outputs it reached)."""
    fields = {"status": RunStatus.FAILED, "error": error, "finished_at": timezone.now()}
    if plan is not None and context is not None:
        fields["outputs"] = {key: value for key, value in run_outputs(plan, context).items() if value is not None}
        fields["answer"] = run_answer(fields["outputs"])
    failed = bool(WorkflowRun.all_objects.filter(pk=run_id, status__in=ACTIVE).update(**fields))
    if failed:
        telemetry.run_finished(run_id)
    return failed


# --- recovery (beat) --------------------------------------------------------------------
def workflow_runs_revive(*, now: datetime | None = None) -> dict[str, int]:
    """The beat's sweep, safe to run anywhere and twice: fail runs past their
    wall-clock limit, give steps whose worker died (lease passed) another attempt or
    fail them once their attempts are spent, and re-send steps whose task was lost.
    Returns what it did, by kind."""
    now = now or timezone.now()
    counts = {"runs_timed_out": 0, "steps_recovered": 0, "steps_failed": 0, "steps_redispatched": 0}
    late = WorkflowRun.all_objects.unfinished().filter(deadline_at__lt=now).order_by("deadline_at")
    for run_id in late.values_list("pk", flat=True)[:REVIVE_BATCH]:
        counts["runs_timed_out"] += run_fail(run_id=run_id, error=wall_clock_error())
    # Before the recoveries below: a step they put back is sent by them, not twice.
    counts["steps_redispatched"] = _redispatch_stalled(now)
    expired = (
        # A waiting run's other branches run on (a parallel step paused alone): theirs too.
        StepRun.objects.filter(
            status=StepStatus.RUNNING,
            lease_expires_at__lt=now,
            run__status__in=[RunStatus.RUNNING, RunStatus.WAITING],
        )
        .select_related("run")
        .order_by("lease_expires_at")[:REVIVE_BATCH]
    )
    for step in expired:
        key = "steps_recovered" if _recover(step, now) else "steps_failed"
        counts[key] += 1
    return counts


def attempts_allowed(plan: Plan, name: str) -> int:
    """How many attempts step `name` gets in all: its first, its `retries` (transient
    failures) and the recoveries from dead workers (AIHUMMER_STEP_RECOVERIES)."""
    return 1 + plan.by_name[name].retries + settings.AIHUMMER_STEP_RECOVERIES


def _recover(step: StepRun, now: datetime) -> bool:
    """A running step whose lease passed: its worker is gone. Pending again (the next
    claim counts the attempt) while attempts remain, else failed with its run."""
    claim = Claim.of(step, step.run)
    plan = plan_for(claim.run_id, claim.definition)
    allowed = attempts_allowed(plan, step.name)
    error = (
        f"The worker running attempt {step.attempts} stopped answering "
        f"(its lease expired at {step.lease_expires_at:%H:%M:%S} UTC)."
    )
    if step.attempts < allowed:
        released = StepRun.objects.filter(
            pk=step.pk, status=StepStatus.RUNNING, attempts=step.attempts, lease_expires_at__lt=now
        ).update(
            status=StepStatus.PENDING,
            error=error,
            lease_expires_at=None,
            retry_at=None,
            attempt_log=step.attempt_log_closed(ended_at=now, error=error),  # its turn is not known here
        )
        if released:
            dispatch(claim.run_id, [step.name])
        return True
    outcome = Outcome(status=StepStatus.FAILED, error=f"{error} No attempts left ({step.attempts} of {allowed}).")
    finished = step_finish(claim=claim, outcome=outcome, now=now)
    if finished is not None:
        _advance(plan, claim, outcome, *finished)
    return False


def _redispatch_stalled(now: datetime) -> int:
    """Runs with nothing running, something pending and no progress for a lease: the
    task that should have carried their next step was lost. Send it again (the claim
    makes a duplicate harmless). A waiting run too: a parallel branch of it runs on
    while one step waits for a person (that step holds no lease, and is not ready)."""
    quiet = now - timedelta(seconds=settings.AIHUMMER_STEP_LEASE_SEC)
    steps = StepRun.objects.filter(run=OuterRef("pk"))
    stalled = (
        WorkflowRun.all_objects.in_progress()
        .filter(created_at__lt=quiet)
        .filter(Exists(steps.filter(status=StepStatus.PENDING)))
        .exclude(Exists(steps.filter(status=StepStatus.RUNNING)))
        .exclude(Exists(steps.filter(finished_at__gte=quiet)))
        .only("pk", "definition", "context")
        .order_by("created_at")[:REVIVE_BATCH]
    )
    sent = 0
    for run in stalled:
        plan = plan_for(run.pk, run.definition)
        pending = dict(
            StepRun.objects.filter(run=run, status=StepStatus.PENDING)
            .filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
            .values_list("name", "retry_at")
        )
        names = [step.name for step in plan.ready(run.context) if step.name in pending]
        dispatch(run.pk, names)
        sent += len(names)
    return sent


# --- resuming (issue 30) ------------------------------------------------------------------
def step_resume(request: object) -> None:
    """Go on with the step whose turn paused on `request` (an ApprovalRequest, decided
    and carried out): the step runs again, with no lease, its turn resumes and is
    settled as any step's (then what it made ready is dispatched). Called by
    `agents.services.approvals` by name."""
    now = timezone.now()
    step = StepRun.objects.filter(run_id=request.run_id, name=request.step_name).select_related("run").first()
    # A resume before this one took the step and never settled it (its worker died, or
    # it raised): another attempt, counted like any step's, or the step fails.
    dead_resume = step is not None and step.status == StepStatus.RUNNING and step.lease_expires_at is None
    if dead_resume and not _resume_again(step, request, now):
        return
    taken = step and step_take_back(step_id=step.pk, run_id=request.run_id, waited_since=request.created_at, now=now)
    if not taken:  # the run ended meanwhile: nothing waits for the call any more
        with transaction.atomic():
            _turn_end(request, "The workflow run ended while the call waited.", now)
        return
    claim = Claim.of(taken, taken.run)
    plan = plan_for(claim.run_id, claim.definition)
    spec = plan.by_name[claim.name]
    settled: list[tuple[str | None, str | None]] = []

    def settle(turn: AgentTurn) -> None:
        settled.append(_settle(claim, plan, _turn_outcome(taken.input, turn, spec)))
        approval_request_resumed(request)

    try:
        agent_turn_resume(turn=request.turn, request=request, actor=resume_actor(request), then=settle)
    except Agent.DoesNotExist:
        outcome = Outcome(status=StepStatus.FAILED, input=taken.input, error=f"Agent '{taken.agent_key}' was deleted.")
        with transaction.atomic():
            settled.append(_settle(claim, plan, outcome))
            _turn_end(request, f"Agent '{taken.agent_key}' was deleted while the turn waited.", now)
    _, successor = settled[0]
    if successor is not None:
        workflow_step_run(run_id=claim.run_id, step=successor)


def _resume_again(step: StepRun, request: object, now: datetime) -> bool:
    """Count a new attempt of a step whose resumed turn never finished (True: resume it
    again), or, its attempts spent, fail it and its run and end its turn (False)."""
    plan = plan_for(step.run_id, step.run.definition)
    allowed = attempts_allowed(plan, step.name)
    error = (
        f"Attempt {step.attempts} never finished after its approved call (request {request.pk}): "
        "the worker resuming its turn died, or the resume failed."
    )
    if step.attempts < allowed:
        return step_count_attempt(step=step, error=error, now=now, turn_id=request.turn_id)
    claim = Claim.of(step, step.run)
    error = f"{error} No attempts left ({step.attempts} of {allowed})."
    outcome = Outcome(status=StepStatus.FAILED, input=step.input, error=error, turn_id=request.turn_id)
    with transaction.atomic():
        finished = step_finish(claim=claim, outcome=outcome, now=now)
        if finished is not None:
            _advance(plan, claim, outcome, *finished)
        _turn_end(request, error, now)
    return False


def _turn_end(request: object, error: str, now: datetime) -> None:
    AgentTurn.all_objects.filter(pk=request.turn_id, status=AgentTurn.Status.WAITING).update(
        status=AgentTurn.Status.FAILED, error=error, finished_at=now
    )
    approval_request_resumed(request)
