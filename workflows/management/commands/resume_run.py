from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from workflows.selectors import workflow_run_get
from workflows.services import workflow_run_resume


class Command(BaseCommand):
    help = "Resume a failed workflow run: its failed and unstarted steps run again (inline without a broker)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_id")

    def handle(self, *args: object, **options: object) -> None:
        actor = Actor.for_operator()
        try:
            run = workflow_run_resume(run=workflow_run_get(run_id=options["run_id"], actor=actor), actor=actor)
        except (ApplicationError, PermissionDenied) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"run {run.pk}: {run.status}")
