"""Template tags of the workflows desk shown on other pages: the count of running runs
on the admin index, and on an agent version's review page the runs that ran it."""

from __future__ import annotations

from django import template

from aihummer.actors import Actor
from workflows.selectors import prompt_version_runs, workflow_run_running_count

register = template.Library()
LINEAGE_SHOWN = 10


@register.simple_tag(takes_context=True)
def running_run_count(context: template.Context) -> int:
    """Workflow runs in progress that the current person may see (one query)."""
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return 0
    return workflow_run_running_count(actor=Actor.for_request(request))


@register.inclusion_tag("admin/workflows/_version_runs.html", takes_context=True)
def version_runs(context: template.Context, version: object) -> dict:
    """The newest runs whose steps ran `version`, with a link to all of them (two queries)."""
    runs = prompt_version_runs(version=version, actor=Actor.for_request(context["request"]))
    shown = list(
        runs.select_related(None).only("pk", "workflow_key", "workflow_version", "status", "created_at")[
            : LINEAGE_SHOWN + 1
        ]
    )
    return {"version": version, "runs": shown[:LINEAGE_SHOWN], "more": len(shown) > LINEAGE_SHOWN}
