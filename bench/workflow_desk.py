"""Queries and milliseconds per page of the workflows desk.

Prints the run page and its live fragment (polled every second while a run runs) for
runs of a growing number of steps, then the runs list (with its totals) for a growing
number of runs. Query counts must not grow with either (tests pin them exactly).
Runs execute inline on the echo provider; the list's extra runs are copies of one.
"""

from __future__ import annotations

import uuid

from _django import bench_workspace, page_cost, throwaway_database
from django.test import Client
from django.urls import reverse


def main() -> None:
    from agents.services import agent_create
    from aihummer.models import Membership, User
    from workflows.models import StepRun, WorkflowRun
    from workflows.services import workflow_create, workflow_run_start

    workspace, operator = bench_workspace()
    bob = User.objects.create_user("bob", password="x")
    Membership.objects.create(user=bob, workspace=workspace, role="reviewer")
    agent_create(workspace=workspace, actor=operator, key="a", name="A", snapshot={"system_prompt": "Hi."})
    client = Client()
    client.force_login(bob)

    print(f"{'steps':>6} {'page q':>7} {'page ms':>8} {'live q':>7} {'live ms':>8}")
    for steps in (3, 30, 100):
        definition = {
            "version": 1,
            "steps": [{"name": "s0", "agent_name": "a", "depends_on": []}]
            + [{"name": f"s{i}", "agent_name": "a", "depends_on": ["s0"]} for i in range(1, steps)],
        }
        workflow = workflow_create(
            workspace=workspace, actor=operator, key=f"w{steps}", name="W", definition=definition
        )
        run = workflow_run_start(workflow=workflow, actor=operator, message="Bonjour")
        assert StepRun.objects.filter(run=run, status="completed").count() == steps
        page = page_cost(client, reverse("admin:workflows_workflowrun_change", args=[run.pk]))
        live = page_cost(client, reverse("admin:workflows_workflowrun_live", args=[run.pk]))
        print(f"{steps:>6} {page[0]:>7} {page[1]:>8.1f} {live[0]:>7} {live[1]:>8.1f}")

    template = WorkflowRun.objects.order_by("created_at").first()
    print(f"\n{'runs':>6} {'list q':>7} {'list ms':>8}")
    for total in (10, 100, 1000):
        missing = total - WorkflowRun.objects.count()
        copies = []
        for _ in range(max(missing, 0)):
            copy = WorkflowRun.objects.get(pk=template.pk)
            copy.pk = uuid.uuid4()
            copies.append(copy)
        WorkflowRun.objects.bulk_create(copies)
        listed = page_cost(client, reverse("admin:workflows_workflowrun_changelist"))
        print(f"{total:>6} {listed[0]:>7} {listed[1]:>8.1f}")


if __name__ == "__main__":
    with throwaway_database():
        main()
