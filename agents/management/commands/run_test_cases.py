from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.management import add_agent_arguments, agent_version_or_error
from agents.models import Agent, AgentTestCase, PromptVersion
from agents.runtime.evidence import CaseOutcome, cases_run
from aihummer.actors import Actor


class Command(BaseCommand):
    help = (
        "Run an agent's active test cases on its live version (or --version N), side effects dry; "
        "exits non-zero when a case fails (for CI)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_agent_arguments(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: object, **options: object) -> None:
        actor = Actor.for_operator(name="run_test_cases")
        agent, version = agent_version_or_error(options, actor=actor)
        version = version or agent.live_version
        cases = list(AgentTestCase.objects.filter(agent=agent, is_active=True).order_by("name"))
        if not cases:
            raise CommandError(f"Agent '{agent.key}' has no active test case.")
        outcomes = cases_run(agent=agent, pairs=[(case, version) for case in cases], actor=actor)
        failed = [outcome.case.name for outcome in outcomes if not outcome.passed]
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(agent, version, outcomes), ensure_ascii=False))
        else:
            for outcome in outcomes:
                self.stdout.write(_as_text(outcome))
            self.stdout.write(f"-- {agent.key} v{version.number}: {len(cases) - len(failed)}/{len(cases)} passed")
        if failed:
            raise CommandError(f"{len(failed)} of {len(cases)} test case(s) failed: {', '.join(failed)}.")


def _as_text(outcome: CaseOutcome) -> str:
    lines = [f"{outcome.status.upper():6} {outcome.case.name}"]
    if outcome.error:
        lines.append(f"       error: {outcome.error}")
    for check in outcome.checks:
        if not check.passed:
            lines.append(f"       {check.assertion} {check.expected!r}: {check.detail}")
    return "\n".join(lines)


def _as_json(agent: Agent, version: PromptVersion, outcomes: list[CaseOutcome]) -> dict:
    return {
        "agent": agent.key,
        "version": version.number,
        "passed": sum(outcome.passed for outcome in outcomes),
        "failed": sum(not outcome.passed for outcome in outcomes),
        "cases": [
            {
                "name": outcome.case.name,
                "status": outcome.status,
                "checks": [check.as_dict() for check in outcome.checks],
                "answer": outcome.answer,
                "error": outcome.error or None,
                "tokens": outcome.tokens,
                "cost": str(outcome.cost_usd),
                "turn_id": outcome.turn.pk if outcome.turn else None,
            }
            for outcome in outcomes
        ],
    }
