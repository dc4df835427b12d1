from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.management import add_agent_arguments, agent_version_or_error
from agents.models import DebugLog
from agents.runtime import agent_turn_run
from aihummer.actors import Actor


class Command(BaseCommand):
    help = "Run one turn of an agent (its live version, or --version N) and print the answer, usage and cost."

    def add_arguments(self, parser: CommandParser) -> None:
        add_agent_arguments(parser)
        parser.add_argument("message")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: object, **options: object) -> None:
        actor = Actor.for_operator()
        agent, version = agent_version_or_error(options, actor=actor)
        try:
            turn = agent_turn_run(agent=agent, message=options["message"], actor=actor, version=version)
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
