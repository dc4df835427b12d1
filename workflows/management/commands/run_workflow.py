from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from aihummer.actors import Actor
from aihummer.exceptions import ApplicationError
from aihummer.management import workspace_or_error
from workflows.management.commands.inspect_run import print_summary
from workflows.selectors import validation_messages, workflow_run_summary
from workflows.services import workflow_get, workflow_run_start, workflow_run_wait


class Command(BaseCommand):
    help = (
        "Start a run of a workflow. Without a broker it runs here, inline; with one, it waits up to --wait "
        "seconds for the workers (0: print the run id and return)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace", help="workspace slug")
        parser.add_argument("workflow", help="workflow key")
        parser.add_argument("--message", help="the run's message ($.inputs.message)")
        parser.add_argument("--inputs", help="the run's inputs, a JSON object")
        parser.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the run (default 300)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: object, **options: object) -> None:
        workspace = workspace_or_error(options["workspace"])
        inputs = None
        if options["inputs"] is not None:
            try:
                inputs = json.loads(options["inputs"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--inputs is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from exc
        actor = Actor.for_operator()
        try:
            workflow = workflow_get(workspace=workspace, key=options["workflow"], actor=actor)
            run = workflow_run_start(workflow=workflow, actor=actor, message=options["message"], inputs=inputs)
        except ValidationError as exc:
            raise CommandError("; ".join(validation_messages(exc))) from exc
        except (ApplicationError, PermissionDenied) as exc:
            raise CommandError(str(exc)) from exc
        if options["wait"] > 0:
            run = workflow_run_wait(run=run, timeout=options["wait"])
        print_summary(self, workflow_run_summary(run), as_json=options["json"])
        if run.status == run.Status.FAILED:
            raise CommandError(f"Run {run.pk} failed: {run.error}")
        if not run.is_finished and options["wait"] > 0:
            raise CommandError(f"Run {run.pk} is still {run.status} after {options['wait']:g} s.")
