"""Fixtures of the workflows tests: an echo preset, a reader and a critic, and the
seed's two-step pipeline (personas come from the root conftest)."""

from __future__ import annotations

import pytest

from agents.models import Agent, Preset
from agents.services import agent_create, credential_create, preset_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from workflows.models import Workflow
from workflows.services import workflow_create
from workflows.tests.fake_openai import FakeOpenAI

PIPELINE = {
    "version": 1,
    "steps": [
        {"name": "lecture", "agent_name": "lecteur", "input_mapping": {}, "output_key": "resume"},
        {
            "name": "critique",
            "agent_name": "critique",
            "input_mapping": {"text": "$.steps.lecture.output.answer"},
            "output_key": "evaluation",
        },
    ],
    "outputs": {"final": "$.steps.critique.output.answer"},
}


@pytest.fixture
def operator() -> Actor:
    return Actor.for_operator(name="tests")


@pytest.fixture
def echo_preset(workspace: Workspace, operator: Actor) -> Preset:
    return preset_create(
        workspace=workspace,
        actor=operator,
        key="echo",
        name="Echo",
        provider_name="echo",
        model="echo-1",
        is_active=True,
    )


def make_agent(workspace: Workspace, key: str, prompt: str, preset: Preset | None = None, **extra: object) -> Agent:
    return agent_create(
        workspace=workspace,
        actor=Actor.for_operator(name="tests"),
        key=key,
        name=key.title(),
        preset=preset,
        snapshot={"system_prompt": prompt},
        **extra,
    )


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
    return fake_preset(workspace, operator, slow_server)


def fake_preset(workspace: Workspace, operator: Actor, server: FakeOpenAI, key: str = "slow") -> Preset:
    credential = credential_create(workspace=workspace, actor=operator, key=f"{key}-key", secret="sk-fake-0123456789")
    return preset_create(
        workspace=workspace,
        actor=operator,
        key=key,
        name=key.title(),
        provider_name="openai",
        base_url=server.base_url,
        model="fake-model",
        credential=credential,
    )
