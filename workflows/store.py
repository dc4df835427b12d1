"""The two statements every step pays around its turn: claim and finish.

A step is claimed with one conditional UPDATE (pending → running, attempts + 1, a
lease) that also returns what the step needs from its run, and finished with one
statement that records the step and merges its entry into the run's context (with
the token and cost roll-up), returning that context so the caller can see which steps
became ready. Concurrent finishers of one run serialise on the run's row, so the last
of two parallel steps always sees both (the fan-in never stalls).

On PostgreSQL each is a single statement, a data-modifying CTE, prepared on the server
where connections live on (`aihummer.db`): the claim commits on its own (and starts its
run, on the run's first step), the finish in the caller's transaction, or as the tail
of the statement writing the step's turn (`step_finish_tail`); elsewhere (the
embedded SQLite default) each takes a few statements, the claim in a transaction of
its own (`PORTABLE_ONLY` forces those paths for their tests).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from functools import cache, reduce
from typing import TYPE_CHECKING
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Exists, F, Q

from agents.models import Agent
from aihummer.db import Tail, positional, prepared_cursor
from workflows.models import RunStatus, StepRun, StepStatus, WorkflowRun

if TYPE_CHECKING:
    from agents.runtime.prepared import Joined

PORTABLE_ONLY = False


@dataclass(frozen=True)
class Claim:
    """A step this worker now holds, and what it needs of its run."""

    step_id: int
    run_id: UUID
    name: str
    attempts: int
    agent_id: int | None
    agent_key: str
    run_status: str
    definition: dict | None  # None: the claimer had the run's plan already
    context: dict
    workspace_id: int
    is_sandbox: bool
    actor_source: str
    started_by_id: int | None
    deadline_at: datetime | None
    actor_identity: str
    agent: Agent | None = None  # the step's agent, when the claim read it (`agent_read`)
    agent_read: bool = False

    @classmethod
    def of(cls, step: StepRun, run: WorkflowRun) -> Claim:
        """The claim a worker holds on `step` (a row just read, with its run)."""
        return cls(
            step.pk,
            run.pk,
            step.name,
            step.attempts,
            step.agent_id,
            step.agent_key,
            run.status,
            run.definition,
            run.context,
            run.workspace_id,
            run.is_sandbox,
            run.actor_source,
            run.started_by_id,
            run.deadline_at,
            run.actor_identity,
        )


@dataclass(frozen=True)
class Outcome:
    """How a step ended, as recorded on its row and in the run's context."""

    status: str
    input: str = ""
    output: dict | None = None
    error: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    turn_id: int | None = None
    agent_version: int | None = None
    prefix_hash: str = ""
    transient: bool = False  # a failure that may pass on its own (rate limit, outage, timeout)

    def row_fields(self) -> dict:
        """The step row's columns this outcome sets: every field but `transient`."""
        return {field.name: getattr(self, field.name) for field in fields(self) if field.name != "transient"}

    def context_entry(self) -> dict:
        return {
            "status": self.status,
            "output": self.output,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": str(self.cost_usd),
            },
        }


def _fast() -> bool:
    return connection.vendor == "postgresql" and not PORTABLE_ONLY


def _json(value: object) -> object:
    return json.loads(value) if isinstance(value, str) else value


# --- claim ------------------------------------------------------------------------------
# On PostgreSQL one statement: take the step, start the run if this is its first step,
# return what the step reads of its run (as it was before: `run_status` is 'pending' on
# the first step). Table names are the models' own
# (never input); every value is a parameter. What the step reads of the run's context:
# only the entries of the steps it names (a long run's context is not copied whole on
# every claim); the definition only when this process has not compiled the run's plan yet.
_STEP_SET = """
   SET status = 'running', attempts = {alias}attempts + 1, started_at = %(now)s, finished_at = NULL,
       lease_expires_at = %(lease)s, error = ''"""
_RUN_COLUMNS = """r.status, CASE WHEN %(definition)s THEN r.definition END, {context}, r.workspace_id,
          r.is_sandbox, r.actor_source, r.started_by_id, r.deadline_at, r.actor_identity"""
_CONTEXT_READ = """CASE WHEN %(whole)s THEN r.context ELSE jsonb_build_object(
    'inputs', r.context -> 'inputs',
    'steps', (SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
                FROM jsonb_each(r.context -> 'steps') AS e WHERE e.key = ANY(%(reads)s))) END"""
# Take the step (`{name}`: its name's parameter) while its run goes on.
_CLAIM_UPDATE = f"""
    UPDATE {StepRun._meta.db_table} AS s{_STEP_SET.format(alias="s.")}
     WHERE s.run_id = %(run)s AND s.name = %({{name}})s AND s.status = 'pending'{{held}}
       AND EXISTS (SELECT 1 FROM {WorkflowRun._meta.db_table} AS r
                    WHERE r.id = %(run)s AND r.status IN ('pending', 'running', 'waiting'))
 RETURNING s.id, s.attempts, s.agent_id, s.agent_key"""  # noqa: S608
_CLAIM_FAST = f"""
WITH step AS ({_CLAIM_UPDATE.format(name="name", held="")}
), started AS (
    UPDATE {WorkflowRun._meta.db_table} SET status = 'running', started_at = %(now)s
     WHERE id = %(run)s AND status = 'pending' AND EXISTS (SELECT 1 FROM step)
)
SELECT step.id, step.attempts, step.agent_id, step.agent_key, {_RUN_COLUMNS.format(context=_CONTEXT_READ)}<columns>
  FROM step CROSS JOIN {WorkflowRun._meta.db_table} AS r<join>
 WHERE r.id = %(run)s
"""  # noqa: S608
# With the step's agent (`agent`: a turn's read of it, `agents.runtime.loop.turn_agent_joined`)
# joined to the claim's row: one round trip for both. Positional, the read's own
# parameters between the claim's; built once per agent read.
_CLAIM_BEFORE, _CLAIM_AFTER = (
    positional(part)
    for part in _CLAIM_FAST.replace("<columns>", ", agent.*")
    .replace("<join>", " LEFT JOIN LATERAL (<agent>) AS agent ON true")
    .split("<agent>")
)
_WITH_AGENT: dict[tuple[str, str], str] = {}
_CLAIM_FAST = _CLAIM_FAST.replace("<columns>", "").replace("<join>", "")
_CLAIM_COLUMNS = 13  # the claim's own, before the agent's
# Elsewhere (the embedded SQLite default, whose RETURNING may name only the updated table
# and no alias) two statements in the caller's transaction: take the step, read its run.
_CLAIM_STEP = f"""
UPDATE {StepRun._meta.db_table}{_STEP_SET.format(alias="")}
 WHERE run_id = %(run)s AND name = %(name)s AND status = 'pending'
   AND EXISTS (SELECT 1 FROM {WorkflowRun._meta.db_table} AS r
                WHERE r.id = %(run)s AND r.status IN ('pending', 'running', 'waiting'))
RETURNING id, attempts, agent_id, agent_key
"""  # noqa: S608
_CLAIM_RUN = f"""
SELECT {_RUN_COLUMNS.format(context="r.context")} FROM {WorkflowRun._meta.db_table} AS r WHERE r.id = %(run)s
"""  # noqa: S608


def step_claim(
    *,
    run_id: UUID | str,
    name: str,
    now: datetime,
    lease_until: datetime,
    reads: tuple[str, ...] | None = None,
    with_definition: bool = True,
    agent: Joined | None = None,
) -> Claim | None:
    """Take step `name` of run `run_id` if it is pending and its run goes on; None when
    another worker has it, it already ran, or the run stopped. The claim's context holds
    the run's inputs and the entries of the steps in `reads` (all of them: None), its
    definition is None unless `with_definition`. The run's first claim starts it
    (pending → running). Commits on its own: call it outside a transaction.

    `agent`: the step's agent read (`agents.runtime.loop.turn_agent_joined`, joined on
    the step's `agent_id`), brought by the claim's statement on PostgreSQL: the claim's
    `agent` is then the Agent (None: deleted) and `agent_read` True.

    Lock order: the step's row, then (first step only) the run's, as in `step_finish`."""
    run_id = UUID(str(run_id))
    field = StepRun._meta.get_field
    params = {
        "now": field("started_at").get_db_prep_value(now, connection),
        "lease": field("lease_expires_at").get_db_prep_value(lease_until, connection),
        "run": field("run").get_db_prep_value(run_id, connection),
        "name": name,
        "definition": with_definition,
    }
    agent_row: tuple | None = None
    if _fast():
        params |= {"whole": reads is None, "reads": list(reads or ())}
        with prepared_cursor() as cursor:
            if agent is None:
                cursor.execute(_CLAIM_FAST, params)
            else:
                before, after = (tuple(params[name] for name in part[1]) for part in (_CLAIM_BEFORE, _CLAIM_AFTER))
                cursor.execute(_with_agent(_CLAIM_BEFORE[0], _CLAIM_AFTER[0], agent), [*before, *agent.params, *after])
            row = cursor.fetchone()
        if row is not None and agent is not None:
            row, agent_row = row[:_CLAIM_COLUMNS], row[_CLAIM_COLUMNS:]
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_CLAIM_STEP, params)
            row = cursor.fetchone()
            if row is not None:
                cursor.execute(_CLAIM_RUN, params)
                row = (*row, *cursor.fetchone())
                if row[4] == RunStatus.PENDING:  # its first step: the run starts
                    WorkflowRun.all_objects.filter(pk=run_id, status=RunStatus.PENDING).update(
                        status=RunStatus.RUNNING, started_at=now
                    )
    if row is None:
        return None
    return _claim_of(row, run_id, name, with_definition=with_definition, agent=agent, agent_row=agent_row)


def _claim_of(
    row: tuple,
    run_id: UUID,
    name: str,
    *,
    with_definition: bool,
    agent: Joined | None = None,
    agent_row: tuple | None = None,
) -> Claim:
    """The Claim of a claim statement's row (`_CLAIM_COLUMNS` columns), and of its
    agent's columns when it read the agent."""
    step_id, attempts, agent_id, agent_key, status, definition, context, workspace_id, is_sandbox, *rest = row
    actor_source, started_by_id, deadline_at, actor_identity = rest
    if deadline_at is not None and connection.vendor == "sqlite":  # naive there, or text
        deadline_at = connection.ops.convert_datetimefield_value(deadline_at, None, connection)
    return Claim(
        step_id,
        run_id,
        name,
        attempts,
        agent_id,
        agent_key,
        status,
        _json(definition) if with_definition else None,
        _json(context),
        workspace_id,
        bool(is_sandbox),
        actor_source,
        started_by_id,
        deadline_at,
        actor_identity,
        agent=None if agent_row is None or agent is None else agent.instance(agent_row),
        agent_read=agent_row is not None,
    )


def _with_agent(before: str, after: str, agent: Joined) -> str:
    """A statement in two parts with the agent read's SQL between them, built once."""
    key = (before, agent.sql)
    sql = _WITH_AGENT.get(key)
    if sql is None:  # the agent read's SQL is its queryset's, compiled: never input
        sql = _WITH_AGENT[key] = f"{before}{agent.sql}{after}"
    return sql


# --- finish -----------------------------------------------------------------------------
# The step's row, then its run's: one statement, or the tail of the statement writing the
# step's turn (`step_finish_tail`), where the turn's id comes from that statement's
# `parent` row.
_FINISH_STEP = f"""
step AS (
    UPDATE {StepRun._meta.db_table}
       SET status = %(status)s, input = %(input)s, output = %(output)s::jsonb, error = %(error)s,
           finished_at = %(now)s, lease_expires_at = NULL, input_tokens = %(input_tokens)s,
           output_tokens = %(output_tokens)s, cost_usd = %(cost)s, turn_id = {{turn}},
           agent_version = %(agent_version)s, prefix_hash = %(prefix_hash)s
     WHERE id = %(step)s AND status = 'running' AND attempts = %(attempts)s
 RETURNING run_id
)"""  # noqa: S608
_FINISH_RUN = f"""
UPDATE {WorkflowRun._meta.db_table} AS r
   SET context = jsonb_set(r.context, ARRAY['steps', %(name)s], %(entry)s::jsonb, true),
       input_tokens = r.input_tokens + %(input_tokens)s,
       output_tokens = r.output_tokens + %(output_tokens)s,
       cost_usd = r.cost_usd + %(cost)s
  FROM step{{join}}
 WHERE r.id = step.run_id
RETURNING r.status AS status, CASE
    WHEN %(whole_context)s OR (SELECT count(*) FROM jsonb_object_keys(r.context -> 'steps')) >= %(steps)s THEN r.context
    ELSE jsonb_build_object('steps', (SELECT jsonb_object_agg(e.key, jsonb_build_object('status', e.value -> 'status'))
                                        FROM jsonb_each(r.context -> 'steps') AS e)) END AS context{{returning}}
"""  # noqa: S608
_FINISH_SQL = f"WITH {_FINISH_STEP.format(turn='%(turn)s')} {_FINISH_RUN.format(join='', returning='')}"
_FINISH_TAIL_STEP = _FINISH_STEP.format(turn="(SELECT id FROM parent)")
_FINISH_TAIL, _FINISH_TAIL_NAMES = positional(
    f"{_FINISH_TAIL_STEP}, finished AS ({_FINISH_RUN.format(join='', returning='')})"
)
# With the step's lone successor claimed in the same statement (`Successor`): the
# hand-off is no statement and no commit of its own. The successor is taken only while
# this step's finish matched (`step`), and before the run's row (the run's update joins
# it: the lock order of every writer, steps then their run); its context is read from
# the run's row as the finish left it, with this step's entry.
_SUCCESSOR_RUN = _FINISH_RUN.format(
    join=" LEFT JOIN next ON true",
    returning=", next.id AS next_id, next.attempts AS next_attempts, next.agent_id AS next_agent_id, "
    f"next.agent_key AS next_agent_key, {_RUN_COLUMNS.format(context=_CONTEXT_READ)}",
)
_SUCCESSOR_CLAIM = _CLAIM_UPDATE.format(name="successor", held=" AND EXISTS (SELECT 1 FROM step)")
_SUCCESSOR_BEFORE, _SUCCESSOR_AFTER = (
    positional(part)
    for part in (
        f"{_FINISH_TAIL_STEP}, next AS ({_SUCCESSOR_CLAIM}), finished AS ({_SUCCESSOR_RUN}),"  # noqa: S608
        " claimed AS (SELECT finished.*, agent.* FROM finished LEFT JOIN LATERAL (<agent>) AS agent ON true)"
    ).split("<agent>")
)


def step_finish(*, claim: Claim, outcome: Outcome, now: datetime, steps: int | None = None) -> tuple[str, dict] | None:
    """Record how the claimed step ended and merge it into the run's context. Returns
    the run's status and context after the merge, or None when this worker no longer
    holds the step (its lease passed and another attempt took it). Given the run's
    number of `steps`, the context comes whole only when every step has an entry or
    this one failed (what outputs are computed from); otherwise it holds each step's
    status and nothing else (what readiness is decided from), on PostgreSQL.

    Lock order, here and in every writer: the step's row, then the run's."""
    if _fast():
        with prepared_cursor() as cursor:
            cursor.execute(_FINISH_SQL, _finish_params(claim, outcome, now, steps))
            return step_finished(cursor.fetchone())
    with transaction.atomic():
        updated = StepRun.objects.filter(pk=claim.step_id, status=StepStatus.RUNNING, attempts=claim.attempts).update(
            **outcome.row_fields(), finished_at=now, lease_expires_at=None
        )
        if not updated:
            return None
        # The run's row lock serialises finishers: the second of two parallel steps
        # reads the first one's entry.
        run = (
            WorkflowRun.all_objects.select_for_update()
            .only("status", "context", "input_tokens", "output_tokens", "cost_usd")
            .get(pk=claim.run_id)
        )
        run.context.setdefault("steps", {})[claim.name] = outcome.context_entry()
        run.input_tokens += outcome.input_tokens
        run.output_tokens += outcome.output_tokens
        run.cost_usd += outcome.cost_usd
        run.save(update_fields=["context", "input_tokens", "output_tokens", "cost_usd"])
    return run.status, run.context


@dataclass(frozen=True)
class Successor:
    """The lone step a completed step makes ready, to be claimed by the statement that
    finishes it (`step_finish_tail`): what `step_claim` would be given for it."""

    name: str
    reads: tuple[str, ...] | None
    lease_until: datetime
    agent: Joined  # its agent read, joined on the successor's `agent_id` (`next_agent_id`)


def step_finish_tail(
    *, claim: Claim, outcome: Outcome, now: datetime, steps: int | None = None, successor: Successor | None = None
) -> Tail | None:
    """`step_finish` as the tail of the statement inserting the step's turn (its id is
    that statement's `parent` row's: `outcome.turn_id` is not read), so the turn, its
    debug log and the step's end are one statement, one commit in autocommit
    (`agents.runtime.prepared.insert_with_parent`). Its row goes to `step_finished`,
    and, with a `successor` (a completed step's), to `step_successor`: that step is
    claimed in the same statement, from `now`, when the finish matched and the run
    goes on. None elsewhere than on PostgreSQL: there, `step_finish` after the turn's
    insert."""
    if not _fast():
        return None
    params = _finish_params(claim, outcome, now, steps)
    if successor is None:
        return Tail(_FINISH_TAIL, tuple(params[name] for name in _FINISH_TAIL_NAMES), last="finished")
    params |= {
        "successor": successor.name,
        "lease": successor.lease_until,
        "run": claim.run_id,
        "definition": False,  # the caller has the run's plan
        "whole": successor.reads is None,
        "reads": list(successor.reads or ()),
    }
    (before, before_names), (after, after_names) = _SUCCESSOR_BEFORE, _SUCCESSOR_AFTER
    values = (*(params[name] for name in before_names), *successor.agent.params, *(params[n] for n in after_names))
    return Tail(_with_agent(before, after, successor.agent), values, last="claimed")


def step_finished(row: tuple | None) -> tuple[str, dict] | None:
    """What `step_finish` returns, from its statement's row (or its tail's: NULLs when
    the step was no longer held)."""
    if row is None or row[0] is None:
        return None
    return row[0], _json(row[1])


def step_successor(row: tuple | None, *, run_id: UUID, successor: Successor) -> Claim | None:
    """The claim on `successor` from the row of a tail given it (`step_finish_tail`),
    or None when the statement did not take it (the finish matched nothing, the run
    stopped, the step was not pending)."""
    claimed = (row or ())[2 : 2 + _CLAIM_COLUMNS]
    if not claimed or claimed[0] is None:
        return None
    agent_row = row[2 + _CLAIM_COLUMNS :]
    return _claim_of(claimed, run_id, successor.name, with_definition=False, agent=successor.agent, agent_row=agent_row)


def _finish_params(claim: Claim, outcome: Outcome, now: datetime, steps: int | None) -> dict:
    return {
        "status": outcome.status,
        "input": outcome.input,
        "output": json.dumps(outcome.output),
        "error": outcome.error,
        "now": now,
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
        "cost": outcome.cost_usd,
        "turn": outcome.turn_id,
        "agent_version": outcome.agent_version,
        "prefix_hash": outcome.prefix_hash,
        "step": claim.step_id,
        "attempts": claim.attempts,
        "name": claim.name,
        "entry": json.dumps(outcome.context_entry()),
        "whole_context": steps is None or outcome.status == StepStatus.FAILED,
        "steps": steps or 0,
    }


# --- a run's start ------------------------------------------------------------------------
@cache  # built on first use: the connection's quoting is known then
def _agents_sql() -> str:
    column = Agent._meta.get_field
    quote = connection.ops.quote_name
    names = ", ".join(quote(column(name).column) for name in ("key", "id", "is_active", "is_sandbox"))
    workspace = quote(column("workspace").column)
    return f"SELECT {names} FROM {quote(Agent._meta.db_table)} WHERE {workspace} = %s AND {quote('key')} = ANY(%s)"  # noqa: S608


def definition_agents(*, workspace_id: int, keys: list[str]) -> list[tuple[str, int, bool, bool]]:
    """The workspace's agents among `keys` (key, id, is_active, is_sandbox), sandbox ones
    included. Every start reads them (a definition is validated again then): on
    PostgreSQL one constant statement, prepared where connections live on, instead
    of a queryset compiled on every start (0.56 of a start's 1.8 CPU ms)."""
    if not _fast():
        rows = Agent.all_objects.filter(workspace_id=workspace_id, key__in=keys)
        return list(rows.values_list("key", "pk", "is_active", "is_sandbox"))
    with prepared_cursor() as cursor:
        cursor.execute(_agents_sql(), [workspace_id, list(keys)])
        return cursor.fetchall()


# --- the run's end ------------------------------------------------------------------------
_COMPLETE_SQL = f"""
UPDATE {WorkflowRun._meta.db_table}
   SET status = 'completed', outputs = %(outputs)s::jsonb, answer = %(answer)s, finished_at = %(now)s
 WHERE id = %(run)s AND status IN ('pending', 'running', 'waiting')
"""  # noqa: S608


def run_complete(*, run_id: UUID, outputs: dict, answer: str, now: datetime) -> bool:
    """Complete the run unless it ended meanwhile (cancelled, failed), in the caller's
    transaction; False then. On PostgreSQL a statement prepared once (the last step of
    every run sends it), elsewhere the ORM's update."""
    if _fast():
        with prepared_cursor() as cursor:
            cursor.execute(_COMPLETE_SQL, {"outputs": json.dumps(outputs), "answer": answer, "now": now, "run": run_id})
            return cursor.rowcount == 1
    active = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)
    return bool(
        WorkflowRun.all_objects.filter(pk=run_id, status__in=active).update(
            status=RunStatus.COMPLETED, outputs=outputs, answer=answer, finished_at=now
        )
    )


def step_release(*, claim: Claim, error: str, not_before: datetime, now: datetime, turn_id: int | None = None) -> bool:
    """Give a claimed step back (running → pending) to be tried again from
    `not_before`, the attempt that ended at `now` added to its log; False when this
    worker no longer holds it."""
    held = StepRun.objects.filter(pk=claim.step_id, status=StepStatus.RUNNING, attempts=claim.attempts)
    # Read, then a conditional write: the log read belongs to this attempt, and a step
    # another worker took over since matches no row (a retry's path, not every step's).
    step = held.only("attempts", "started_at", "attempt_log").first()
    if step is None:
        return False
    log = step.attempt_log_closed(ended_at=now, error=error, turn_id=turn_id)
    return bool(
        held.update(status=StepStatus.PENDING, error=error, lease_expires_at=None, retry_at=not_before, attempt_log=log)
    )


def step_renew_leases(*, claims: Iterable[Claim], until: datetime) -> int:
    """A worker's heartbeat: push the lease of every step it holds to `until`, in one
    statement, each only while its attempt is still the step's (another worker may
    have taken over a step whose lease passed). Returns how many were renewed."""
    held = reduce(operator.or_, (Q(pk=claim.step_id, attempts=claim.attempts) for claim in claims), Q(pk__in=[]))
    return StepRun.objects.filter(held, status=StepStatus.RUNNING).update(lease_expires_at=until)


# --- waiting (issue 30) -------------------------------------------------------------------
def step_wait(*, claim: Claim, outcome: Outcome) -> bool:
    """The claimed step's turn paused on a call waiting for a person: the step waits
    with no lease (no worker holds it; its approval request does) and its run waits.
    False when this worker no longer holds the step. Lock order: the step, then the run."""
    waited = StepRun.objects.filter(pk=claim.step_id, status=StepStatus.RUNNING, attempts=claim.attempts).update(
        status=StepStatus.WAITING,
        input=outcome.input,
        lease_expires_at=None,
        turn_id=outcome.turn_id,
        agent_version=outcome.agent_version,
        prefix_hash=outcome.prefix_hash,
    )
    if waited:
        with transaction.atomic():
            # Locked before it is read, as `step_take_back` does: a parallel step resumed
            # at this moment reads this step's wait once it is committed, or this update
            # reads the run it put back to running (never both misses, a waiting step in
            # a run that says running).
            _lock_run(claim.run_id)
            WorkflowRun.all_objects.filter(pk=claim.run_id, status=RunStatus.RUNNING).update(status=RunStatus.WAITING)
    return bool(waited)


def _lock_run(run_id: UUID) -> None:
    list(WorkflowRun.all_objects.select_for_update().filter(pk=run_id).values_list("pk", flat=True))


def step_count_attempt(*, step: StepRun, error: str, now: datetime, turn_id: int | None = None) -> bool:
    """A new attempt of a running step whose worker is gone without a lease to show it
    (a resumed turn's): attempts + 1, the one that ended at `now` added to its log.
    False when the step changed since `step` was read."""
    log = step.attempt_log_closed(ended_at=now, error=error, turn_id=turn_id)
    return bool(
        StepRun.objects.filter(
            pk=step.pk, status=StepStatus.RUNNING, attempts=step.attempts, lease_expires_at__isnull=True
        ).update(attempts=F("attempts") + 1, started_at=now, error=error, attempt_log=log)
    )


def step_take_back(*, step_id: int, run_id: UUID, waited_since: datetime, now: datetime) -> StepRun | None:
    """A waiting step whose call was decided, running again for its resumed turn: with
    no lease (the approval request's lease covers the resumed turn, and the step sweep
    leaves lease-less steps alone), and its run running, its wall-clock limit pushed by
    the time it waited (unless another of its steps still waits: the run waits on).
    Also takes back a step a dead resuming worker left running. None when the step is
    neither (cancelled or finished meanwhile)."""
    with transaction.atomic():
        moved = StepRun.objects.filter(
            pk=step_id, status__in=[StepStatus.WAITING, StepStatus.RUNNING], lease_expires_at__isnull=True
        ).update(status=StepStatus.RUNNING)
        if not moved:
            return None
        waited = now - waited_since
        # The run waits while any of its steps does (parallel steps each pause on a call
        # of their own): it runs again with the last of them. Its row locked first (after
        # the step's, the lock order), so of two steps resumed (or one resumed, one
        # pausing) at once the second reads the first one's committed status.
        _lock_run(run_id)
        others_wait = StepRun.objects.filter(run_id=run_id, status=StepStatus.WAITING).exclude(pk=step_id)
        WorkflowRun.all_objects.filter(pk=run_id, status=RunStatus.WAITING).exclude(Exists(others_wait)).update(
            status=RunStatus.RUNNING, deadline_at=F("deadline_at") + waited
        )
        return StepRun.objects.select_related("run").get(pk=step_id)
