"""`run_agent_test` while its turn runs (issue 31), driven by the official MCP client:
progress notifications to a client that sent a progress token, and a cancelled call
that stops waiting while the turn, on a thread of its own, goes on to its end. The
model is a local OpenAI-protocol server that answers only when the test lets it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agents.models import AgentTurn, Conversation, Preset
from agents.services import preset_update
from aihummer.actors import Actor
from aihummer.mcp import build_server
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent, make_key, openai_preset
from aihummer.tests.mcp_helpers import http_client, in_thread, live_uvicorn, ok, server_env, with_client
from aihummer.tests.waiting import wait_until
from workflows.tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

STOPPED_WAITING = "MCP run_agent_test: the client cancelled the call or went away; stopped waiting"


@pytest.fixture
def answer_now() -> threading.Event:
    return threading.Event()


@pytest.fixture
def held_model(workspace: Workspace, ada: User, answer_now: threading.Event) -> Iterator[Preset]:
    """A model that answers once `answer_now` is set (a test's bound: 60 s)."""

    def reply(body: dict) -> str:
        answer_now.wait(60)
        return "Voilà."

    with FakeOpenAI(reply=reply) as server:
        preset = openai_preset(workspace, server, by=ada)
        make_agent(workspace, "writer", "Écris.", by=ada, preset=preset)
        yield preset


@pytest.fixture
def raw_key(workspace: Workspace, alice: User) -> str:
    return make_key(workspace, "progress-bot", "read,write", owner=alice)[1]


def test_run_agent_test_reports_its_turn_to_a_client_that_asked(
    held_model: Preset, answer_now: threading.Event, raw_key: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        answer_now.set()  # the model answers once the client heard the turn started

    async def work(client: Client) -> Any:
        arguments = {"agentKey": "writer", "input": "Bonjour"}
        return await client.call_tool("run_agent_test", arguments, progress_callback=on_progress)

    body = ok(with_client(Client(build_server(api_key=raw_key)), work))

    assert body["answer"] == "Voilà."
    assert seen == [(0, 1, "Running one turn of writer"), (1, 1, "Turn succeeded")]


async def cancel_once_started(client: Client) -> tuple[int, Any]:
    """Call run_agent_test on `writer` and cancel the call once its turn started, then call
    list_agents: how many turns were recorded by then, and that second answer."""
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with anyio.create_task_group() as group:
        arguments = {"agentKey": "writer", "input": "Bonjour"}
        group.start_soon(lambda: client.call_tool("run_agent_test", arguments, progress_callback=on_progress))
        await started.wait()
        group.cancel_scope.cancel()
    # The model has not answered yet (a turn without tool calls is written when it
    # ends): the session serves another call meanwhile.
    after = await client.call_tool("list_agents", {})
    return await in_thread(AgentTurn.objects.count), after


def test_a_cancelled_call_stops_waiting_and_the_turn_goes_on(
    held_model: Preset, answer_now: threading.Event, raw_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="aihummer.mcp"):
        turns_while_cancelled, after = with_client(Client(build_server(api_key=raw_key)), cancel_once_started)

    assert turns_while_cancelled == 0
    assert ok(after)["count"] == 1
    assert STOPPED_WAITING in caplog.text
    answer_now.set()
    wait_until(lambda: AgentTurn.objects.filter(status="succeeded").exists())
    assert AgentTurn.objects.get().answer == "Voilà."


# --- send_message (issue 28): the answer so far, and a vouched peer ------------------------
ANSWER = "Bonjour, je suis votre rédactrice du jour."


@pytest.fixture
def streaming_writer(workspace: Workspace, ada: User) -> Iterator[FakeOpenAI]:
    """`writer` on a streaming preset whose answer comes 4 characters every 50 ms."""
    with FakeOpenAI(reply=lambda body: ANSWER, chunk_chars=4, chunk_delay=0.05) as server:
        preset = openai_preset(workspace, server, by=ada)
        preset_update(preset=preset, actor=Actor.for_user(ada), streaming_enabled=True)
        make_agent(workspace, "writer", "Écris.", by=ada, preset=preset)
        yield server


def test_send_message_streams_the_answer_so_far_for_a_vouched_peer(
    streaming_writer: FakeOpenAI, workspace: Workspace, alice: User
) -> None:
    key, raw = make_key(workspace, "desk", "read,write,vouch", owner=alice)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def work(client: Client) -> Any:
        arguments = {"agentKey": "writer", "message": "Bonjour", "peer": "client-42"}
        return await client.call_tool("send_message", arguments, progress_callback=on_progress)

    body = ok(with_client(Client(build_server(api_key=raw)), work))

    assert body["answer"] == ANSWER
    # Growing prefixes of the answer, each as long as its progress, the last the whole answer.
    assert len(seen) >= 2
    assert all(total is None and ANSWER.startswith(text) and progress == len(text) for progress, total, text in seen)
    assert [progress for progress, _, _ in seen] == sorted({progress for progress, _, _ in seen})
    assert seen[-1][2] == ANSWER
    assert Conversation.objects.get(pk=body["conversationId"]).peer == f"api_key:{key.pk}/client-42"


def test_send_message_refuses_a_peer_from_a_key_that_may_not_vouch(streaming_writer: FakeOpenAI, raw_key: str) -> None:
    async def work(client: Client) -> Any:
        return await client.call_tool("send_message", {"agentKey": "writer", "message": "Bonjour", "peer": "bob"})

    result = with_client(Client(build_server(api_key=raw_key)), work)

    assert result.is_error
    assert "vouch" in result.content[0].text
    assert not Conversation.objects.exists()
    assert streaming_writer.bodies == []


@pytest.fixture(scope="module")
def server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """One uvicorn for both HTTP modes: (its URL, the file it logs to)."""
    server_log = tmp_path_factory.mktemp("uvicorn") / "uvicorn.log"
    with django_db_blocker.unblock():
        env = server_env()
    with live_uvicorn(env, log_to=server_log) as url:
        yield url, server_log


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_over_http_a_cancelled_call_stops_waiting_and_the_turn_goes_on(
    server: tuple[str, Path], held_model: Preset, answer_now: threading.Event, raw_key: str, mode: str
) -> None:
    """Over HTTP (notifications/cancelled in legacy mode, the request stream closed in
    2026 mode): the server's tool stops waiting (its log says so before the model
    answers), the session goes on serving while the model still holds the turn, and the
    server still records the turn once the model answers."""
    url, server_log = server
    logged_before = len(server_log.read_text())  # the server's log of this test only: what comes after
    turns_while_cancelled, after = with_client(http_client(url, raw_key, mode=mode), cancel_once_started)
    assert (turns_while_cancelled, ok(after)["count"]) == (0, 1)
    wait_until(lambda: STOPPED_WAITING in server_log.read_text()[logged_before:])
    answer_now.set()
    wait_until(lambda: AgentTurn.objects.filter(status="succeeded").exists())
