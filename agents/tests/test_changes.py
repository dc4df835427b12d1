"""agent_change and preset_change: two services composed, both or neither."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import Agent, Preset, PromptVersion
from agents.services import agent_change, agent_create, preset_change
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_echo_preset


@pytest.fixture
def agent(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")


def test_agent_change_saves_fields_and_proposes_the_tools(agent: Agent, ada: User) -> None:
    agent, version, changed = agent_change(
        agent=agent,
        actor=Actor.for_user(ada),
        fields={"name": "Writer II"},
        changes={"allowed_tool_names": ["delegate"]},
    )

    assert (agent.name, changed) == ("Writer II", ["name", "allowed_tool_names"])
    assert (version.status, version.snapshot["allowed_tool_names"]) == ("pending", ["delegate"])
    assert Agent.objects.get().allowed_tool_names == []


def test_agent_change_is_both_or_neither(agent: Agent, ada: User) -> None:
    with pytest.raises(ValidationError, match="must match"):
        agent_change(
            agent=agent, actor=Actor.for_user(ada), fields={"name": "New"}, changes={"allowed_tool_names": ["Bad!"]}
        )

    assert Agent.objects.get().name == "Writer"
    assert PromptVersion.objects.count() == 1


def test_agent_change_of_values_as_they_are_writes_and_proposes_nothing(agent: Agent, ada: User) -> None:
    _, version, changed = agent_change(
        agent=agent, actor=Actor.for_user(ada), fields={"name": "Writer"}, changes={"allowed_tool_names": []}
    )

    assert (version, changed) == (None, [])
    assert Agent.history.count() == 2  # created, version 1 live: no "updated" record


def test_agent_change_naming_nothing_is_refused(agent: Agent, ada: User) -> None:
    with pytest.raises(ValidationError, match=r"Name at least one field to change\."):
        agent_change(agent=agent, actor=Actor.for_user(ada))


def test_preset_change_updates_and_makes_default_together(workspace: Workspace, ada: User, echo_preset: Preset) -> None:
    other = make_echo_preset(workspace, by=ada, key="slow", is_active=False)

    other = preset_change(preset=other, actor=Actor.for_user(ada), fields={"temperature": 0.3}, is_active=True)

    assert (other.temperature, other.is_active) == (0.3, True)
    echo_preset.refresh_from_db()
    assert echo_preset.is_active is False


def test_preset_change_never_leaves_a_workspace_without_its_default(echo_preset: Preset, ada: User) -> None:
    with pytest.raises(ValidationError, match="stays the default until another preset is made the default"):
        preset_change(preset=echo_preset, actor=Actor.for_user(ada), fields={"temperature": 0.3}, is_active=False)

    echo_preset.refresh_from_db()
    assert (echo_preset.temperature, echo_preset.is_active) == (1.0, True)
