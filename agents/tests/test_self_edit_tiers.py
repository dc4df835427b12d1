"""Issue 33: an agent's own proposals may reword and narrow, never widen its power. The
refusal is a tool result the model reads; wording and narrowing are queued as usual."""

from __future__ import annotations

import json

from agents.models import Agent, AgentTurn, DebugLog, Preset, PromptVersion
from agents.runtime import agent_turn_run
from agents.runtime.tools import QUEUED
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent

TOOLS = ["propose_section_edit", "propose_tools_edit"]


def call(name: str, **arguments: object) -> str:
    return f"@call {name} {json.dumps(arguments)}"


def only_call(turn: AgentTurn) -> dict:
    (logged,) = [c for log in DebugLog.all_objects.filter(turn=turn).order_by("sequence") for c in log.tool_calls]
    return logged


def test_a_self_edit_adding_a_tool_is_refused_at_the_tool(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=TOOLS)

    turn = agent_turn_run(
        agent=agent,
        message=call("propose_tools_edit", add=["delegate"], reason="I could ask the critic."),
        actor=Actor.for_user(alice),
    )

    logged = only_call(turn)
    assert (turn.status, logged["outcome"]) == ("succeeded", "refused")
    assert logged["result"] == (
        "Proposal refused: An agent may not widen its own power (tool added: delegate). You may propose wording "
        "changes and narrowing ones (removing a tool, lowering a limit); ask a person to propose this one."
    )
    assert not PromptVersion.objects.filter(agent=agent, number=2).exists()


def test_a_wording_change_and_a_narrowing_by_the_same_agent_are_queued(
    workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    agent = make_agent(workspace, "writer", by=ada, allowed_tool_names=TOOLS)
    as_alice = Actor.for_user(alice)

    reworded = agent_turn_run(
        agent=agent,
        message=call("propose_section_edit", section_key="method", body="Plan, then.", reason="Clearer"),
        actor=as_alice,
    )
    narrowed = agent_turn_run(
        agent=agent,
        message=call("propose_tools_edit", remove=["propose_tools_edit"], reason="Not needed."),
        actor=as_alice,
    )

    assert only_call(reworded)["result"] == QUEUED.format(number=2)
    assert only_call(narrowed)["result"] == QUEUED.format(number=3)
    versions = PromptVersion.objects.filter(agent=agent, number__gte=2).order_by("number")
    assert [(v.status, v.tier, [(r["tier"], r["line"]) for r in v.tier_reasons], v.source) for v in versions] == [
        ("pending", "wording", [("wording", "section method: body changed")], "agent:writer"),
        ("pending", "wording", [("wording", "tool removed: propose_tools_edit")], "agent:writer"),
    ]
    assert Agent.objects.get(pk=agent.pk).live_number == 1
