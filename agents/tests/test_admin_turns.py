"""The admin's turn page: a read-only record of one turn and each of its model calls
(prompt, messages, tool calls, usage, cost), seen only by members of its workspace,
and never for sandbox turns."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from agents.models import Agent, AgentTurn, ConversationMessage, Preset
from agents.runtime import agent_run_test, agent_turn_run
from agents.runtime.conversations import conversation_send
from agents.runtime.tools import QUEUED
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace

PROFILE = {"identity": {"name": "Camille", "role": "Writer"}, "sections": [{"key": "method", "body": "Plan first."}]}
PERSONA_CALL = '@call propose_persona_edit {"persona": "Warm <and> brief.", "reason": "Feedback"}'


def change_url(turn: AgentTurn | int) -> str:
    return reverse("admin:agents_agentturn_change", args=[getattr(turn, "pk", turn)])


def missing_message(pk: int) -> str:
    """Django's own message for a change page of a row it cannot find (typographic quotes)."""
    return f"agent turn with ID \u201c{pk}\u201d doesn\u2019t exist. Perhaps it was deleted?"


def comparable(response: HttpResponse, pk: int) -> str:
    """The page without what differs by design: the pk in the message and the CSRF token."""
    html = response.content.decode().replace(f"ID \u201c{pk}\u201d", "ID")
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def page(client: Client, user: User, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def writer(workspace: Workspace, ada: User, paid_echo: Preset) -> Agent:
    return agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="writer",
        name="Writer",
        preset=paid_echo,
        snapshot={**PROFILE, "allowed_tool_names": ["propose_persona_edit"], "runtime_policy": {"max_iterations": 3}},
    )


@pytest.fixture
def turn(writer: Agent, alice: User) -> AgentTurn:
    """Two model calls: a tool call that ran, then the answer."""
    return agent_turn_run(agent=writer, message=PERSONA_CALL, actor=Actor.for_user(alice))


@pytest.fixture
def sandbox_turn(workspace: Workspace, alice: User, paid_echo: Preset) -> AgentTurn:
    agent = agent_create(
        workspace=workspace,
        actor=Actor.for_user(alice),
        key="sb_reader",
        name="Sandbox reader",
        preset=paid_echo,
        snapshot=PROFILE,
        is_sandbox=True,
    )
    return agent_turn_run(agent=agent, message="sandbox-only message", actor=Actor.for_user(alice))


def test_a_reviewer_sees_the_turn_with_its_messages_tool_calls_and_cost(
    client: Client, bob: User, turn: AgentTurn
) -> None:
    html = page(client, bob, change_url(turn))

    first, second = turn.debug_logs.order_by("sequence")
    assert turn.cost_usd == first.cost_usd + second.cost_usd > 0
    assert f'<div class="readonly">${turn.cost_usd}</div>' in html  # one money format (issue 32)
    assert escape(turn.message) in html
    assert escape(turn.answer) in html
    assert "Call 1 · echo:echo-paid · tool_calls" in html
    assert "Call 2 · echo:echo-paid · stop" in html
    for log in (first, second):
        assert f"${log.cost_usd} · {log.latency_ms} ms" in html
        assert f"{log.input_tokens} in (0 cached) / {log.output_tokens} out tokens" in html
    assert html.count(f"<pre>{escape(first.system_prompt)}</pre>") == 2
    assert "<th>tool</th><th>arguments</th><th>outcome</th><th>result</th>" in html
    assert (
        "<tr><td><code>propose_persona_edit</code></td>"
        f"<td><pre>{escape(PERSONA_CALL.split(' ', 2)[2])}</pre></td><td>ran</td>"
        f"<td><pre>{escape(QUEUED.format(number=2))}</pre></td></tr>"
    ) in html


def test_data_on_the_turn_page_is_escaped(client: Client, bob: User, turn: AgentTurn) -> None:
    html = page(client, bob, change_url(turn))

    assert "Warm <and> brief." not in html
    assert "Warm &lt;and&gt; brief." in html


def test_a_viewer_of_the_workspace_sees_the_turn_too(client: Client, vic: User, turn: AgentTurn) -> None:
    html = page(client, vic, change_url(turn))

    assert "Call 2 · echo:echo-paid · stop" in html


def test_a_turn_without_model_calls_says_so(
    client: Client, bob: User, workspace: Workspace, ada: User, alice: User
) -> None:
    agent = agent_create(workspace=workspace, actor=Actor.for_user(ada), key="orphan", name="Orphan", snapshot=PROFILE)
    failed = agent_turn_run(agent=agent, message="Hi", actor=Actor.for_user(alice))

    html = page(client, bob, change_url(failed))

    assert "No model call was made." in html
    assert escape("Agent 'orphan' has no preset and workspace 'acme' has no default preset.") in html


def test_another_workspaces_turn_answers_exactly_as_a_missing_one(
    client: Client, charlie: User, turn: AgentTurn
) -> None:
    client.force_login(charlie)
    missing_pk = turn.pk + 1000

    # Followed, so each message is shown (and consumed) on the page it lands on.
    foreign = client.get(change_url(turn), follow=True)
    missing = client.get(change_url(missing_pk), follow=True)

    assert foreign.redirect_chain == missing.redirect_chain == [(reverse("admin:index"), 302)]
    assert [str(m) for m in foreign.context["messages"]] == [missing_message(turn.pk)]
    assert [str(m) for m in missing.context["messages"]] == [missing_message(missing_pk)]
    assert comparable(foreign, turn.pk) == comparable(missing, missing_pk)


def test_the_changelist_lists_a_workspaces_turns_only_to_its_members(
    client: Client, bob: User, charlie: User, turn: AgentTurn
) -> None:
    url = reverse("admin:agents_agentturn_changelist")

    assert change_url(turn) in page(client, bob, url)
    assert change_url(turn) not in page(client, charlie, url)


@pytest.mark.parametrize("viewer", ["ada", "root"])
def test_sandbox_turns_are_never_listed(
    client: Client, request: pytest.FixtureRequest, turn: AgentTurn, sandbox_turn: AgentTurn, viewer: str
) -> None:
    html = page(client, request.getfixturevalue(viewer), reverse("admin:agents_agentturn_changelist"))

    assert change_url(turn) in html
    assert change_url(sandbox_turn) not in html
    assert "sb_reader" not in html
    assert "1 agent turn" in html


def test_a_sandbox_turn_answers_as_a_missing_one(client: Client, root: User, sandbox_turn: AgentTurn) -> None:
    client.force_login(root)

    response = client.get(change_url(sandbox_turn))

    assert (response.status_code, response.url) == (302, reverse("admin:index"))


def test_the_turn_page_is_read_only(client: Client, ada: User, turn: AgentTurn) -> None:
    client.force_login(ada)

    html = client.get(change_url(turn)).content.decode()
    posted = client.post(change_url(turn), {"status": "succeeded", "answer": "forged"})

    assert 'name="_save"' not in html
    assert posted.status_code == 403
    turn.refresh_from_db()
    assert turn.answer.startswith("[echo echo-paid] ")


def test_turns_cannot_be_added_or_deleted_in_the_admin(client: Client, ada: User, turn: AgentTurn) -> None:
    client.force_login(ada)

    added = client.get(reverse("admin:agents_agentturn_add"))
    deleted = client.post(reverse("admin:agents_agentturn_delete", args=[turn.pk]), {"post": "yes"})

    assert (added.status_code, deleted.status_code) == (403, 403)
    assert AgentTurn.objects.filter(pk=turn.pk).exists()


def test_the_turn_page_costs_the_same_queries_however_many_model_calls(
    client: Client, bob: User, alice: User, writer: Agent, turn: AgentTurn
) -> None:
    looped = agent_turn_run(agent=writer, message=PERSONA_CALL.replace("@call", "@loop"), actor=Actor.for_user(alice))
    assert (turn.model_calls, looped.model_calls) == (2, 3)
    client.force_login(bob)
    client.get(change_url(turn))  # warm the session and caches

    with CaptureQueriesContext(connection) as two_calls:
        client.get(change_url(turn))
    with CaptureQueriesContext(connection) as three_calls:
        client.get(change_url(looped))

    assert len(three_calls) == len(two_calls)


def test_the_changelist_filters_name_no_other_workspace(
    client: Client, bob: User, charlie: User, turn: AgentTurn
) -> None:
    html = page(client, bob, reverse("admin:agents_agentturn_changelist"))

    assert change_url(turn) in html
    assert "Globex" not in html


def test_the_turn_page_shows_no_secret_its_debug_log_redacts(
    client: Client, bob: User, alice: User, writer: Agent
) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    turn = agent_turn_run(agent=writer, message=f"my key is {secret}", actor=Actor.for_user(alice))
    assert secret not in json.dumps(turn.debug_logs.get().messages)

    html = page(client, bob, change_url(turn))

    assert secret not in html


def test_a_long_turn_is_paged_and_its_logs_grow_with_its_calls(
    client: Client, bob: User, workspace: Workspace, ada: User, alice: User, echo_preset: Preset
) -> None:
    looping = agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="looper",
        name="Looper",
        snapshot={**PROFILE, "runtime_policy": {"max_iterations": 25}},
    )
    turn = agent_turn_run(agent=looping, message="@loop lookup {}", actor=Actor.for_user(alice))  # refused, 25 times

    logs = list(turn.debug_logs.order_by("sequence"))
    assert (turn.status, len(logs)) == ("failed", 25)
    # Each log holds what its call added: the message, then one exchange (call, refusal) per call.
    assert [len(log.messages) for log in logs] == [1] + [2] * 24
    assert [bool(log.system_prompt) for log in logs] == [True] + [False] * 24
    first = page(client, bob, change_url(turn))
    second = page(client, bob, change_url(turn) + "?calls=2")
    assert "Calls 1 to 20 of 25:" in first and 'id="call-20"' in first and 'id="call-21"' not in first
    assert "Calls 21 to 25 of 25:" in second and 'id="call-21"' in second and 'id="call-20"' not in second
    # Call 21 stored no system prompt of its own; the page shows the one it sent (call 1's).
    sent = escape(logs[0].system_prompt)
    assert second.count(f"<pre>{sent}</pre>") == 5
    assert "as in the call before" in second


def test_archived_child_turns_leave_the_changelist_until_all_are_asked_for(
    client: Client, workspace: Workspace, ada: User, alice: User, writer: Agent
) -> None:
    boss = agent_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="boss",
        name="Boss",
        preset=writer.preset,
        snapshot={**PROFILE, "allowed_tool_names": ["delegate"], "runtime_policy": {"children": {"max_depth": 1}}},
    )
    parent = agent_turn_run(
        agent=boss, message='@call delegate {"agent": "writer", "message": "hi"}', actor=Actor.for_user(alice)
    )
    child = AgentTurn.objects.get(parent=parent)
    AgentTurn.objects.filter(pk=child.pk).update(finished_at=timezone.now() - timedelta(minutes=61))
    url = reverse("admin:agents_agentturn_changelist")

    listed = page(client, ada, url)
    everything = page(client, ada, f"{url}?listed=all")

    assert change_url(parent) in listed
    assert change_url(child) not in listed
    assert change_url(child) in everything


def listed_turns(client: Client, **query: str) -> set[int]:
    response = client.get(reverse("admin:agents_agentturn_changelist"), query)
    return {turn.pk for turn in response.context["cl"].result_list}


def test_the_turns_list_filters_by_origin_and_by_agent(
    client: Client, bob: User, alice: User, ada: User, writer: Agent, turn: AgentTurn, paid_echo: Preset
) -> None:
    as_alice = Actor.for_user(alice)
    tried = agent_run_test(agent=writer, message="essai", actor=as_alice)
    conversation_send(agent=writer, actor=as_alice, message="bonjour", channel="api")
    talked = AgentTurn.objects.exclude(pk__in=[turn.pk, tried.pk]).get()
    other = agent_create(
        workspace=writer.workspace, actor=Actor.for_user(ada), key="other", name="Other", preset=paid_echo
    )
    elsewhere = agent_turn_run(agent=other, message="ailleurs", actor=as_alice)
    client.force_login(bob)

    assert listed_turns(client, origin="direct") == {turn.pk, elsewhere.pk}
    assert listed_turns(client, origin="try_it") == {tried.pk}
    assert listed_turns(client, origin="conversation") == {talked.pk}
    assert listed_turns(client, origin="evidence") == listed_turns(client, origin="workflow") == set()
    assert listed_turns(client, agent__id__exact=str(other.pk)) == {elsewhere.pk}
    assert listed_turns(client, agent__id__exact=str(writer.pk), origin="direct") == {turn.pk}
    html = client.get(change_url(talked)).content.decode()
    message = ConversationMessage.objects.filter(turn_id=talked.pk).first()  # the question and its answer
    conversation = reverse("admin:agents_conversation_change", args=[message.conversation_id])
    assert f'<a href="{conversation}" id="aih-turn-conversation">conversation</a>' in html
    assert "Try it (dry runs)" in client.get(change_url(tried)).content.decode()
