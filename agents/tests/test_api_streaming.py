"""A conversation's answer as Server-Sent Events over real HTTP (the live server), read
by a plain HTTP client: the model streamed through the official OpenAI SDK from a local
server, token deltas, tool calls and the final message, resumed from a cursor."""

from __future__ import annotations

import json

import pytest
import requests

from agents.models import ConversationMessage
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "Bonjour, voici une réponse diffusée en morceaux."


def read_events(response: requests.Response) -> list[tuple[int, str, dict]]:
    """Parse text/event-stream as any client would: blank-line separated fields."""
    events, fields = [], {}
    for line in response.iter_lines(decode_unicode=True):
        if line == "":
            if fields:
                events.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
            fields = {}
            continue
        name, _, value = line.partition(": ")
        fields[name] = value
    return events


@pytest.fixture
def streaming(workspace, ada, openai_server):
    """Agent `talker` on a streaming preset of the local server; `helper` to delegate to."""
    actor = Actor.for_user(ada)
    vault_preset(
        workspace,
        openai_server.base_url,
        secret="sk-local-0123456789",
        key="streamed",
        by=actor,
        streaming_enabled=True,
        is_active=True,
    )
    openai_server.chunk_chars = 5
    snapshot = {"identity": {"name": "Talker"}, "allowed_tool_names": ["delegate"]}
    agent_create(workspace=workspace, actor=actor, key="talker", name="Talker", snapshot=snapshot)
    agent_create(
        workspace=workspace, actor=actor, key="helper", name="Helper", snapshot={"identity": {"name": "Helper"}}
    )
    return openai_server


def session_for(live_server, raw_key: str) -> requests.Session:
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {raw_key}"
    http.base = live_server.url
    return http


def post_stream(http: requests.Session, message: str) -> requests.Response:
    return http.post(
        f"{http.base}/v1/admin/agents/talker/conversations/messages",
        json={"message": message, "stream": True},
        headers={"Accept": "text/event-stream"},
        stream=True,
        timeout=60,
    )


def test_the_answer_streams_as_deltas_then_the_final_message(live_server, streaming, make_key, alice):
    streaming.reply = lambda body: ANSWER
    http = session_for(live_server, make_key("read,write", owner=alice))

    response = post_stream(http, "Bonjour")
    events = read_events(response)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert [number for number, _, _ in events] == list(range(1, len(events) + 1))
    kinds = [kind for _, kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "message"
    assert events[0][2]["stream"] == response.headers["X-Stream-Id"]
    deltas = [data["text"] for _, kind, data in events if kind == "delta"]
    assert len(deltas) == len(ANSWER) // 5 + 1  # the SDK's chunks, one event each
    assert "".join(deltas) == ANSWER
    final = events[-1][2]
    assert final["answer"]["text"] == ANSWER
    assert final["turn"]["status"] == "succeeded"
    assert streaming.bodies[-1]["stream"] is True  # the model was streamed to us
    assert list(ConversationMessage.objects.values_list("role", "text")) == [("user", "Bonjour"), ("assistant", ANSWER)]


def test_a_vault_secret_split_across_the_models_chunks_never_streams(live_server, streaming, make_key, alice):
    streaming.reply = lambda body: "The key is sk-local-0123456789 here."  # the preset's own vault secret
    streaming.chunk_chars = 3  # the secret comes in seven chunks
    http = session_for(live_server, make_key("read,write", owner=alice))

    events = read_events(post_stream(http, "Bonjour"))

    deltas = [data["text"] for _, kind, data in events if kind == "delta"]
    assert len(deltas) > 3
    for count in range(1, len(deltas) + 1):
        assert "sk-loc" not in "".join(deltas[:count]) and "0123456789" not in "".join(deltas[:count])
    assert "".join(deltas) == "The key is [redacted] here." == events[-1][2]["answer"]["text"]


def test_tool_calls_and_their_results_are_events_of_the_stream(live_server, streaming, make_key, alice):
    def reply(body: dict) -> str | dict:
        if "Helper" in body["messages"][0]["content"]:
            return "helped"
        if any(m["role"] == "tool" for m in body["messages"]):
            return "done"
        arguments = json.dumps({"agent": "helper", "message": "help"})
        call = {"id": "call1", "type": "function", "function": {"name": "delegate", "arguments": arguments}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    streaming.reply = reply
    http = session_for(live_server, make_key("read,write", owner=alice))

    events = read_events(post_stream(http, "Ask the helper"))

    kinds = [kind for _, kind, _ in events]
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("message")
    call = next(data for _, kind, data in events if kind == "tool_call")
    assert call == {"calls": [{"id": "call1", "name": "delegate", "arguments": {"agent": "helper", "message": "help"}}]}
    result = next(data for _, kind, data in events if kind == "tool_result")
    assert result == {"calls": [{"id": "call1", "name": "delegate", "outcome": "ran", "result": "helped"}]}
    assert events[-1][2]["answer"]["text"] == "done"


def test_a_stream_resumes_after_its_last_event_id_for_its_own_peer_only(
    live_server, streaming, make_key, alice, bob, other_workspace
):
    streaming.reply = lambda body: ANSWER
    streaming.chunk_delay = 0.05
    raw = make_key("read,write", owner=alice)
    http = session_for(live_server, raw)

    response = post_stream(http, "Bonjour")
    lines = response.iter_lines(decode_unicode=True)
    first = [next(lines) for _ in range(8)]  # two whole events: start and a first delta
    response.close()  # the client goes away; the turn goes on
    stream_id = response.headers["X-Stream-Id"]
    assert first[0] == "id: 1" and first[4] == "id: 2"

    resumed = http.get(
        f"{http.base}/v1/admin/conversations/streams/{stream_id}",
        headers={"Last-Event-ID": "2", "Accept": "text/event-stream"},
        stream=True,
        timeout=60,
    )
    events = read_events(resumed)
    bobs = session_for(live_server, make_key("read,write", owner=bob)).get(
        f"{http.base}/v1/admin/conversations/streams/{stream_id}", timeout=10
    )
    foreign = session_for(live_server, make_key("read,write", workspace=other_workspace)).get(
        f"{http.base}/v1/admin/conversations/streams/{stream_id}", timeout=10
    )

    assert resumed.status_code == 200
    assert events[0][0] == 3 and events[-1][1] == "message"
    first_delta = json.loads(first[6].removeprefix("data: "))["text"]
    assert first_delta + "".join(d["text"] for _, k, d in events if k == "delta") == ANSWER
    assert events[-1][2]["answer"]["text"] == ANSWER
    assert bobs.status_code == 404 and foreign.status_code == 404
    assert bobs.json()["error"]["message"].startswith(f"Unknown stream '{stream_id}'")


def test_a_refused_message_is_an_error_before_anything_streams(live_server, streaming, make_key, alice):
    http = session_for(live_server, make_key("read", owner=alice))

    response = http.post(
        f"{http.base}/v1/admin/agents/talker/conversations/messages", json={"message": "hi", "stream": True}, timeout=10
    )

    assert response.status_code == 403
    assert ConversationMessage.objects.count() == 0
