"""Sandbox rows: ordinary rows with `is_sandbox = True`, hidden from every person.

`Model.objects` (the default manager: admin, API lists, pickers, reverse relations)
never returns them; `Model.all_objects` sees everything and is used, explicitly, by
resolvers, key checks, dependents lists and cleanup. The base manager stays Django's
plain one, so `run.agent` and cascades still reach hidden rows.
"""

from __future__ import annotations

from django.db import models


class SandboxQuerySet(models.QuerySet):
    def for_workspace(self, workspace: object) -> SandboxQuerySet:
        """Rows of one workspace (a Workspace or its id): every sandboxed model has one."""
        return self.filter(workspace=workspace)

    def real(self) -> SandboxQuerySet:
        return self.filter(is_sandbox=False)

    def sandbox(self) -> SandboxQuerySet:
        return self.filter(is_sandbox=True)


class VisibleManager(models.Manager):
    """The default manager: sandbox rows do not exist for it."""

    def get_queryset(self) -> SandboxQuerySet:
        return super().get_queryset().filter(is_sandbox=False)


class SandboxedModel(models.Model):
    """Subclasses with a QuerySet of their own declare both managers again, `objects`
    first: `VisibleManager.from_queryset(TheirQuerySet)()` and
    `models.Manager.from_queryset(TheirQuerySet)()`."""

    is_sandbox = models.BooleanField(default=False, editable=False, db_index=True)

    objects = VisibleManager.from_queryset(SandboxQuerySet)()
    all_objects = models.Manager.from_queryset(SandboxQuerySet)()  # sees sandbox rows too: say why where used

    class Meta:
        abstract = True
