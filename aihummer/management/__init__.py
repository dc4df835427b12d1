"""Helpers shared by management commands."""

from collections.abc import Callable
from typing import TypeVar

from django.core.management.base import CommandError

from aihummer.actors import Actor
from aihummer.exceptions import NotFound
from aihummer.models import Workspace

Row = TypeVar("Row")


def workspace_or_error(slug: str) -> Workspace:
    """The workspace named `slug`, or the CommandError an operator reads."""
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"No workspace '{slug}'.")
    return workspace


def by_key_or_error(
    getter: Callable[..., Row], *, workspace: Workspace, key: str, noun: str, actor: Actor | None = None
) -> Row:
    """The row `key` of `workspace` as the program selector `getter` resolves it for the
    operator (sandbox rows included: they are for programs and the operator, see
    `Actor.sees_sandbox_rows`), or the CommandError an operator reads."""
    try:
        return getter(actor=actor or Actor.for_operator(), workspace=workspace, key=key)
    except NotFound:
        raise CommandError(f"No {noun} '{key}' in workspace '{workspace.slug}'.") from None
