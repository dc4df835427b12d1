"""Rows for the multi-host run, written from inside a host with the recipe's
environment (the test's own connection may not reach that database):

    python -c "import django; django.setup(); from workflows.tests.multihost_seed import seed; seed(URL, N)"

A workspace, a read/write API key (printed on the last line), a credential and an
OpenAI-compatible preset at URL (or the offline echo provider when URL is "echo"), and
workflow `fan`: N parallel steps, then a join."""

from __future__ import annotations

import sys

from agents.services import agent_create, credential_create, preset_create
from aihummer.actors import Actor
from aihummer.models import Workspace
from aihummer.services import api_key_create
from workflows.services import workflow_create


def fan_definition(width: int) -> dict:
    branches = [f"p{index}" for index in range(1, width + 1)]
    return {
        "version": 1,
        "steps": [
            *({"name": name, "agent_name": "branch", "depends_on": []} for name in branches),
            {
                "name": "join",
                "agent_name": "join",
                "depends_on": branches,
                "input_mapping": {name: f"$.steps.{name}.output.answer" for name in branches},
            },
        ],
    }


def seed(model_url: str, width: int) -> None:
    operator = Actor.for_operator(name="multihost")
    workspace, _ = Workspace.objects.get_or_create(slug="hosts", defaults={"name": "Hosts"})
    if model_url == "echo":
        model = {"provider_name": "echo", "model": "echo-1"}
    else:
        secret = "sk-fake-0123456789abcdef"
        credential = credential_create(workspace=workspace, actor=operator, key="model", secret=secret)
        model = {"provider_name": "openai", "base_url": model_url, "model": "fake-model", "credential": credential}
    preset_create(workspace=workspace, actor=operator, key="model", name="Model", is_active=True, **model)
    for key in ("branch", "join"):
        agent_create(workspace=workspace, actor=operator, key=key, name=key, snapshot={"system_prompt": key})
    workflow_create(workspace=workspace, actor=operator, key="fan", name="Fan", definition=fan_definition(width))
    _, raw_key = api_key_create(workspace=workspace, name="hosts", scopes="read,write", actor=operator)
    sys.stdout.write(raw_key + "\n")


def start_runs(count: int) -> None:
    """`count` runs of `fan`, dispatched together when they all are recorded."""
    from django.db import transaction

    from workflows.models import Workflow
    from workflows.services import workflow_run_start

    workflow = Workflow.objects.get(key="fan", workspace__slug="hosts")
    actor = Actor.for_operator(name="multihost")
    with transaction.atomic():
        for index in range(count):
            workflow_run_start(workflow=workflow, actor=actor, message=f"run {index}")
