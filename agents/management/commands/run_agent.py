from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import Agent, DebugLog, PromptVersion
from agents.runtime import agent_turn_run
from aihummer.actors import Actor
from aihummer.management import workspace_or_error


class Command(BaseCommand):
    help = "Run one turn of an agent (its live version, or --version N) and print the answer, usage and cost."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace", help="workspace slug")
        parser.add_argument("agent", help="agent key")
        parser.add_argument("message")
        # `--version` here is a prompt version: replace Django's own --version flag.
        parser.conflict_handler = parser._optionals.conflict_handler = "resolve"
        parser.add_argument("--version", type=int, help="run this version number instead of the live one")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: object, **options: object) -> None:
        workspace = workspace_or_error(options["workspace"])
        agent = (
            Agent.objects.select_related("live_version", "preset")
            .filter(workspace=workspace, key=options["agent"])
            .first()
        )
        if agent is None:
            raise CommandError(f"No agent '{options['agent']}' in workspace '{workspace.slug}'.")
        version = None
        if options["version"] is not None:
            version = PromptVersion.objects.filter(agent=agent, number=options["version"]).first()
            if version is None:
                raise CommandError(f"Agent '{agent.key}' has no version {options['version']}.")
        try:
            turn = agent_turn_run(agent=agent, message=options["message"], actor=Actor.for_operator(), version=version)
        except (ValidationError, PermissionDenied) as exc:
            raise CommandError("; ".join(getattr(exc, "messages", [str(exc)]))) from exc
        last_log = DebugLog.all_objects.filter(turn=turn).order_by("-sequence").first()
        result = {
            "answer": turn.answer,
            "error": turn.error or None,
            "status": turn.status,
            "model": f"{turn.provider_name}:{turn.model}" if turn.model else None,
            "version": turn.version_number,
            "usage": {
                "input_tokens": turn.input_tokens,
                "output_tokens": turn.output_tokens,
                "cached_input_tokens": turn.cached_input_tokens,
                "model_calls": turn.model_calls,
            },
            "cost": str(turn.cost_usd),
            "turn_id": turn.pk,
            "debug_log_id": last_log.pk if last_log else None,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self.stdout.write(turn.answer if turn.status == "succeeded" else f"FAILED: {turn.error}")
            usage = result["usage"]
            self.stdout.write(
                f"-- {result['model']} v{turn.version_number}: {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out tokens, {usage['model_calls']} call(s), ${turn.cost_usd}; "
                f"turn {turn.pk}, debug log {result['debug_log_id']}"
            )
        if turn.status != "succeeded":
            raise CommandError(turn.error)
