"""The turn page's execution tree (issue 29): the root turn and every turn under it,
nested by who waited for whom, each with its status, depth, start and duration, drawn
from one query whatever the tree's size. Trees are real: a parent's model asks a local
OpenAI-protocol server for `delegate` calls (`agents.tests.helpers.scripted`)."""

from __future__ import annotations

import re
from importlib import import_module

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from agents.models import Agent, AgentTurn, Preset
from agents.runtime import agent_turn_run
from agents.selectors import execution_tree
from agents.tests.helpers import delegations, scripted
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

name_the_roots = import_module("agents.migrations.0022_turn_tree_roots_of_earlier_turns").name_the_roots


@pytest.fixture
def tree_root(workspace: Workspace, ada: User, alice: User, local_preset: Preset, openai_server) -> AgentTurn:
    """boss → (mid → (leaf a, leaf b), leaf c): four children, two levels."""
    openai_server.reply = scripted
    for key in ("boss", "mid"):
        make_agent(workspace, key, by=ada, allowed_tool_names=["delegate"], runtime_policy={"children": {}})
    make_agent(workspace, "leaf", by=ada)
    message = delegations(("mid", delegations(("leaf", "a"), ("leaf", "b"))), ("leaf", "c"))
    return agent_turn_run(agent=Agent.objects.get(key="boss"), message=message, actor=Actor.for_user(alice))


def shape(nodes) -> list:
    """The tree as (agent, depth, children) with siblings in a fixed order: children of
    one parent may start in either order when they run side by side."""
    return sorted((n.turn.agent_key, n.turn.depth, shape(n.children)) for n in nodes)


def test_every_turn_of_a_tree_sees_the_same_tree_from_one_query(
    tree_root: AgentTurn, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    expected = [("boss", 0, [("leaf", 1, []), ("mid", 1, [("leaf", 2, []), ("leaf", 2, [])])])]
    for turn in AgentTurn.objects.all():
        with django_assert_num_queries(1):
            tree = execution_tree(turn=turn)
        assert (shape(tree.roots), tree.turns, tree.truncated) == (expected, 5, False)
    [root] = tree.roots
    assert root.offset_ms == 0
    assert all(node.offset_ms >= 0 for node in root.children)


def test_a_turn_alone_has_no_tree(workspace: Workspace, ada: User, alice: User, local_preset: Preset) -> None:
    turn = agent_turn_run(agent=make_agent(workspace, "solo", by=ada), message="Bonjour", actor=Actor.for_user(alice))

    assert execution_tree(turn=turn) is None


def test_the_turn_page_draws_the_tree_and_links_the_other_turns(
    client: Client, bob: User, tree_root: AgentTurn
) -> None:
    leaf_b = AgentTurn.objects.get(depth=2, message="b")
    client.force_login(bob)

    html = client.get(reverse("admin:agents_agentturn_change", args=[leaf_b.pk])).content.decode()

    tree = html[html.index('id="aih-execution-tree"') :]
    tree = tree[: tree.index("</div>")]
    assert "5 turns in this tree" in tree
    drawn = re.findall(r'data-turn="(\d+)" data-depth="(\d)"', tree)
    assert sorted(int(pk) for pk, _ in drawn) == sorted(AgentTurn.objects.values_list("pk", flat=True))
    assert drawn[0] == (str(tree_root.pk), "0")  # the root first, the rest nested under it
    for turn in AgentTurn.objects.exclude(pk=leaf_b.pk):
        assert reverse("admin:agents_agentturn_change", args=[turn.pk]) in tree
    assert reverse("admin:agents_agentturn_change", args=[leaf_b.pk]) not in tree  # the page's own turn: no link
    assert re.search(r'class="node current">\s*<span>leaf</span>', tree)
    assert tree.count("Succeeded") == 5


def test_a_lone_turns_page_says_it_has_no_tree(
    client: Client, bob: User, workspace: Workspace, ada: User, alice: User, local_preset: Preset
) -> None:
    turn = agent_turn_run(agent=make_agent(workspace, "solo", by=ada), message="Bonjour", actor=Actor.for_user(alice))
    client.force_login(bob)

    html = client.get(reverse("admin:agents_agentturn_change", args=[turn.pk])).content.decode()

    assert "This turn started no child agent and was started by none." in html


def test_the_migration_names_the_root_of_turns_recorded_before_turns_had_one(tree_root: AgentTurn) -> None:
    recorded = dict(AgentTurn.objects.values_list("pk", "root_id"))
    AgentTurn.objects.update(root=None)
    assert execution_tree(turn=AgentTurn.objects.get(depth=2, message="a")) is None  # its root unknown

    name_the_roots(apps, None)

    assert dict(AgentTurn.objects.values_list("pk", "root_id")) == recorded
