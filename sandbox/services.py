"""Sandbox cleanup: delete a workspace's sandbox rows, dependents first; and the sweep
that beat runs to remove the ones nobody cleaned up."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.apps import apps
from django.conf import settings
from django.db import models, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from aihummer.actors import Actor, Verb
from aihummer.exceptions import ApplicationError
from aihummer.models import Workspace

logger = logging.getLogger(__name__)

# Dependents before what they depend on. Models of apps not built yet are skipped.
CLEANUP_ORDER = ("workflows.WorkflowRun", "workflows.Workflow", "agents.Agent", "agents.Preset")
# Rows deleted per statement. Measured with bench/sandbox_cleanup.py (PostgreSQL, 2
# cores): 8-10 ms per agent with its versions and sections, so a batch of 100 holds its
# locks for about a second, while bigger batches gained nothing (3.2 s vs 3.3 s for 400).
CLEANUP_BATCH_SIZE = 100


class SandboxBusy(ApplicationError):
    """A sandbox run is still pending, running or waiting: its rows are not deleted under it."""


def _models() -> list[type[models.Model]]:
    found = []
    for label in CLEANUP_ORDER:
        try:
            found.append(apps.get_model(label))
        except LookupError:
            continue
    return found


def _unfinished_runs(workspace: Workspace) -> int:
    try:
        run_model = apps.get_model("workflows.WorkflowRun")
    except LookupError:
        return 0
    # all_objects: the runs that matter here are sandbox runs, hidden from `objects`.
    return run_model.all_objects.filter(workspace=workspace, is_sandbox=True).in_progress().count()


def _deletable(model: type[models.Model], workspace: Workspace, created_before: object) -> models.QuerySet:
    # all_objects: cleanup is exactly the code that must see sandbox rows.
    queryset = model.all_objects.filter(workspace=workspace, is_sandbox=True)
    if created_before is not None:
        queryset = queryset.filter(created_at__lt=created_before)
        if model._meta.label == "agents.Preset":
            # Agents protect their preset: an old preset stays while a younger agent uses it.
            agent_model = apps.get_model("agents.Agent")
            queryset = queryset.exclude(Exists(agent_model.all_objects.filter(preset=OuterRef("pk"))))
    return queryset


def sandbox_cleanup(
    *, workspace: Workspace, actor: Actor, older_than: timedelta | None = None, atomic: bool = True
) -> dict[str, int]:
    """Delete the workspace's sandbox rows (only those created more than `older_than`
    ago, if given); returns counts per model name. Idempotent. Refused while one of its
    sandbox runs is pending or running: the run finishes, or is cancelled, first.

    `atomic`: all or nothing in one transaction (a caller cleaning up its own sandbox);
    otherwise each batch commits on its own, holding its locks briefly (the sweep)."""
    actor.require(Verb.SANDBOX, workspace)
    created_before = timezone.now() - older_than if older_than is not None else None
    with transaction.atomic() if atomic else _nothing():
        if atomic:
            # One cleanup of a workspace at a time, and no new run of it meanwhile waits.
            Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        busy = _unfinished_runs(workspace)
        if busy:
            raise SandboxBusy(
                f"{busy} sandbox run(s) of this workspace are still pending, running or waiting: "
                "wait for them to finish (or cancel them), then clean up again.",
                extra={"runningRuns": busy},
            )
        counts: dict[str, int] = {}
        for model in _models():
            queryset = _deletable(model, workspace, created_before)
            deleted = 0
            while ids := list(queryset.order_by("pk").values_list("pk", flat=True)[:CLEANUP_BATCH_SIZE]):
                with transaction.atomic():
                    model.all_objects.filter(pk__in=ids).delete()
                deleted += len(ids)
            counts[model._meta.model_name] = deleted
    return counts


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def sandbox_sweep(*, older_than: timedelta | None = None, workspace: Workspace | None = None) -> dict[str, dict]:
    """Beat's sweep (and `manage.py sandbox_cleanup`): the sandbox rows older than
    `older_than` (default `AIHUMMER_SANDBOX_TTL` seconds), workspace by workspace, in
    batches; a workspace with a sandbox run still going is skipped until it ends.
    Returns the counts per workspace slug (`{"skipped": n}` for a busy one)."""
    if older_than is None:
        older_than = timedelta(seconds=settings.AIHUMMER_SANDBOX_TTL)
    workspaces = [workspace] if workspace is not None else _workspaces_with_sandbox_rows()
    report: dict[str, dict] = {}
    for each in workspaces:
        try:
            counts = sandbox_cleanup(workspace=each, actor=Actor.for_operator(), older_than=older_than, atomic=False)
        except SandboxBusy as exc:
            logger.info("Sandbox sweep of %s skipped: %s", each.slug, exc.message)
            report[each.slug] = {"skipped": exc.extra["runningRuns"]}
            continue
        if any(counts.values()):
            logger.info("Sandbox sweep of %s: %s", each.slug, describe_counts(counts))
        report[each.slug] = counts
    return report


def describe_counts(counts: dict[str, int]) -> str:
    """`{"workflowrun": 1, "agent": 2}` → "1 workflow run(s), 2 agent(s)"."""
    names = {model._meta.model_name: model._meta.verbose_name for model in _models()}
    return ", ".join(f"{count} {names.get(name, name)}(s)" for name, count in counts.items())


def _workspaces_with_sandbox_rows() -> list[Workspace]:
    ids: set[int] = set()
    for model in _models():
        ids.update(model.all_objects.filter(is_sandbox=True).values_list("workspace_id", flat=True).distinct())
    return list(Workspace.objects.filter(pk__in=ids).order_by("slug"))
