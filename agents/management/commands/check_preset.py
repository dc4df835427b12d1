from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runtime.preset_check import preset_check
from agents.selectors import preset_get_by_key
from aihummer.actors import Actor
from aihummer.management import by_key_or_error, workspace_or_error


class Command(BaseCommand):
    help = 'Send one tiny request ("Reply with OK.") with a preset and print the model, latency and tokens.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace", help="workspace slug")
        parser.add_argument("preset", help="preset key")

    def handle(self, *args: object, **options: object) -> None:
        workspace = workspace_or_error(options["workspace"])
        preset = by_key_or_error(preset_get_by_key, workspace=workspace, key=options["preset"], noun="preset")
        try:
            result = preset_check(preset=preset, actor=Actor.for_operator())
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from exc
        if not result.ok:
            raise CommandError(
                f"{preset.key} ({result.provider_name}:{result.model}) failed after {result.latency_ms} ms: "
                f"{result.error_kind}: {result.error_message}"
            )
        usage = result.usage
        self.stdout.write(
            f"OK: {preset.key} ({result.provider_name}:{result.model}) answered {result.text!r} "
            f"in {result.latency_ms} ms; {usage.input_tokens} in ({usage.cached_input_tokens} cached) / "
            f"{usage.output_tokens} out tokens, finish {result.finish_reason}."
        )
