"""An explicit context through the REST API, against a local OpenAI-protocol server that
records every request: older messages compacted into a summary in batches, the summary
sent instead of them, memory notes written before compaction and mixed in as an
unverified reference, the full history still stored."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from agents.models import Conversation, ConversationMessage, ConversationNote
from agents.runtime.compaction import MEMORY_INSTRUCTIONS, NOTES_HEADER, SUMMARY_INSTRUCTIONS
from agents.runtime.context import estimate_tokens
from agents.tests.helpers import policy_agent, send_url, sent
from aihummer.tests.factories import store_history

# A budget of 1000 tokens, no reserve, half for the history: 500 tokens.
BRIEF = {"max_tokens": 1000, "reserve_tokens": 0, "history_share": 0.5}


def system(body: dict) -> str:
    return body["messages"][0]["content"]


def kind(body: dict) -> str:
    text = system(body)
    if text.startswith(SUMMARY_INSTRUCTIONS):
        return "summary"
    return "memory" if text.startswith(MEMORY_INSTRUCTIONS) else "turn"


@pytest.fixture
def numbered(openai_server):
    """Summaries and notes answered `summary <n>` / `note <n>`, turns as usual."""
    counts = {"summary": 0, "memory": 0}

    def reply(body: dict) -> str:
        what = kind(body)
        if what == "turn":
            return f"answer: {body['messages'][-1]['content']}"
        counts[what] += 1
        return f"{'summary' if what == 'summary' else 'note'} {counts[what]}"

    openai_server.reply = reply
    return openai_server


def message(n: int) -> str:
    return f"message {n:02d}: " + "x" * 88  # about 100 characters: 33 tokens with its framing


def test_forty_messages_are_compacted_in_batches_and_the_summary_is_sent_instead(
    workspace, ada, alice, local_preset, alice_api, numbered, client
):
    policy_agent(workspace, ada, "brief", {"context": BRIEF, "memory_flush": {"enabled": False}})

    replies = [alice_api.post(send_url("brief"), {"message": message(n)}) for n in range(1, 21)]

    assert [r.status_code for r in replies] == [200] * 20
    assert all(r.json()["turn"]["status"] == "succeeded" for r in replies)
    summaries = [body for body in numbered.bodies if kind(body) == "summary"]
    turns = [body for body in numbered.bodies if kind(body) == "turn"]
    assert len(turns) == 20
    # Compaction runs every few messages, several at once, not on every message.
    assert 3 <= len(summaries) <= 8
    batches = [summary["messages"][1]["content"] for summary in summaries]
    assert all(batch.count("\n[") >= 3 for batch in batches)  # each batch: several messages
    # Each summary folds the one before it.
    assert "Summary so far" not in batches[0]
    assert all(f"Summary so far:\nsummary {n}\n" in batch for n, batch in enumerate(batches[1:], start=1))
    last = turns[-1]
    assert f"summary {len(summaries)}" in system(last)
    conversation = Conversation.objects.get()
    assert conversation.compacted_through > 20
    texts = [text for _, text in sent(last)]
    assert texts[-1] == message(20)
    # No compacted message is sent again: only those after compacted_through.
    for n in range(1, 21):
        compacted = 2 * n <= conversation.compacted_through
        assert (message(n) in texts) is not compacted, n
    # The explicit budget is kept: the request's text is within max_tokens.
    sent_chars = sum(len(m["content"]) for m in last["messages"])
    assert estimate_tokens("x" * sent_chars) + 8 * len(last["messages"]) <= BRIEF["max_tokens"]
    # The full history is still stored; the summaries with it.
    assert ConversationMessage.objects.count() == 40
    notes = list(ConversationNote.objects.filter(kind="summary").order_by("pk"))
    assert [n.text for n in notes] == [f"summary {k}" for k in range(1, len(summaries) + 1)]
    assert {n.first_sequence for n in notes} == {1}
    assert notes[-1].last_sequence == conversation.compacted_through
    assert all(n.model == "gpt-4.1" and n.input_tokens == 10 and n.output_tokens == 5 for n in notes)
    # Shown: through the API and on the admin's read-only page.
    detail = alice_api.get(f"/v1/admin/conversations/{conversation.pk}").json()
    assert detail["compacted_through"] == conversation.compacted_through
    assert [(n["kind"], n["text"]) for n in detail["notes"]] == [("summary", n.text) for n in notes]
    client.force_login(alice)
    page = client.get(reverse("admin:agents_conversation_change", args=[conversation.pk])).content.decode()
    assert f"summary {len(summaries)}" in page
    assert page.count("[compacted: sent as the summary]") == conversation.compacted_through


def test_a_long_stored_history_is_compacted_in_several_batches_in_one_send(
    workspace, ada, local_preset, alice_api, numbered
):
    agent = policy_agent(workspace, ada, "brief", {"context": BRIEF, "memory_flush": {"enabled": False}})
    policy_agent(workspace, ada, "plain", {})
    alice_api.post(send_url("plain"), {"message": "start"})  # any conversation row to copy from
    conversation = Conversation.objects.create(
        workspace=workspace, agent=agent, peer=Conversation.objects.get().peer, channel="api"
    )
    store_history(conversation, 38, message)
    numbered.bodies.clear()

    reply = alice_api.post(send_url("brief"), {"message": message(39)}).json()

    assert reply["message"]["sequence"] == 39
    kinds = [kind(body) for body in numbered.bodies]
    assert kinds[-1] == "turn" and set(kinds[:-1]) == {"summary"}
    assert len(kinds) - 1 >= 3  # 36 messages of ~35 tokens in batches of at most 500
    for body in numbered.bodies[:-1]:
        assert estimate_tokens(body["messages"][1]["content"]) <= 500 + 60
    notes = list(ConversationNote.objects.filter(conversation=conversation).order_by("pk"))
    assert [(n.first_sequence, n.text) for n in notes] == [(1, f"summary {k}") for k in range(1, len(kinds))]
    assert system(numbered.bodies[-1]).count("summary ") == 1
    assert f"summary {len(kinds) - 1}" in system(numbered.bodies[-1])


def test_memory_notes_are_written_before_compaction_and_the_last_three_sent_as_unverified(
    workspace, ada, local_preset, alice_api, numbered
):
    policy = {"context": BRIEF, "memory_flush": {"soft_threshold_tokens": 100}}
    policy_agent(workspace, ada, "brief", policy)

    for n in range(1, 21):
        assert alice_api.post(send_url("brief"), {"message": message(n)}).status_code == 200

    kinds = [kind(body) for body in numbered.bodies]
    assert kinds.count("memory") >= 4
    # Once before each compaction: a note, then the summary, never two notes in a row
    # without a compaction between them.
    calls = [k for k in kinds if k != "turn"]
    assert calls[0] == "memory"
    assert "memory,memory" not in ",".join(calls)
    notes = list(ConversationNote.objects.filter(kind="memory").order_by("pk"))
    assert [n.text for n in notes] == [f"note {k}" for k in range(1, len(notes) + 1)]
    # The memory call is tool-less; the last turn carries the last three notes, marked unverified.
    memory_body = next(body for body in numbered.bodies if kind(body) == "memory")
    assert "tools" not in memory_body
    last = system([body for body in numbered.bodies if kind(body) == "turn"][-1])
    assert NOTES_HEADER in last and "UNVERIFIED" in last
    shown = [n.text for n in notes if f") {n.text}\n" in last + "\n"]
    assert shown == [n.text for n in notes[-3:]]


def test_a_failed_compaction_compacts_nothing_and_the_turn_still_answers(
    workspace, ada, local_preset, alice_api, openai_server
):
    policy = {"context": BRIEF, "memory_flush": {"enabled": False}, "app": {"direct_completion": {"timeout_ms": 200}}}
    policy_agent(workspace, ada, "brief", policy)

    def reply(body: dict) -> str:
        if kind(body) == "summary":
            time.sleep(0.5)  # beyond the direct completion's timeout_ms
        return f"answer: {body['messages'][-1]['content']}"

    openai_server.reply = reply
    replies = [alice_api.post(send_url("brief"), {"message": message(n)}).json() for n in range(1, 8)]

    assert all(r["turn"]["status"] == "succeeded" for r in replies)
    assert ConversationNote.objects.count() == 0
    assert Conversation.objects.get().compacted_through == 0
    assert ConversationMessage.objects.count() == 14
