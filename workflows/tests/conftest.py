"""Fixtures of the workflows tests: an echo preset, a reader and a critic, and the
seed's two-step pipeline (personas come from the root conftest, builders from
`aihummer.tests.factories`)."""

from __future__ import annotations

import pytest

from agents.models import Agent, Preset
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import PIPELINE, fan_out, make_agent, make_echo_preset, openai_preset
from workflows.models import Workflow, WorkflowRun
from workflows.services import workflow_create, workflow_run_start
from workflows.tests.fake_openai import FakeOpenAI


@pytest.fixture
def operator() -> Actor:
    return Actor.for_operator(name="tests")


@pytest.fixture
def echo_preset(workspace: Workspace, operator: Actor) -> Preset:
    return make_echo_preset(workspace, by=operator)


@pytest.fixture
def reader(workspace: Workspace, echo_preset: Preset) -> Agent:
    return make_agent(workspace, "lecteur", "Tu lis et résumes des textes.")


@pytest.fixture
def critic(workspace: Workspace, echo_preset: Preset) -> Agent:
    return make_agent(workspace, "critique", "Tu évalues la qualité d'un résumé.")


@pytest.fixture
def pipeline(workspace: Workspace, reader: Agent, critic: Agent, operator: Actor) -> Workflow:
    return workflow_create(
        workspace=workspace, actor=operator, key="pipeline", name="Pipeline de test", definition=PIPELINE
    )


@pytest.fixture
def alice_actor(alice: User) -> Actor:
    return Actor.for_user(alice)


@pytest.fixture
def slow_server():
    """An OpenAI-protocol server answering after 500 ms."""
    with FakeOpenAI(delay=0.5) as server:
        yield server


@pytest.fixture
def slow_preset(workspace: Workspace, operator: Actor, slow_server: FakeOpenAI) -> Preset:
    return openai_preset(workspace, slow_server, by=operator)


@pytest.fixture
def make_run(workspace, reader, critic, operator, django_capture_on_commit_callbacks):
    """`make_run(n)`: a run of `fan<n>` (factories.fan_out(n), made once), its tasks run
    inline on commit unless `execute=False`."""

    def make(n: int, *, actor: Actor = operator, message: str = "Texte", execute: bool = True) -> WorkflowRun:
        workflow = Workflow.objects.filter(workspace=workspace, key=f"fan{n}").first() or workflow_create(
            workspace=workspace, actor=operator, key=f"fan{n}", name=f"Fan {n}", definition=fan_out(n)
        )
        with django_capture_on_commit_callbacks(execute=execute):
            run = workflow_run_start(workflow=workflow, actor=actor, message=message)
        run.refresh_from_db()
        return run

    return make
