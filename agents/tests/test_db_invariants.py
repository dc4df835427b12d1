"""Issue 10: PostgreSQL itself refuses an agent whose live version is not one of its own
approved versions, and a version whose workspace or sandbox flag differs from its
agent's. Each is tried through the ORM, past the services.

The checks are deferred to commit (an agent and its first version are written one
after the other); `SET CONSTRAINTS ALL IMMEDIATE` runs them now, inside the test's
transaction."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from agents.models import Agent, PromptVersion
from agents.services import agent_create, agent_delete, prompt_version_approve, prompt_version_propose
from aihummer.actors import Actor


def check_now() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


@pytest.fixture
def writer(workspace, ada):
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer")


@pytest.fixture
def pending(writer, alice):
    return prompt_version_propose(agent=writer, changes={"identity": {"role": "Editor"}}, actor=Actor.for_user(alice))


def refused(constraint: str):
    return pytest.raises(IntegrityError, match=constraint)


def test_the_services_keep_every_invariant(workspace, ada, bob, echo_preset, writer, pending):
    prompt_version_approve(version=pending, actor=Actor.for_user(bob))
    sandboxed = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="sb", name="Sb", is_sandbox=True)
    agent_delete(agent=sandboxed, actor=Actor.for_user(ada))

    check_now()  # no error

    assert Agent.objects.get(pk=writer.pk).live_version_id == pending.pk


@pytest.mark.parametrize("status", ["pending", "rejected", "withdrawn"])
def test_a_live_version_that_is_not_approved_is_refused(writer, pending, status):
    if status != "pending":
        PromptVersion.objects.filter(pk=pending.pk).update(status=status, reviewed_at=pending.created_at)

    with refused("is not an approved version"), transaction.atomic():
        Agent.objects.filter(pk=writer.pk).update(live_version=pending)
        check_now()


def test_the_live_version_cannot_be_un_approved(writer):
    with refused("is not an approved version"), transaction.atomic():
        PromptVersion.objects.filter(pk=writer.live_version_id).update(status="rejected")
        check_now()


def test_another_agents_version_cannot_be_live(workspace, ada, writer):
    other = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="other", name="Other")
    first = other.live_version
    prompt_version_propose(agent=other, changes={"identity": {"role": "R"}}, actor=Actor.for_user(ada), mode="live")

    with refused("agents_agent_live_version_is_its_own"), transaction.atomic():
        Agent.objects.filter(pk=writer.pk).update(live_version=first)
        check_now()


def test_an_agent_with_an_approved_version_cannot_lose_its_live_version(writer):
    with refused("Agent writer has no live version"), transaction.atomic():
        Agent.objects.filter(pk=writer.pk).update(live_version=None)
        check_now()


def test_an_agent_without_any_version_is_refused(workspace):
    with refused("Agent bare has no live version"), transaction.atomic():
        Agent.objects.create(workspace=workspace, key="bare", name="Bare")
        check_now()


def test_a_version_of_another_workspace_than_its_agent_is_refused(other_workspace, writer, pending):
    with refused("agents_promptversion_same_workspace_and_sandbox_as_agent"), transaction.atomic():
        PromptVersion.objects.filter(pk=pending.pk).update(workspace=other_workspace)
        check_now()


def test_a_version_with_another_sandbox_flag_than_its_agent_is_refused(writer, pending):
    with refused("agents_promptversion_same_workspace_and_sandbox_as_agent"), transaction.atomic():
        PromptVersion.all_objects.filter(pk=pending.pk).update(is_sandbox=True)
        check_now()
