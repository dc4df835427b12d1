"""Execution trees on a local OpenAI-protocol server (`workflows.tests.fake_openai`):
a parent's model asks for `delegate` calls, each child is a turn of its own at the
server. Children's limits come from the delegating agent's `runtime_policy.children`,
which replaces the global settings for it, lower or higher (`agents.runtime.tree`)."""

from __future__ import annotations

import json
import time

import pytest
from pytest_django.fixtures import Settings

from agents.models import Agent, AgentTurn, DebugLog, Preset
from agents.runtime import agent_turn_run
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent
from workflows.tests.fake_openai import last_user_text

OUT_OF_TIME = "The turn ran out of time before a final answer."


def delegations(*pairs: tuple[str, str]) -> str:
    """A parent's message: the server answers it with one delegate call per pair."""
    return "delegate " + json.dumps([{"agent": agent, "message": message} for agent, message in pairs])


def scripted(body: dict) -> str | dict:
    """The server's answers: `delegate [...]` → those delegate calls; once their results
    came back → "done"; `sleep <s>` → "slept" after that many seconds; else an echo."""
    if body["messages"][-1]["role"] == "tool":
        return "done: " + " | ".join(m["content"] for m in body["messages"] if m["role"] == "tool")
    text = last_user_text(body)
    if text.startswith("delegate "):
        calls = [
            {"id": f"call-{n}", "type": "function", "function": {"name": "delegate", "arguments": json.dumps(spec)}}
            for n, spec in enumerate(json.loads(text.removeprefix("delegate ")))
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if text.startswith("sleep "):
        time.sleep(float(text.removeprefix("sleep ")))
        return "slept"
    return f"answer: {text}"


@pytest.fixture
def server(openai_server):
    openai_server.reply = scripted
    return openai_server


def delegating(workspace: Workspace, ada: User, key: str, **children: object) -> Agent:
    return make_agent(workspace, key, by=ada, allowed_tool_names=["delegate"], runtime_policy={"children": children})


def tool_results(turn: AgentTurn) -> list[str]:
    return [call["result"] for log in DebugLog.all_objects.filter(turn=turn) for call in log.tool_calls]


def test_a_childs_timeout_replaces_a_shorter_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 1
    boss = delegating(workspace, ada, "boss", timeout_seconds=10)
    make_agent(workspace, "slow", by=ada)

    turn = agent_turn_run(agent=boss, message=delegations(("slow", "sleep 1.5")), actor=Actor.for_user(alice))

    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.answer) == (AgentTurn.Status.SUCCEEDED, "slept")
    assert turn.answer == "done: slept"


def test_a_childs_timeout_replaces_a_longer_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 600
    boss = delegating(workspace, ada, "boss", timeout_seconds=1)
    make_agent(workspace, "slow", by=ada)

    turn = agent_turn_run(agent=boss, message=delegations(("slow", "sleep 1.5")), actor=Actor.for_user(alice))

    child = AgentTurn.objects.get(parent=turn)
    assert (child.status, child.error) == (AgentTurn.Status.FAILED, OUT_OF_TIME)
    assert tool_results(turn) == [f"Agent 'slow' failed: {OUT_OF_TIME}"]
    assert turn.status == AgentTurn.Status.SUCCEEDED


def test_a_null_timeout_takes_the_global_setting(
    workspace: Workspace, ada: User, alice: User, local_preset: Preset, server, settings: Settings
) -> None:
    settings.AIHUMMER_SUBAGENT_TIMEOUT_SEC = 1
    boss = delegating(workspace, ada, "boss")
    make_agent(workspace, "slow", by=ada)

    turn = agent_turn_run(agent=boss, message=delegations(("slow", "sleep 1.5")), actor=Actor.for_user(alice))

    assert AgentTurn.objects.get(parent=turn).error == OUT_OF_TIME
