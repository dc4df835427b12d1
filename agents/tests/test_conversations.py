"""`conversation_send` as a service: its statements per message, constant whatever the
stored history, and the admin's read-only pages of conversations."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent, Conversation, ConversationNote, Preset
from agents.runtime import conversation_send
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace
from aihummer.tests.factories import store_history


@pytest.fixture
def writer(workspace: Workspace, ada: User, echo_preset: Preset) -> Agent:
    snapshot = {"identity": {"name": "Camille"}, "runtime_policy": {"context": {"max_history_messages": 10}}}
    return agent_create(workspace=workspace, actor=Actor.for_user(ada), key="writer", name="Writer", snapshot=snapshot)


# Per message, on an existing conversation: the conversation, its window (one LIMIT
# query), the actor's roles, the turn's agent read; then one transaction (a savepoint
# and its release here, inside the test's) with the turn and its debug log (one
# statement), the conversation locked, both messages in one insert and the
# conversation's counters.
STATEMENTS_PER_MESSAGE = 10


@pytest.mark.parametrize("history", [0, 1_000])
def test_a_message_costs_the_same_statements_whatever_the_stored_history(
    writer, alice, django_assert_num_queries, history
):
    conversation_send(agent=writer, actor=Actor.for_user(alice), message="hello", channel="api")
    store_history(Conversation.objects.get(), history)

    with django_assert_num_queries(STATEMENTS_PER_MESSAGE):
        reply = conversation_send(agent=writer, actor=Actor.for_user(alice), message="again", channel="api")

    assert reply.answer.sequence == history + 4
    assert reply.turn.status == "succeeded"


# An explicit context that needs no compaction: the uncompacted messages (one LIMIT
# query) and the notes (the latest summary and the last memory notes in one UNION)
# instead of the window, and the in_bulk read of the notes found; then as above.
STATEMENTS_PER_EXPLICIT_MESSAGE = 11
# A compaction adds its summary's transaction: the conversation locked, the summary
# inserted, compacted_through moved (a savepoint and its release here).
STATEMENTS_PER_COMPACTION = 5


@pytest.mark.parametrize("history", [0, 1_000])
def test_an_explicit_context_costs_the_same_statements_whatever_the_compacted_history(
    workspace, ada, alice, echo_preset, django_assert_num_queries, history
):
    policy = {"context": {"max_tokens": 8_000, "reserve_tokens": 0}, "memory_flush": {"enabled": False}}
    snapshot = {"identity": {"name": "Camille"}, "runtime_policy": policy}
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="brief", name="Brief", snapshot=snapshot)
    conversation_send(agent=agent, actor=Actor.for_user(alice), message="hello", channel="api")
    conversation = Conversation.objects.get()
    store_history(conversation, history)
    Conversation.objects.filter(pk=conversation.pk).update(compacted_through=history)

    with django_assert_num_queries(STATEMENTS_PER_EXPLICIT_MESSAGE):
        conversation_send(agent=agent, actor=Actor.for_user(alice), message="again", channel="api")
    store_history(Conversation.objects.get(), 300)  # beyond max_history_messages (200): the next message compacts
    with django_assert_num_queries(STATEMENTS_PER_EXPLICIT_MESSAGE + STATEMENTS_PER_COMPACTION):
        reply = conversation_send(agent=agent, actor=Actor.for_user(alice), message="then", channel="api")

    assert reply.turn.status == "succeeded"
    assert Conversation.objects.get().compacted_through > history
    assert ConversationNote.objects.filter(kind="summary").count() == 1


# --- the admin ------------------------------------------------------------------------
def test_the_admin_shows_a_conversation_read_only_with_each_answers_version(writer, alice, charlie, client):
    reply = conversation_send(agent=writer, actor=Actor.for_user(alice), message="Bonjour <b>", channel="api")
    url = reverse("admin:agents_conversation_change", args=[reply.conversation.pk])

    client.force_login(alice)
    listing = client.get(reverse("admin:agents_conversation_changelist"))
    page = client.get(url)
    client.force_login(charlie)
    foreign = client.get(url)

    assert listing.status_code == 200 and f"user:{alice.pk}" in listing.content.decode()
    html = page.content.decode()
    assert page.status_code == 200
    assert "Bonjour &lt;b&gt;" in html
    assert "<td>v1</td>" in html
    assert f"<td>assistant ({writer.key})</td>" in html  # who answered (a hand-off would name another)
    assert reverse("admin:agents_agentturn_change", args=[reply.turn.pk]) in html
    assert 'name="_save"' not in html  # read-only
    assert foreign.status_code == 302  # another workspace's: Django's "doesn't exist" redirect


def test_the_admin_never_lists_sandbox_conversations(workspace, ada, alice, echo_preset, client, make_key):
    from aihummer.services import api_key_authenticate

    agent = agent_create(
        workspace=workspace, actor=Actor.for_user(ada), key="box", name="Box", preset=echo_preset, is_sandbox=True
    )
    key = api_key_authenticate(make_key("read,write", owner=alice))
    conversation_send(agent=agent, actor=Actor.for_api_key(key), message="hello", channel="api")

    client.force_login(alice)
    listing = client.get(reverse("admin:agents_conversation_changelist"))
    page = client.get(reverse("admin:agents_conversation_change", args=[Conversation.all_objects.get().pk]))

    assert "0 conversations" in listing.content.decode()
    assert page.status_code == 302
