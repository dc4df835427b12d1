"""A turn that waits for a person keeps what it was sent (issue 30): a conversation's
message whose turn pauses on a guarded call answers `waiting` with the review link, and
once a person approves, the resumed turn is sent the same history and render context
and its answer is appended to the conversation. On PostgreSQL, no broker (the carrying
out and the resume run inline after the decision), a local OpenAI-protocol model that
records every request, and a local HTTP server as the outside world."""

from __future__ import annotations

import json

import pytest
import requests

from agents.models import AgentTurn, ApprovalRequest, Conversation, Preset
from agents.runtime import agent_turn_run
from agents.services.tool_approvals import approval_request_approve
from agents.services.tool_settings import agent_tool_settings_update, workspace_tool_policy_update
from aihummer.actors import Actor
from aihummer.tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

NOTIFY = "Please notify the hook."


@pytest.fixture
def notifier(workspace, ada, local_preset: Preset, openai_server, httpserver):
    """Agent `notifier` on the local model, which calls http_request on the local
    server when asked to notify, and says so once the call's result comes back."""
    httpserver.expect_request("/hook", method="POST").respond_with_data("done")
    call = {"method": "POST", "url": httpserver.url_for("/hook"), "body": json.dumps({"n": 1})}

    def reply(body: dict) -> str | dict:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return "Notified."
        if NOTIFY in str(last["content"]):
            function = {"name": "http_request", "arguments": json.dumps(call)}
            return {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "type": "function", "function": function}],
            }
        return "Salut."

    openai_server.reply = reply
    by = Actor.for_user(ada)
    agent = make_agent(
        workspace, "notifier", "You notify.", by=ada, preset=local_preset, allowed_tool_names=["http_request"]
    )
    workspace_tool_policy_update(workspace=workspace, actor=by, allow_private_addresses=True)
    agent_tool_settings_update(agent=agent, actor=by, http_allowed_hosts=["127.0.0.1", "localhost"])
    return agent


def approve(bob) -> ApprovalRequest:
    request = ApprovalRequest.objects.get()
    approval_request_approve(request=request, actor=Actor.for_user(bob), arguments_hash=request.arguments_hash)
    return request


def test_a_conversation_turn_waits_then_its_answer_joins_the_conversation(
    notifier, alice, bob, api_as, openai_server, httpserver
) -> None:
    client = api_as(alice)
    url = "/v1/admin/agents/notifier/conversations/messages"
    assert client.post(url, {"message": "Bonjour", "channel": "api"}).json()["answer"]["text"] == "Salut."

    waiting = client.post(url, {"message": NOTIFY, "channel": "api"})

    body = waiting.json()
    request = ApprovalRequest.objects.get()
    assert waiting.status_code == 200
    assert (body["answer"], body["turn"]["status"]) == (None, "waiting")
    assert body["turn"]["waiting_for"] == {
        "approval_id": request.pk,
        "tool": "http_request",
        "review_url": f"/admin/agents/approvalrequest/{request.pk}/review/",
    }
    conversation = Conversation.objects.get()
    assert conversation.message_count == 3 and httpserver.log == []

    approve(bob)

    conversation.refresh_from_db()
    turn = AgentTurn.objects.get(pk=body["turn"]["id"])
    assert turn.status == "succeeded" and len(httpserver.log) == 1
    rows = list(conversation.messages.order_by("sequence").values_list("role", "text", "turn_id"))
    assert [(role, text) for role, text, _ in rows] == [
        ("user", "Bonjour"),
        ("assistant", "Salut."),
        ("user", NOTIFY),
        ("assistant", "Notified."),
    ]
    assert rows[-1][2] == turn.pk and conversation.message_count == 4
    # The resumed request carries the conversation's history, as the paused one did.
    paused, resumed = openai_server.bodies[-2:]
    said = [(m["role"], m.get("content")) for m in resumed["messages"] if m["role"] in ("user", "assistant")]
    assert said[:3] == [("user", "Bonjour"), ("assistant", "Salut."), ("user", NOTIFY)]
    assert resumed["messages"][0] == paused["messages"][0]  # the same system prompt


def test_a_resumed_turn_keeps_the_callers_render_context(notifier, alice, bob, openai_server) -> None:
    turn = agent_turn_run(agent=notifier, message=NOTIFY, actor=Actor.for_user(alice), context={"user": "Lea"})
    assert turn.status == "waiting"

    approve(bob)

    turn.refresh_from_db()
    assert (turn.status, turn.answer) == ("succeeded", "Notified.")
    paused, resumed = openai_server.bodies[-2:]
    assert "- user: Lea" in json.dumps(paused["messages"][0])
    assert resumed["messages"][0] == paused["messages"][0]


def test_a_streamed_message_whose_turn_waits_ends_with_the_review_link(
    live_server, notifier, make_key, alice, httpserver
) -> None:
    response = requests.post(
        f"{live_server.url}/v1/admin/agents/notifier/conversations/messages",
        json={"message": NOTIFY, "channel": "api", "stream": True},
        headers={"Authorization": f"Bearer {make_key('read,write', owner=alice)}", "Accept": "text/event-stream"},
        stream=True,
        timeout=60,
    )

    events = []
    for block in response.text.split("\n\n"):
        fields = dict(line.partition(": ")[::2] for line in block.splitlines() if line)
        if fields:
            events.append((fields["event"], json.loads(fields["data"])))
    request = ApprovalRequest.objects.get()
    assert [kind for kind, _ in events] == ["start", "tool_call", "tool_result", "message"]
    assert events[2][1]["calls"][0]["outcome"] == "waiting"
    final = events[-1][1]
    assert (final["answer"], final["turn"]["status"]) == (None, "waiting")
    assert final["turn"]["waiting_for"]["review_url"] == f"/admin/agents/approvalrequest/{request.pk}/review/"
    assert httpserver.log == []


def test_the_render_context_kept_for_the_resume_is_redacted_by_value(
    notifier, workspace, ada, alice, bob, openai_server
) -> None:
    from agents.services.credentials import credential_create

    secret = "ctx-secret-Zq81-never-stored"
    credential_create(workspace=workspace, key="crm", secret=secret, actor=Actor.for_user(ada))
    context = {"user": "Lea", "note": f"token {secret}", "nested": [{"k": secret}]}
    turn = agent_turn_run(agent=notifier, message=NOTIFY, actor=Actor.for_user(alice), context=context)
    assert turn.status == "waiting"

    stored = ApprovalRequest.objects.values_list("resume_state", flat=True).get()
    assert secret not in json.dumps(stored)
    assert stored["context"]["user"] == "Lea"

    approve(bob)

    turn.refresh_from_db()
    assert (turn.status, turn.answer) == ("succeeded", "Notified.")
    assert "- user: Lea" in json.dumps(openai_server.bodies[-1]["messages"][0])
