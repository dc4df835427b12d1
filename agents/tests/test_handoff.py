"""Hand-off: a conversation passed to another agent, by the answering agent's `handoff`
tool or by a client (`POST /v1/admin/conversations/{id}/handoff`). The agent it goes to
answers the next messages under its own profile and the inherited runtime policy of
the agent that handed it off; each answer records which agent gave it. On a local
OpenAI-protocol server (`workflows.tests.fake_openai`) that records every request."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied

from agents.models import AgentTurn, Conversation, ConversationMessage, DebugLog, Preset
from agents.runtime import agent_turn_run, conversation_send
from agents.runtime.conversations import conversation_handoff
from agents.services import prompt_version_propose
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent, make_key
from aihummer.tests.mcp_helpers import call_tools, error, ok
from workflows.tests.fake_openai import last_user_text

SEND = "/v1/admin/agents/{}/conversations/messages"


def scripted(body: dict) -> str | dict:
    """`handoff <key>` → a handoff call; once its result came back → that result; else
    who answers: the first line of the system prompt names the agent."""
    if body["messages"][-1]["role"] == "tool":
        return body["messages"][-1]["content"]
    text = last_user_text(body)
    if text.startswith("call "):  # call <tool> <json arguments>
        name, arguments = text.removeprefix("call ").split(" ", 1)
        call = {"id": "call-0", "type": "function", "function": {"name": name, "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if text.startswith("handoff "):
        arguments = json.dumps({"agent": text.removeprefix("handoff ")})
        call = {"id": "call-0", "type": "function", "function": {"name": "handoff", "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return f"{system_of(body).splitlines()[0]} answers {text}"


def system_of(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


@pytest.fixture
def server(openai_server):
    openai_server.reply = scripted
    return openai_server


@pytest.fixture
def desk(workspace: Workspace, ada: User, local_preset: Preset) -> tuple:
    """`front` may hand off and asks the provider's flex tier; `expert` asks nothing."""
    front = make_agent(
        workspace,
        "front",
        "You are Front.",
        by=ada,
        allowed_tool_names=["handoff"],
        runtime_policy={"app": {"service_tier": "flex"}, "context": {"max_history_messages": 2}},
    )
    return front, make_agent(workspace, "expert", "You are Expert.", by=ada)


def test_the_handoff_tool_passes_the_conversation_on_under_the_inherited_policy(desk, alice: User, server) -> None:
    front, _ = desk
    actor = Actor.for_user(alice)

    handed = conversation_send(agent=front, actor=actor, message="handoff expert", channel="api")
    after = [conversation_send(agent=front, actor=actor, message=f"m{n}", channel="api") for n in range(2)]

    assert handed.answer.text == (
        "The conversation goes to agent 'expert' once your answer is recorded: it answers the next messages, "
        "under your runtime policy."
    )
    conversation = Conversation.objects.get()
    assert (conversation.agent, conversation.answering_agent.key) == (front, "expert")
    assert conversation.inherited_policy["app"]["service_tier"] == "flex"
    assert [reply.turn.agent_key for reply in after] == ["expert", "expert"]
    assert after[1].answer.text == "You are Expert. answers m1"  # its own profile
    last = server.bodies[-1]
    assert last["service_tier"] == "flex"  # front's policy, not expert's own
    # front's context.max_history_messages (2): the last exchange only, then the message.
    assert [m["content"] for m in last["messages"] if m["role"] != "system"] == [
        "m0",
        "You are Expert. answers m0",
        "m1",
    ]
    assert list(conversation.messages.values_list("role", "agent_key")) == [
        ("user", ""),
        ("assistant", "front"),
        ("user", ""),
        ("assistant", "expert"),
        ("user", ""),
        ("assistant", "expert"),
    ]


def test_the_handoff_tool_refuses_outside_a_conversation_and_unknown_agents(desk, alice: User, server) -> None:
    front, _ = desk
    actor = Actor.for_user(alice)

    alone = agent_turn_run(agent=front, message="handoff expert", actor=actor)
    unknown = conversation_send(agent=front, actor=actor, message="handoff nobody", channel="api")
    itself = conversation_send(agent=front, actor=actor, message="handoff front", channel="web")

    results = [DebugLog.all_objects.filter(turn=t).order_by("sequence")[0].tool_calls[0] for t in (alone,)]
    assert [(c["outcome"], c["result"]) for c in results] == [
        ("refused", "Hand-off refused: this turn answers no conversation.")
    ]
    assert unknown.answer.text == "Hand-off refused: No enabled agent 'nobody' with a live version in this workspace."
    assert itself.answer.text == "Hand-off refused: you are 'front', the agent answering already."
    assert Conversation.objects.filter(answering_agent__isnull=False).count() == 0


def test_a_client_hands_a_conversation_off_over_rest(desk, alice_api, server) -> None:
    first = alice_api.post(SEND.format("front"), {"message": "hello"}).json()
    pk = first["conversation"]["id"]
    assert first["conversation"]["answering_agent"] is None
    assert first["answer"]["agent"] == "front"

    handed = alice_api.post(f"/v1/admin/conversations/{pk}/handoff", {"agent": "expert"})
    again = alice_api.post(SEND.format("front"), {"message": "again"}).json()
    shown = alice_api.get(f"/v1/admin/conversations/{pk}").json()

    assert handed.status_code == 200, handed.json()
    assert (handed.json()["agent"], handed.json()["answering_agent"]) == ("front", "expert")
    assert (again["turn"]["agent"], again["answer"]["agent"]) == ("expert", "expert")
    assert again["answer"]["text"] == "You are Expert. answers again"
    assert server.bodies[-1]["service_tier"] == "flex"
    assert [m["agent"] for m in shown["messages"]["results"]] == ["", "front", "", "expert"]
    assert AgentTurn.objects.get(pk=again["turn"]["id"]).agent_key == "expert"


def test_a_bad_handoff_is_refused_and_writes_nothing(
    desk, alice_api, api_as, make_key, other_workspace, workspace, ada, server
) -> None:
    alice_api.post(SEND.format("front"), {"message": "hello"})
    pk = Conversation.objects.get().pk
    url = f"/v1/admin/conversations/{pk}/handoff"

    invalid = alice_api.post(url, {"agent": "Not A Key"})
    unknown = alice_api.post(url, {"agent": "nobody"})
    same = alice_api.post(url, {"agent": "front"})
    foreign = api_as(make_key("read,write", workspace=other_workspace)).post(url, {"agent": "expert"})
    read_only = api_as(make_key("read")).post(url, {"agent": "expert"})

    assert (invalid.status_code, list(invalid.json()["error"]["fields"])) == (400, ["agent"])
    assert (unknown.status_code, unknown.json()["error"]["fields"]) == (
        422,
        {"agent": ["No enabled agent 'nobody' with a live version in this workspace."]},
    )
    assert (same.status_code, same.json()["error"]["fields"]) == (
        422,
        {"agent": ["Agent 'front' answers this conversation already."]},
    )
    assert foreign.status_code == 404
    assert read_only.status_code == 403
    assert Conversation.objects.get().answering_agent is None


@pytest.mark.django_db(transaction=True)
def test_an_mcp_client_hands_a_conversation_off(desk, workspace: Workspace, alice: User, server) -> None:
    raw_key = make_key(workspace, "desk-bot", "read,write", owner=alice)[1]
    [sent] = call_tools(raw_key, ("send_message", {"agentKey": "front", "message": "hello"}))
    pk = ok(sent)["conversationId"]
    unknown, handed, again = call_tools(
        raw_key,
        ("handoff_conversation", {"conversationId": pk, "agentKey": "nobody"}),
        ("handoff_conversation", {"conversationId": pk, "agentKey": "expert"}),
        ("send_message", {"agentKey": "front", "message": "again"}),
    )

    assert error(unknown)["error"] == "agent: No enabled agent 'nobody' with a live version in this workspace."
    assert {k: ok(handed)[k] for k in ("conversationId", "agentKey", "answeringAgent")} == (
        {"conversationId": pk, "agentKey": "front", "answeringAgent": "expert"}
    )
    assert ok(again)["answer"] == "You are Expert. answers again"
    assert server.bodies[-1]["service_tier"] == "flex"


# --- other conversations: interaction.session_visibility, session_agent_ids, session_send --------
def reader(workspace: Workspace, ada: User, key: str, **interaction: object) -> object:
    return make_agent(
        workspace,
        key,
        f"You are {key}.",
        by=ada,
        allowed_tool_names=["read_conversation", "post_to_conversation"],
        runtime_policy={"interaction": interaction},
    )


def tool_result(reply) -> str:
    return DebugLog.all_objects.filter(turn=reply.turn).order_by("sequence")[0].tool_calls[0]["result"]


def read(pk: int) -> str:
    return "call read_conversation " + json.dumps({"conversation": pk})


@pytest.mark.parametrize(
    ("visibility", "granted", "reads_its_other", "reads_expert"),
    [("self", [], False, False), ("agent", [], True, False), ("granted", ["expert"], True, True)],
)
def test_session_visibility_says_whose_conversations_an_agent_reads(
    desk, workspace, ada, alice, bob, server, visibility, granted, reads_its_other, reads_expert
) -> None:
    _, expert = desk
    watcher = reader(workspace, ada, "watcher", session_visibility=visibility, session_agent_ids=granted)
    expert_talk = conversation_send(agent=expert, actor=Actor.for_user(bob), message="secret", channel="api")
    bobs = conversation_send(agent=watcher, actor=Actor.for_user(bob), message="bob here", channel="api")
    first = conversation_send(agent=watcher, actor=Actor.for_user(alice), message="hello", channel="api")
    pk = first.conversation.pk

    def result(message: str) -> str:
        return tool_result(
            conversation_send(agent=watcher, actor=Actor.for_user(alice), message=message, channel="api")
        )

    own, its_other, other = (
        result(read(pk)),
        result(read(bobs.conversation.pk)),
        result(read(expert_talk.conversation.pk)),
    )

    assert own.startswith(f"Conversation {pk} of user:{alice.pk} with 'watcher':\n#1 user: hello\n#2 assistant (")
    assert ("#1 user: bob here" in its_other) is reads_its_other
    assert ("#1 user: secret" in other) is reads_expert
    assert [text.startswith("Refused: ") for text in (its_other, other)] == [not reads_its_other, not reads_expert]


def test_session_send_lets_an_agent_post_into_another_conversation(desk, workspace, ada, alice, bob, server) -> None:
    _, expert = desk
    talk = conversation_send(agent=expert, actor=Actor.for_user(bob), message="hi", channel="api").conversation
    post = "call post_to_conversation " + json.dumps({"conversation": talk.pk, "text": "A note."})
    muted = reader(workspace, ada, "muted", session_visibility="granted", session_agent_ids=["expert"])
    sender = reader(
        workspace, ada, "sender", session_visibility="granted", session_agent_ids=["expert"], session_send=True
    )

    refused = tool_result(conversation_send(agent=muted, actor=Actor.for_user(alice), message=post, channel="api"))
    posted = tool_result(conversation_send(agent=sender, actor=Actor.for_user(alice), message=post, channel="api"))

    assert refused == "Refused: runtime_policy.interaction.session_send is false."
    assert posted == f"Posted into conversation {talk.pk} as message #3."
    assert list(talk.messages.values_list("sequence", "agent_key", "text"))[-1] == (3, "sender", "A note.")


def test_spawn_agent_ids_bounds_where_a_conversation_may_go(
    workspace: Workspace, ada: User, local_preset: Preset, alice_api, server
) -> None:
    make_agent(workspace, "expert", "You are Expert.", by=ada)
    make_agent(workspace, "billing", "You are Billing.", by=ada)
    make_agent(
        workspace,
        "front",
        "You are Front.",
        by=ada,
        allowed_tool_names=["handoff"],
        runtime_policy={"interaction": {"spawn_agent_ids": ["billing"]}},
    )
    refused_by_tool = alice_api.post(SEND.format("front"), {"message": "handoff expert"}).json()
    url = f"/v1/admin/conversations/{refused_by_tool['conversation']['id']}/handoff"

    refused_by_client = alice_api.post(url, {"agent": "expert"})
    allowed = alice_api.post(url, {"agent": "billing"})

    refusal = (
        "'expert' is not among the agents this conversation may go to (runtime_policy.interaction.spawn_agent_ids)."
    )
    assert refused_by_tool["answer"]["text"] == f"Hand-off refused: {refusal}"
    assert (refused_by_client.status_code, refused_by_client.json()["error"]["fields"]) == (422, {"agent": [refusal]})
    assert (allowed.status_code, allowed.json()["answering_agent"]) == (200, "billing")


# --- interaction.user_ids once a conversation was handed off: the inherited policy's -----
def talks_to(agent, ada: User, *peers: User | None) -> None:
    """`agent`'s live policy from now on: `user_ids` naming `peers` (None: no list, anyone)."""
    interaction = {} if peers == (None,) else {"user_ids": [f"user:{peer.pk}" for peer in peers]}
    prompt_version_propose(
        agent=agent, changes={"runtime_policy": {"interaction": interaction}}, actor=Actor.for_user(ada), mode="live"
    )
    agent.refresh_from_db()


def test_a_peer_the_inherited_policy_lists_may_talk_on_after_a_handoff(
    workspace: Workspace, ada: User, alice: User, bob: User, local_preset: Preset, server
) -> None:
    front = make_agent(workspace, "front", "You are Front.", by=ada, allowed_tool_names=["handoff"])
    talks_to(front, ada, alice)
    make_agent(workspace, "expert", "You are Expert.", by=ada, runtime_policy={"interaction": {"user_ids": []}})
    actor = Actor.for_user(alice)
    conversation_send(agent=front, actor=actor, message="handoff expert", channel="api")

    talks_to(front, ada, bob)  # front's own list no longer names alice; what it handed on does
    reply = conversation_send(agent=front, actor=actor, message="still there?", channel="api")

    assert (reply.turn.agent_key, reply.answer.text) == ("expert", "You are Expert. answers still there?")
    assert Conversation.objects.get().inherited_policy["interaction"]["user_ids"] == [f"user:{alice.pk}"]


def test_a_peer_the_inherited_policy_does_not_list_is_refused_after_a_handoff(
    workspace: Workspace, ada: User, alice: User, bob: User, local_preset: Preset, server
) -> None:
    front = make_agent(workspace, "front", "You are Front.", by=ada)
    make_agent(workspace, "expert", "You are Expert.", by=ada)
    actor = Actor.for_user(alice)
    conversation_send(agent=front, actor=actor, message="hello", channel="api")
    talks_to(front, ada, bob)
    conversation_handoff(conversation=Conversation.objects.get(), agent_key="expert", actor=Actor.for_user(ada))

    talks_to(front, ada, None)  # front talks to anyone again; the conversation still answers under bob-only
    before = (ConversationMessage.objects.count(), len(server.bodies))
    with pytest.raises(PermissionDenied) as refused:
        conversation_send(agent=front, actor=actor, message="hello again", channel="api")

    assert str(refused.value) == (
        f"'user:{alice.pk}' may not talk to agent 'front': this conversation was handed to 'expert', and the "
        "runtime policy it answers under (inherited at the hand-off) does not list this peer in "
        "interaction.user_ids."
    )
    assert (ConversationMessage.objects.count(), len(server.bodies)) == before == (2, 1)
