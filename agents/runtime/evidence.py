"""Running saved test cases through the runtime, side effects dry (like try-it), and
the judge after them. Called by the evidence task and by `run_test_cases`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from agents.evidence import Check, evaluate
from agents.judge import CaseLine, JudgeUnavailable, judge_call, judge_messages
from agents.models import Agent, AgentTestCase, AgentTurn, CaseResult, EvidenceRun, PromptVersion
from agents.redaction import Redactor
from agents.rendering import render_prefix
from agents.runtime.loop import agent_run_test
from agents.runtime.providers.base import ProviderError
from agents.services import preset_api_key
from aihummer.actors import Actor

logger = logging.getLogger(__name__)


@dataclass
class CaseOutcome:
    """One case run on one version: each assertion's check, and what the turn gave."""

    case: AgentTestCase
    version: PromptVersion
    status: str
    checks: list[Check] = field(default_factory=list)
    answer: str = ""
    error: str = ""
    tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    turn: AgentTurn | None = None

    @property
    def passed(self) -> bool:
        return self.status == CaseResult.Status.PASSED


def evidence_actor() -> Actor:
    """Who runs the evidence: the system, for nobody in particular (never a reviewer)."""
    return Actor.for_operator(name="evidence", surface="task")


def case_run(*, agent: Agent, case: AgentTestCase, version: PromptVersion, actor: Actor) -> CaseOutcome:
    """Run `case` on `version` without side effects and judge the answer."""
    try:
        turn = agent_run_test(agent=agent, message=case.prompt, actor=actor, version=version)
    except Exception as exc:  # a refusal or a bug: still one readable, failed result
        logger.exception("Test case %s of agent %s could not run", case.pk, agent.key)
        return CaseOutcome(case=case, version=version, status=CaseResult.Status.ERROR, error=str(exc))
    tokens = turn.input_tokens + turn.output_tokens
    outcome = CaseOutcome(
        case=case, version=version, status="", answer=turn.answer, tokens=tokens, cost_usd=turn.cost_usd, turn=turn
    )
    if turn.status != AgentTurn.Status.SUCCEEDED:
        outcome.status, outcome.error = CaseResult.Status.ERROR, turn.error
        return outcome
    outcome.checks = evaluate(case.assertions(), answer=turn.answer, tokens=tokens, cost_usd=turn.cost_usd)
    passed = all(check.passed for check in outcome.checks)
    outcome.status = CaseResult.Status.PASSED if passed else CaseResult.Status.FAILED
    return outcome


def cases_run(*, agent: Agent, pairs: Sequence[tuple[AgentTestCase, PromptVersion]], actor: Actor) -> list[CaseOutcome]:
    """Run each (case, version) pair, at most AIHUMMER_EVIDENCE_CONCURRENCY at once (one
    at a time on SQLite); outcomes come back in the order of `pairs`."""
    return _parallel(
        [lambda c=case, v=version: case_run(agent=agent, case=c, version=v, actor=actor) for case, version in pairs]
    )


def _parallel(calls: list[Callable[[], CaseOutcome]]) -> list[CaseOutcome]:
    workers = min(settings.AIHUMMER_EVIDENCE_CONCURRENCY, len(calls))
    # SQLite (the embedded default) takes one writer at a time: turns in parallel threads
    # would fail with "database is locked".
    if workers <= 1 or connection.vendor == "sqlite":
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evidence") as pool:
        return list(pool.map(_in_own_connection, calls))


def _in_own_connection(call: Callable[[], CaseOutcome]) -> CaseOutcome:
    try:
        return call()
    finally:
        connection.close()  # a pool thread's connection must not outlive its task


def evidence_run_execute(*, run_id: int) -> EvidenceRun | None:
    """Run a queued evidence run: every active case on the candidate and on live, then
    the judge. Claimed with a conditional update, so a re-delivered task does nothing."""
    claimed = EvidenceRun.objects.filter(pk=run_id, status=EvidenceRun.Status.QUEUED).update(
        status=EvidenceRun.Status.RUNNING, started_at=timezone.now()
    )
    if claimed != 1:
        return None
    run = EvidenceRun.objects.select_related(
        "version__agent__live_version", "version__agent__workspace", "workspace__judge_preset__credential"
    ).get(pk=run_id)
    try:
        _execute(run)
    except Exception as exc:  # a bug must still leave a finished, readable run
        logger.exception("Evidence run %s failed", run.pk)
        run.status, run.error = EvidenceRun.Status.FAILED, f"Internal error ({type(exc).__name__}); it was logged."
        if run.judge_status == EvidenceRun.JudgeStatus.PENDING:
            run.judge_status, run.judge_error = EvidenceRun.JudgeStatus.UNAVAILABLE, "The evidence run failed."
    run.finished_at = timezone.now()
    run.save()
    return run


def _execute(run: EvidenceRun) -> None:
    version = run.version
    agent = version.agent
    live = agent.live_version
    run.live_version = live
    cases = list(AgentTestCase.objects.filter(agent=agent, is_active=True).order_by("name"))
    pairs = [(case, side) for case in cases for side in (version, live)]
    outcomes = cases_run(agent=agent, pairs=pairs, actor=evidence_actor())
    candidate, on_live = outcomes[0::2], outcomes[1::2]
    # A case deleted while its turns ran keeps its results, by name, without the link.
    kept = set(AgentTestCase.objects.filter(pk__in=[case.pk for case in cases]).values_list("pk", flat=True))
    with transaction.atomic():
        CaseResult.objects.bulk_create(
            [_result(run, o, CaseResult.Side.CANDIDATE, kept) for o in candidate]
            + [_result(run, o, CaseResult.Side.LIVE, kept) for o in on_live]
        )
    run.cases_total = len(cases)
    run.candidate_passed = sum(o.passed for o in candidate)
    run.live_passed = sum(o.passed for o in on_live)
    run.regressions = sum(lv.passed and not c.passed for c, lv in zip(candidate, on_live, strict=True))
    run.status = EvidenceRun.Status.DONE
    if run.judge_status == EvidenceRun.JudgeStatus.PENDING:
        _judge(run, candidate, on_live)


def _result(run: EvidenceRun, outcome: CaseOutcome, side: str, kept: set[int]) -> CaseResult:
    return CaseResult(
        run=run,
        case=outcome.case if outcome.case.pk in kept else None,
        case_name=outcome.case.name,
        side=side,
        version=outcome.version,
        version_number=outcome.version.number,
        status=outcome.status,
        checks=[check.as_dict() for check in outcome.checks],
        answer=outcome.answer,
        error=outcome.error,
        tokens=outcome.tokens,
        cost_usd=outcome.cost_usd,
        turn=outcome.turn,
    )


def _judge(run: EvidenceRun, candidate: list[CaseOutcome], on_live: list[CaseOutcome]) -> None:
    preset = run.workspace.judge_preset
    if preset is None:  # the setting was cleared since the run was queued
        run.judge_status, run.judge_error = EvidenceRun.JudgeStatus.UNAVAILABLE, "No judge preset is set any more."
        return
    run.judge_preset_key = preset.key
    lines = [
        CaseLine(name=c.case.name, live_passed=lv.passed, candidate_passed=c.passed, candidate_answer=c.answer)
        for c, lv in zip(candidate, on_live, strict=True)
    ]
    messages = judge_messages(
        live_prompt=render_prefix(run.live_version.snapshot, first_turn=True),
        candidate_prompt=render_prefix(run.version.snapshot, first_turn=True),
        cases=lines,
    )
    try:
        judgement = judge_call(
            model=preset.model,
            base_url=preset.base_url,
            api_key=preset_api_key(preset=preset),
            timeout_seconds=preset.timeout_seconds,
            max_output_tokens=preset.max_output_tokens,
            messages=messages,
        )
    except (JudgeUnavailable, ProviderError) as exc:
        run.judge_status = EvidenceRun.JudgeStatus.UNAVAILABLE
        error = exc.message if isinstance(exc, ProviderError) else str(exc)
        run.judge_error = Redactor.for_workspace(run.workspace_id).text(error)
        return
    # The judge is a provider like any other: it may echo its key (or any secret it
    # was shown) into its rationale, which is stored and shown to every viewer.
    run.judge_status = EvidenceRun.JudgeStatus.DONE
    run.judgement = Redactor.for_workspace(run.workspace_id).value(judgement.model_dump())
