"""`runtime_policy.pruning` through the REST API, against a local OpenAI-protocol server
that records every request: a turn's stale tool results (older than `ttl_seconds`,
before the last `keep_last_assistants` answers) soft-trimmed to their head and tail,
or cleared to the placeholder, in what is sent only; the debug log keeps them whole."""

from __future__ import annotations

import json
import time

import pytest

from agents.models import AgentTurn
from agents.services import agent_create
from agents.tests.helpers import send_url
from aihummer.actors import Actor

LONG = "H" * 3000 + "T" * 3000  # the first delegation's answer: 6 000 characters
HELPER = {"identity": {"name": "Helper"}}
PRUNING = {"ttl_seconds": 1, "keep_last_assistants": 1, "soft_trim_ratio": 0.05, "head_chars": 100, "tail_chars": 50}


def delegation(call_id: str, message: str) -> dict:
    arguments = json.dumps({"agent": "helper", "message": message})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "delegate", "arguments": arguments}}],
    }


@pytest.fixture
def delegating(workspace, ada, local_preset, openai_server):
    """`boss` delegates twice to `helper`, then answers: the helper's first answer is
    LONG, its second comes after 1.2 s (so the first is past ttl_seconds by then)."""

    def reply(body: dict) -> str | dict:
        system = body["messages"][0]["content"]
        if "Helper" in system:
            if "second" in body["messages"][-1]["content"]:
                time.sleep(1.2)
                return "short"
            return LONG
        calls = sum(1 for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls"))
        if calls < 2:
            return delegation(f"call{calls}", "first" if calls == 0 else "second")
        return "done"

    openai_server.reply = reply
    agent_create(workspace=workspace, actor=Actor.for_user(ada), key="helper", name="Helper", snapshot=HELPER)

    def boss(pruning: dict) -> None:
        policy = {"pruning": pruning, "context": {"max_tokens": 10_000, "reserve_tokens": 0}}
        snapshot = {"identity": {"name": "Boss"}, "runtime_policy": policy, "allowed_tool_names": ["delegate"]}
        agent_create(workspace=workspace, actor=Actor.for_user(ada), key="boss", name="Boss", snapshot=snapshot)

    return boss


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def boss_requests(server) -> list[dict]:
    return [body for body in server.bodies if "Boss" in body["messages"][0]["content"]]


def test_a_stale_tool_result_keeps_its_head_and_tail_and_the_debug_log_keeps_it_whole(
    delegating, alice_api, openai_server
):
    delegating({**PRUNING, "hard_clear_ratio": 1.0})

    reply = alice_api.post(send_url("boss"), {"message": "go"}).json()

    assert reply["answer"]["text"] == "done"
    requests = boss_requests(openai_server)
    assert len(requests) == 3
    assert tool_results(requests[1]) == [LONG]  # young: whole
    first, second = tool_results(requests[2])
    assert first.startswith("H" * 100 + "\n…\n" + "T" * 50)
    assert "[tool result trimmed: the first 100 and last 50 of 6000 characters kept]" in first
    assert len(first) < 300
    assert second == "short"  # after the last answer: protected
    turn = AgentTurn.objects.get(agent_key="boss")
    logged = [m["content"] for log in turn.debug_logs.order_by("sequence") for m in log.messages if m["role"] == "tool"]
    assert LONG in logged  # the stored history is untouched


def test_past_hard_clear_ratio_a_stale_result_is_replaced_by_the_placeholder(delegating, alice_api, openai_server):
    delegating({**PRUNING, "head_chars": 1500, "tail_chars": 1500, "hard_clear_ratio": 0.05, "placeholder": "[gone]"})

    alice_api.post(send_url("boss"), {"message": "go"})

    assert tool_results(boss_requests(openai_server)[2]) == ["[gone]", "short"]


def test_a_result_younger_than_ttl_seconds_is_never_trimmed(delegating, alice_api, openai_server):
    delegating({**PRUNING, "ttl_seconds": 3600, "hard_clear_ratio": 0.05})

    alice_api.post(send_url("boss"), {"message": "go"})

    assert tool_results(boss_requests(openai_server)[2]) == [LONG, "short"]
