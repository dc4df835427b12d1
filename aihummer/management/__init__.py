"""Helpers shared by management commands."""

from django.core.management.base import CommandError

from aihummer.models import Workspace


def workspace_or_error(slug: str) -> Workspace:
    """The workspace named `slug`, or the CommandError an operator reads."""
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"No workspace '{slug}'.")
    return workspace
