from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from aihummer.actors import Actor
from aihummer.exceptions import validation_error_detail
from aihummer.management import workspace_or_error
from aihummer.models import User
from aihummer.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key and print it (on the last line) once; only its digest is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--name", required=True, help="key name, unique in the workspace")
        parser.add_argument("--scopes", required=True, help="comma-separated: read,write,publish")
        parser.add_argument("--owner", help="username of the person answerable for the key")

    def handle(self, *args: object, **options: str) -> None:
        workspace = workspace_or_error(options["workspace"])
        owner = None
        if options["owner"]:
            owner = User.objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"No user '{options['owner']}'.")
        try:
            api_key, raw_key = api_key_create(
                workspace=workspace,
                name=options["name"],
                scopes=options["scopes"],
                owner=owner,
                actor=Actor.for_operator(),
            )
        except ValidationError as exc:
            raise CommandError(_describe(exc)) from exc
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"API key '{api_key.name}' for workspace '{workspace.slug}' (scopes {api_key.scopes}).")
        self.stdout.write("Store it now; it cannot be shown again:")
        self.stdout.write(raw_key)


def _describe(error: ValidationError) -> str:
    detail = validation_error_detail(error)
    return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in detail.items())
