"""Conversations through the REST API, against a local OpenAI-protocol server that
records every request: the history window the model is sent, routing by
`runtime_policy.session.scope`, idle reset, the default list, workspaces and sandbox
rows, and bad input refused before anything is written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Agent, AgentTurn, Conversation, ConversationMessage, Preset
from agents.runtime.conversations import PEER_REFUSED
from agents.services import agent_create
from agents.tests.helpers import policy_agent, send_url, sent
from aihummer.actors import Actor
from aihummer.models import ApiKey, User, Workspace

PROFILE = {"identity": {"name": "Camille", "role": "Writer"}}


@pytest.fixture
def writer(workspace: Workspace, ada: User, local_preset: Preset) -> Agent:
    return policy_agent(workspace, ada, "writer", {"context": {"max_history_messages": 4}})


def test_a_conversation_carries_its_newest_messages_within_max_history_messages(writer, alice_api, openai_server):
    replies = [alice_api.post(send_url("writer"), {"message": f"m{n}"}) for n in range(1, 5)]

    assert [r.status_code for r in replies] == [200] * 4, replies[-1].json()
    last = replies[-1].json()
    assert last["answer"]["text"] == "answer: m4"
    assert last["answer"]["version"] == 1
    assert last["message"]["sequence"] == 7 and last["answer"]["sequence"] == 8
    assert last["turn"]["status"] == "succeeded"
    assert {r.json()["conversation"]["id"] for r in replies} == {last["conversation"]["id"]}
    assert sent(openai_server.bodies[0]) == [("user", "m1")]
    # Six stored before the fourth message; the newest four are sent.
    assert sent(openai_server.bodies[3]) == [
        ("user", "m2"),
        ("assistant", "answer: m2"),
        ("user", "m3"),
        ("assistant", "answer: m3"),
        ("user", "m4"),
    ]
    assert ConversationMessage.objects.count() == 8
    assert AgentTurn.objects.count() == 4


def test_the_history_fits_its_share_of_an_explicit_budget(workspace, ada, local_preset, alice_api, openai_server):
    # A budget of 1000 tokens, no reserve, half for the history: 500 tokens. A round of
    # a 600-character message and its answer is about 318 tokens (chars / 4 + 8 each):
    # the older rounds are compacted (agents/tests/test_api_compaction.py has the rest).
    policy = {"context": {"max_tokens": 1000, "reserve_tokens": 0, "history_share": 0.5}}
    policy_agent(workspace, ada, "brief", {**policy, "memory_flush": {"enabled": False}})
    texts = [f"{n}" * 600 for n in range(1, 5)]
    for text in texts:
        assert alice_api.post(send_url("brief"), {"message": text}).status_code == 200

    turns = [body for body in openai_server.bodies if body["messages"][1]["content"] in texts]
    assert len(turns) == 4
    assert sent(turns[3]) == [("user", texts[3])]
    assert "[Summary of the earlier conversation, messages 1 to 6" in turns[3]["messages"][0]["content"]


def test_per_peer_is_one_conversation_across_channels_and_the_persons_own_session(
    workspace, ada, alice, local_preset, alice_api, api_as, openai_server
):
    policy_agent(workspace, ada, "shared", {"session": {"scope": "per-peer"}})
    first = alice_api.post(send_url("shared"), {"message": "hello", "channel": "web"}).json()
    # alice herself, through her session: her key answered for her, so she is the same peer.
    second = api_as(alice).post(send_url("shared"), {"message": "again", "channel": "admin"}).json()

    assert first["conversation"]["id"] == second["conversation"]["id"]
    assert second["conversation"] | {"id": 0, "last_message_at": "", "created_at": ""} == {
        "id": 0,
        "agent": "shared",
        "peer": f"user:{alice.pk}",
        "channel": "",
        "message_count": 4,
        "context_start": 1,
        "compacted_through": 0,
        "answering_agent": None,
        "last_message_at": "",
        "created_at": "",
    }
    assert [m["channel"] for m in (second["message"], second["answer"])] == ["admin", "admin"]
    assert sent(openai_server.bodies[1]) == [("user", "hello"), ("assistant", "answer: hello"), ("user", "again")]


def test_per_channel_peer_keeps_each_channel_apart(workspace, ada, local_preset, alice_api, openai_server):
    policy_agent(workspace, ada, "apart", {"session": {"scope": "per-channel-peer"}})
    web = alice_api.post(send_url("apart"), {"message": "hello", "channel": "web"}).json()
    sms = alice_api.post(send_url("apart"), {"message": "again", "channel": "sms"}).json()
    web_again = alice_api.post(send_url("apart"), {"message": "back", "channel": "web"}).json()

    assert web["conversation"]["id"] != sms["conversation"]["id"]
    assert web_again["conversation"]["id"] == web["conversation"]["id"]
    assert (web["conversation"]["channel"], sms["conversation"]["channel"]) == ("web", "sms")
    assert sent(openai_server.bodies[1]) == [("user", "again")]
    assert sent(openai_server.bodies[2]) == [("user", "hello"), ("assistant", "answer: hello"), ("user", "back")]


def test_two_peers_never_share_a_conversation(workspace, ada, bob, local_preset, alice_api, api_as, make_key):
    policy_agent(workspace, ada, "shared", {"session": {"scope": "per-peer"}})
    alices = alice_api.post(send_url("shared"), {"message": "hello"}).json()
    bobs = api_as(make_key("read,write", owner=bob)).post(send_url("shared"), {"message": "hello"}).json()
    ownerless = api_as(make_key("read,write")).post(send_url("shared"), {"message": "hello"}).json()

    assert len({alices["conversation"]["id"], bobs["conversation"]["id"], ownerless["conversation"]["id"]}) == 3
    assert bobs["conversation"]["peer"] == f"user:{bob.pk}"
    assert ownerless["conversation"]["peer"].startswith("api_key:")
    assert bobs["message"]["sequence"] == 1


def test_a_pause_past_idle_reset_minutes_opens_a_new_context_and_keeps_the_history(
    workspace, ada, local_preset, alice_api, openai_server
):
    policy_agent(workspace, ada, "idle", {"session": {"idle_reset_minutes": 30}})
    first = alice_api.post(send_url("idle"), {"message": "before"}).json()
    Conversation.objects.update(last_message_at=timezone.now() - timedelta(minutes=31))
    second = alice_api.post(send_url("idle"), {"message": "after"}).json()
    third = alice_api.post(send_url("idle"), {"message": "then"}).json()

    assert second["conversation"]["id"] == first["conversation"]["id"]
    assert sent(openai_server.bodies[1]) == [("user", "after")]
    assert sent(openai_server.bodies[2]) == [("user", "after"), ("assistant", "answer: after"), ("user", "then")]
    assert third["conversation"]["context_start"] == 3
    detail = alice_api.get(f"/v1/admin/conversations/{first['conversation']['id']}").json()
    assert [m["text"] for m in detail["messages"]["results"]] == [
        "before",
        "answer: before",
        "after",
        "answer: after",
        "then",
        "answer: then",
    ]


def test_a_pause_shorter_than_idle_reset_minutes_keeps_the_context(
    workspace, ada, local_preset, alice_api, openai_server
):
    policy_agent(workspace, ada, "idle", {"session": {"idle_reset_minutes": 30}})
    alice_api.post(send_url("idle"), {"message": "before"})
    Conversation.objects.update(last_message_at=timezone.now() - timedelta(minutes=29))
    alice_api.post(send_url("idle"), {"message": "after"})

    assert sent(openai_server.bodies[1]) == [("user", "before"), ("assistant", "answer: before"), ("user", "after")]


def test_a_failed_turn_keeps_the_message_and_answers_null(writer, alice_api, openai_server):
    openai_server.fail_first = 10  # more than the retries

    reply = alice_api.post(send_url("writer"), {"message": "hello"})

    assert reply.status_code == 200
    assert reply.json()["answer"] is None
    assert reply.json()["turn"]["status"] == "failed"
    assert list(ConversationMessage.objects.values_list("role", "text")) == [("user", "hello")]


def test_messages_are_paged_by_cursor_oldest_first(writer, alice_api):
    for n in range(3):
        alice_api.post(send_url("writer"), {"message": f"m{n}"})
    conversation = Conversation.objects.get()

    first = alice_api.get(f"/v1/admin/conversations/{conversation.pk}?limit=4").json()
    second = alice_api.get(first["messages"]["next"]).json()

    assert [m["sequence"] for m in first["messages"]["results"]] == [1, 2, 3, 4]
    assert [m["sequence"] for m in second["messages"]["results"]] == [5, 6]
    assert second["messages"]["next"] is None
    assert [m["version"] for m in second["messages"]["results"]] == [None, 1]


def test_another_workspaces_conversation_answers_as_a_missing_one(
    writer, alice_api, api_as, make_key, other_workspace, charlie
):
    alice_api.post(send_url("writer"), {"message": "hello"})
    conversation = Conversation.objects.get()
    charlies = [api_as(make_key("read,write", workspace=other_workspace)), api_as(charlie)]

    for client in charlies:
        foreign = client.get(f"/v1/admin/conversations/{conversation.pk}")
        missing = client.get("/v1/admin/conversations/999999999")
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json()["error"]["code"] == "not_found"
        assert client.get("/v1/admin/conversations").json()["results"] == []


def test_sandbox_conversations_are_hidden_from_people(workspace, ada, alice, local_preset, api_as, make_key):
    key = api_as(make_key("read,write", owner=alice))
    agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="sandboxed",
        name="Sandboxed",
        snapshot=PROFILE,
        preset=local_preset,
        is_sandbox=True,
    )
    reply = key.post(send_url("sandboxed"), {"message": "hello"})
    assert reply.status_code == 200, reply.json()
    pk = reply.json()["conversation"]["id"]

    assert Conversation.all_objects.get().is_sandbox
    assert set(ConversationMessage.all_objects.values_list("is_sandbox", flat=True)) == {True}
    assert key.get(f"/v1/admin/conversations/{pk}").status_code == 200  # its program reads it back
    assert api_as(alice).get(f"/v1/admin/conversations/{pk}").status_code == 404
    assert api_as(alice).get("/v1/admin/conversations").json()["results"] == []


def test_index_max_entries_and_prune_after_days_leave_old_conversations_out_of_the_default_list(
    workspace, ada, local_preset, alice_api
):
    policy_agent(workspace, ada, "capped", {"session": {"index_max_entries": 2}})
    policy_agent(workspace, ada, "pruned", {"session": {"index_prune_after_days": 7}})
    for channel in ("one", "two", "three"):
        alice_api.post(send_url("capped"), {"message": "hi", "channel": channel})
    for channel in ("old", "new"):
        alice_api.post(send_url("pruned"), {"message": "hi", "channel": channel})
    Conversation.objects.filter(channel="old").update(last_message_at=timezone.now() - timedelta(days=8))

    listed = alice_api.get("/v1/admin/conversations").json()["results"]
    everything = alice_api.get("/v1/admin/conversations?include_archived=true").json()["results"]
    capped = alice_api.get("/v1/admin/conversations?agent=capped").json()["results"]

    assert [(c["agent"], c["channel"]) for c in listed] == [("pruned", "new"), ("capped", "three"), ("capped", "two")]
    assert len(everything) == 5
    assert [c["channel"] for c in capped] == ["three", "two"]
    assert Conversation.objects.count() == 5  # taken out of the list, never deleted


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"message": "a\x00b"}, "message", "NUL characters and lone surrogates are not allowed."),
        ({"message": "x" * 20_001}, "message", "Ensure this field has no more than 20000 characters."),
        ({"message": ""}, "message", "This field may not be blank."),
        ({}, "message", "This field is required."),
        ({"message": "hi", "channel": "Not A Channel"}, "channel", "This value does not match the required pattern."),
        ({"message": "   "}, "message", "Give a message for the agent."),
    ],
)
def test_bad_input_is_refused_with_its_field_and_nothing_is_written(
    writer, alice_api, openai_server, body, field, message
):
    response = alice_api.post(send_url("writer"), body)

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {field: [message]}
    assert openai_server.bodies == []
    assert (Conversation.all_objects.count(), ConversationMessage.all_objects.count()) == (0, 0)
    assert AgentTurn.all_objects.count() == 0


def test_an_unknown_agent_is_a_404(writer, alice_api):
    response = alice_api.post(send_url("nobody"), {"message": "hello"})

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Unknown agent 'nobody'."


def test_a_peer_named_by_the_client_is_refused_unless_it_is_the_callers_own(writer, alice, alice_api, openai_server):
    refused = alice_api.post(send_url("writer"), {"message": "hello", "peer": "user:999"})
    own = alice_api.post(send_url("writer"), {"message": "hello", "peer": f"user:{alice.pk}"})

    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == PEER_REFUSED
    assert own.status_code == 200
    assert len(openai_server.bodies) == 1


def test_a_read_only_key_may_not_send(writer, api_as, make_key, alice, openai_server):
    response = api_as(make_key("read", owner=alice)).post(send_url("writer"), {"message": "hello"})

    assert response.status_code == 403
    assert Conversation.all_objects.count() == 0
    assert openai_server.bodies == []


def test_the_list_costs_the_same_statements_for_one_conversation_or_many(workspace, ada, local_preset, alice_api):
    policy_agent(workspace, ada, "capped", {"session": {"index_max_entries": 10, "index_prune_after_days": 30}})
    alice_api.post(send_url("capped"), {"message": "hi", "channel": "c0"})
    with CaptureQueriesContext(connection) as one:
        alice_api.get("/v1/admin/conversations")
    for n in range(1, 5):
        alice_api.post(send_url("capped"), {"message": "hi", "channel": f"c{n}"})
    with CaptureQueriesContext(connection) as many:
        listed = alice_api.get("/v1/admin/conversations").json()["results"]

    assert len(listed) == 5
    assert len(many.captured_queries) == len(one.captured_queries)


def test_a_key_with_the_vouch_scope_names_its_peer_and_session_scope_routes_it(
    workspace, ada, local_preset, api_as, make_key, openai_server
):
    policy_agent(workspace, ada, "shared", {"session": {"scope": "per-peer"}})
    policy_agent(workspace, ada, "apart", {"session": {"scope": "per-channel-peer"}})
    gateway, other_gateway = api_as(make_key("read,write,vouch")), api_as(make_key("read,write,vouch"))

    def send(api, agent: str, peer: str, channel: str) -> dict:
        response = api.post(send_url(agent), {"message": "hi", "peer": peer, "channel": channel})
        assert response.status_code == 200, response.json()
        return response.json()["conversation"]

    shared = [send(gateway, "shared", "telegram-42", "telegram"), send(gateway, "shared", "telegram-42", "web")]
    someone_else = send(gateway, "shared", "telegram-43", "telegram")
    other_gateways = send(other_gateway, "shared", "telegram-42", "telegram")  # its own namespace of ids
    apart = [send(gateway, "apart", "telegram-42", "telegram"), send(gateway, "apart", "telegram-42", "web")]

    key_id = Conversation.objects.get(pk=shared[0]["id"]).peer.split(":")[1].split("/")[0]
    assert [c["peer"] for c in shared] == [f"api_key:{key_id}/telegram-42"] * 2
    assert shared[0]["id"] == shared[1]["id"] and shared[1]["message_count"] == 4  # one per peer, every channel
    assert len({someone_else["id"], other_gateways["id"], shared[0]["id"]}) == 3
    assert apart[0]["id"] != apart[1]["id"] and [c["channel"] for c in apart] == ["telegram", "web"]


def test_a_key_without_the_vouch_scope_cannot_vouch_and_nothing_is_written(
    writer, api_as, make_key, alice, openai_server
):
    plain = api_as(make_key("read,write,publish", owner=alice))
    refused = plain.post(send_url("writer"), {"message": "hello", "peer": "telegram-42"})
    bad_id = api_as(make_key("read,write,vouch")).post(send_url("writer"), {"message": "hello", "peer": "a b"})

    assert (refused.status_code, refused.json()["error"]["message"]) == (403, PEER_REFUSED)
    assert (bad_id.status_code, list(bad_id.json()["error"]["fields"])) == (422, ["peer"])
    assert Conversation.all_objects.count() == 0
    assert openai_server.bodies == []


def test_only_the_peers_in_user_ids_may_talk_to_the_agent(
    workspace, ada, alice, bob, local_preset, alice_api, api_as, make_key, openai_server
):
    gateway = make_key("read,write,vouch")
    gateway_id = ApiKey.objects.latest("pk").pk
    policy_agent(
        workspace, ada, "private", {"interaction": {"user_ids": [f"user:{alice.pk}", f"api_key:{gateway_id}/tg-42"]}}
    )

    allowed = alice_api.post(send_url("private"), {"message": "hello"})
    vouched = api_as(gateway).post(send_url("private"), {"message": "hello", "peer": "tg-42"})
    before = (Conversation.all_objects.count(), len(openai_server.bodies))
    refused = api_as(make_key("read,write", owner=bob)).post(send_url("private"), {"message": "hello"})
    other_vouched = api_as(gateway).post(send_url("private"), {"message": "hello", "peer": "tg-43"})

    assert (allowed.status_code, vouched.status_code) == (200, 200)
    assert (refused.status_code, other_vouched.status_code) == (403, 403)
    assert refused.json()["error"]["message"] == (
        f"'user:{bob.pk}' may not talk to agent 'private': its runtime_policy.interaction.user_ids does not list "
        "this peer."
    )
    assert other_vouched.json()["error"]["message"].startswith(f"'api_key:{gateway_id}/tg-43' may not talk")
    assert (Conversation.all_objects.count(), len(openai_server.bodies)) == before == (2, 2)
