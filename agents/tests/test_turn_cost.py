"""What a turn costs the database: a workflow runs one turn per step, so these counts
are paid on every step of every run (`bench/agent_turns.py` prints them with timings).

Transactional tests: inside a test transaction every `atomic()` would add a savepoint
and its release to the count; here they are the real transactions a turn makes."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentTurn, DebugLog, PromptVersion
from agents.runtime import agent_turn_run
from agents.services import agent_create
from aihummer.actors import Actor

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(workspace, ada, echo_preset):
    """An agent without a preset of its own (it runs on the workspace's default) that may
    propose persona edits."""
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="writer",
        name="Writer",
        snapshot={"identity": {"name": "Camille"}, "allowed_tool_names": ["propose_persona_edit"]},
    )


def kinds(captured) -> list[str]:
    """Each captured statement's first word. Django logs BEGIN and COMMIT too: the
    statements a turn sends, and the transactions it commits, read off one list."""
    return [query["sql"].split(maxsplit=1)[0] for query in captured.captured_queries]


def test_a_plain_echo_turn_costs_two_statements_and_two_commits(agent, alice, django_assert_num_queries):
    actor = Actor.for_user(alice)
    agent_turn_run(agent=agent, message="Warm up", actor=actor)  # the actor's roles are read once, here

    # Read the agent with its presets (autocommit); then the turn, written once with its
    # outcome, and its log, in one statement (a data-modifying CTE).
    with django_assert_num_queries(1 + 3) as captured:
        turn = agent_turn_run(agent=agent, message="Bonjour", actor=actor)

    assert kinds(captured) == ["SELECT", "BEGIN", "WITH", "COMMIT"]
    assert turn.debug_logs.get().turn_id == turn.pk
    assert (turn.status, turn.model_calls) == ("succeeded", 1)
    stored = AgentTurn.objects.get(pk=turn.pk)
    assert (stored.status, stored.model_calls, stored.input_tokens) == ("succeeded", 1, turn.input_tokens)


def test_a_tool_calling_turn_costs_its_tools_writes_and_little_more(agent, alice, django_assert_num_queries):
    actor = Actor.for_user(alice)
    arguments = json.dumps({"persona": "Calm.", "reason": "Shorter answers"})
    agent_turn_run(agent=agent, message=f"@call propose_persona_edit {arguments}", actor=actor)  # the proposal

    # Again: a duplicate of the open proposal, which the service finds (lock, look-up).
    # The turn's own: read, the turn's row before its tools run (a tool may need it),
    # the first call's log, the outcome and the last call's log: 5 statements for 2
    # model calls.
    with django_assert_num_queries(11) as captured:
        turn = agent_turn_run(agent=agent, message=f"@call propose_persona_edit {arguments}", actor=actor)

    assert kinds(captured) == [
        "SELECT",
        "INSERT",  # the turn
        *("BEGIN", "SELECT", "SELECT", "COMMIT"),  # the tool: prompt_version_propose
        "INSERT",  # the first call's log, with what its tool did (autocommit)
        *("BEGIN", "UPDATE", "INSERT", "COMMIT"),
    ]

    assert (turn.status, turn.model_calls) == ("succeeded", 2)
    assert PromptVersion.objects.filter(status="pending").count() == 1
    assert DebugLog.objects.filter(turn=turn).count() == 2
