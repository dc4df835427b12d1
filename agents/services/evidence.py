"""Evidence use cases: an agent's saved test cases, queueing their runs on proposals,
and the approval policy on regressions.

Running the cases needs the runtime, which needs the services: that part lives in
`agents.runtime.evidence`, reached only through the task.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from agents.evidence import ASSERTION_FIELDS
from agents.models import Agent, AgentTestCase, CaseResult, EvidenceRun, PromptVersion
from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError, NotFound
from aihummer.history import stamp
from aihummer.tasks import enqueue

CASE_FIELDS = ("name", "message", "input", "is_active", *ASSERTION_FIELDS)


class UnconfirmedRegressions(ApplicationError):
    """The workspace blocks approval on regressions and these were not confirmed."""


# --- test cases -----------------------------------------------------------------------------
def _require_case_rights(actor: Actor, agent: Agent) -> None:
    if not actor.belongs_to(agent.workspace):
        raise NotFound("Unknown agent.")
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.PROPOSE, agent.workspace)


def agent_test_case_create(
    *,
    agent: Agent,
    actor: Actor,
    name: str,
    message: str = "",
    input: dict | None = None,
    assertions: dict | None = None,
    is_active: bool = True,
) -> AgentTestCase:
    """A new saved case on `agent`; open proposals re-run their evidence with it."""
    _require_case_rights(actor, agent)
    case = AgentTestCase(agent=agent, name=name, message=message, input=input, is_active=is_active)
    _set_assertions(case, assertions or {})
    with transaction.atomic():
        _save_case(case, actor=actor, reason="created")
        evidence_request_for_agent(agent=agent)
    return case


def agent_test_case_update(*, case: AgentTestCase, actor: Actor, **fields: object) -> AgentTestCase:
    """Change a case. `assertions`, when given, replaces all of them (absent ones are
    cleared); other fields are set one by one. Open proposals re-run their evidence."""
    _require_case_rights(actor, case.agent)
    assertions = fields.pop("assertions", None)
    unknown = set(fields) - set(CASE_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown test case field."))
    with transaction.atomic():
        case = AgentTestCase.objects.select_for_update().select_related("agent__workspace").get(pk=case.pk)
        for field, value in fields.items():
            setattr(case, field, value)
        if assertions is not None:
            _set_assertions(case, assertions)
        _save_case(case, actor=actor, reason="updated")
        evidence_request_for_agent(agent=case.agent)
    return case


def agent_test_case_delete(*, case: AgentTestCase, actor: Actor) -> None:
    """Delete a case; its past results stay with the versions they judged."""
    _require_case_rights(actor, case.agent)
    with transaction.atomic():
        stamp(case, actor=actor, reason="deleted")
        case.delete()
        evidence_request_for_agent(agent=case.agent)


def _set_assertions(case: AgentTestCase, assertions: dict) -> None:
    if not isinstance(assertions, dict):
        raise ValidationError({"assertions": "Give the assertions as an object."})
    unknown = set(assertions) - set(ASSERTION_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), f"Unknown assertion; use {', '.join(ASSERTION_FIELDS)}."))
    for field in ASSERTION_FIELDS:
        default = [] if field in ("contains", "not_contains") else (False if field == "case_insensitive" else None)
        value = assertions.get(field, default)
        setattr(case, field, "" if field == "regex" and value is None else value)


def _save_case(case: AgentTestCase, *, actor: Actor, reason: str) -> None:
    case.full_clean(validate_unique=False, validate_constraints=False)
    clash = AgentTestCase.objects.filter(agent_id=case.agent_id, name=case.name).exclude(pk=case.pk).exists()
    if clash:
        taken = gettext("Agent '%(agent)s' already has a test case named '%(name)s'.")
        raise ValidationError({"name": taken % {"agent": case.agent.key, "name": case.name}})
    if case.is_active:
        active = AgentTestCase.objects.filter(agent_id=case.agent_id, is_active=True).exclude(pk=case.pk).count()
        if active >= settings.AIHUMMER_MAX_TEST_CASES:
            raise ValidationError(
                {
                    "is_active": f"Agent '{case.agent.key}' already has {active} active test cases, the most "
                    "AIHUMMER_MAX_TEST_CASES allows: deactivate one first."
                }
            )
    stamp(case, actor=actor, reason=reason)
    try:
        with transaction.atomic():
            case.save()
    except IntegrityError as exc:
        concurrent = gettext("A test case named '%(name)s' was saved concurrently.")
        raise ValidationError({"name": concurrent % {"name": case.name}}) from exc


# --- evidence runs --------------------------------------------------------------------------
def evidence_request(*, version: PromptVersion, trigger: str) -> EvidenceRun | None:
    """Queue an evidence run for a pending, non-sandbox proposal, executed by a worker
    once the transaction commits. None when there is nothing to run (no active case
    and no judge), or when a run is already queued: it has not started, so it will
    read the cases as they are then."""
    if not version.is_pending or version.is_sandbox:
        return None
    workspace = version.workspace
    has_cases = AgentTestCase.objects.filter(agent_id=version.agent_id, is_active=True).exists()
    if not has_cases and workspace.judge_preset_id is None:
        return None
    if EvidenceRun.objects.filter(version=version, status=EvidenceRun.Status.QUEUED).exists():
        return None
    run = EvidenceRun.objects.create(
        workspace_id=version.workspace_id,
        version=version,
        trigger=trigger,
        judge_status=EvidenceRun.JudgeStatus.PENDING if workspace.judge_preset_id else EvidenceRun.JudgeStatus.NONE,
    )
    enqueue("agents.evidence_run_execute", run.pk)
    return run


def evidence_request_for_agent(*, agent: Agent, trigger: str = EvidenceRun.Trigger.CASES_CHANGED) -> list[EvidenceRun]:
    """Re-run the evidence of every open proposal of `agent` (its cases changed)."""
    pending = PromptVersion.objects.pending().filter(agent_id=agent.pk).select_related("workspace").order_by("pk")
    return [run for version in pending if (run := evidence_request(version=version, trigger=trigger))]


def evidence_latest(*, version: PromptVersion) -> EvidenceRun | None:
    """The newest evidence run of `version`, finished or not."""
    return EvidenceRun.objects.filter(version=version).first()


def evidence_regressions(run: EvidenceRun | None) -> list[str]:
    """Names of the cases that pass on live and not on the candidate in `run`."""
    if run is None or run.status != EvidenceRun.Status.DONE or not run.regressions:
        return []
    by_case: dict[str, dict[str, bool]] = {}
    for name, side, status in run.results.values_list("case_name", "side", "status"):
        by_case.setdefault(name, {})[side] = status == CaseResult.Status.PASSED
    return sorted(
        name
        for name, sides in by_case.items()
        if sides.get(CaseResult.Side.LIVE) and not sides.get(CaseResult.Side.CANDIDATE)
    )


def evidence_regressions_to_confirm(*, version: PromptVersion) -> list[str]:
    """The cases an approval of `version` must name (the workspace blocks approval on
    regressions), from its latest finished evidence; empty when nothing is needed."""
    if not version.workspace.block_approval_on_regressions:
        return []
    return evidence_regressions(EvidenceRun.objects.filter(version=version, status=EvidenceRun.Status.DONE).first())


def evidence_require_confirmed(*, version: PromptVersion, confirmed: Iterable[str]) -> None:
    """With the workspace's "block approval on regressions" on, refuse to approve a
    proposal whose latest finished evidence has regressions, unless every one of them
    is named in `confirmed`. Called by the approval service under its locks."""
    confirmed = set(confirmed)
    missing = [name for name in evidence_regressions_to_confirm(version=version) if name not in confirmed]
    if missing:
        raise UnconfirmedRegressions(
            f"Version {version.number} fails test cases that pass on live: {', '.join(missing)}. Workspace "
            f"'{version.workspace.slug}' blocks approval on regressions: confirm these cases to approve.",
            extra={"regressions": missing},
        )
