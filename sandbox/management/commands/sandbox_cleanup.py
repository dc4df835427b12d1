from __future__ import annotations

from django.apps import apps
from django.core.management.base import BaseCommand, CommandParser

from aihummer.actors import Actor
from aihummer.management import workspace_or_error
from sandbox.services import sandbox_cleanup


class Command(BaseCommand):
    help = "Delete every sandbox row of a workspace (runs, workflows, agents, presets); debug logs are kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")

    def handle(self, *args: object, **options: str) -> None:
        workspace = workspace_or_error(options["workspace"])
        counts = sandbox_cleanup(workspace=workspace, actor=Actor.for_operator())
        names = {model._meta.model_name: model._meta.verbose_name for model in apps.get_models()}
        summary = ", ".join(f"{count} {names.get(name, name)}(s)" for name, count in counts.items())
        self.stdout.write(f"Deleted from '{workspace.slug}': {summary}.")
