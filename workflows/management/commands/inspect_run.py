from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from aihummer.actors import Actor
from aihummer.exceptions import NotFound
from workflows.selectors import workflow_run_get, workflow_run_summary


def print_summary(command: BaseCommand, summary: dict, *, as_json: bool) -> None:
    """A run as one JSON object, or as lines a person reads."""
    if as_json:
        command.stdout.write(json.dumps(summary, ensure_ascii=False))
        return
    command.stdout.write(
        f"run {summary['id']} of {summary['workflow']} v{summary['workflow_version']}: {summary['status']}"
    )
    for step in summary["steps"]:
        timing = f"{step['started_at'] or '-'} → {step['finished_at'] or '-'}"
        line = f"  {step['name']:<20} {step['status']:<10} {step['agent']} v{step['agent_version'] or '-'}  {timing}"
        command.stdout.write(line + (f"\n    {step['error']}" if step["error"] else ""))
    if summary["error"]:
        command.stdout.write(f"error: {summary['error']}")
    if summary["answer"]:
        command.stdout.write(summary["answer"])
    tokens = summary["tokens"]
    command.stdout.write(f"-- {tokens['input']} in / {tokens['output']} out tokens, ${summary['cost']}")


class Command(BaseCommand):
    help = "Show a workflow run: status, steps (input, output, times, tokens, cost), outputs and answer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: object, **options: object) -> None:
        try:
            run = workflow_run_get(run_id=options["run_id"], actor=Actor.for_operator())
        except NotFound as exc:
            raise CommandError(exc.message) from exc
        print_summary(self, workflow_run_summary(run), as_json=options["json"])
