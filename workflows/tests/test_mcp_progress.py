"""`run_workflow` while it waits (issue 31), driven by the official MCP client on a
three-step run executed by a real Celery worker: progress notifications when the
client sent a progress token, and a cancelled call that stops waiting while the run
goes on (or is cancelled too, when the client asked for that)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from agents.models import Preset
from aihummer.actors import Actor
from aihummer.mcp import build_server
from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent, make_key
from aihummer.tests.mcp_helpers import http_client, live_uvicorn, ok, server_env, with_client
from aihummer.tests.waiting import wait_until
from workflows.models import Workflow, WorkflowRun
from workflows.services import workflow_create, workflow_run_wait

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = ("one", "two", "three")


@pytest.fixture
def chain(workspace: Workspace, slow_preset: Preset, operator: Actor) -> Workflow:
    """Three steps in a row, each a model call of about 500 ms."""
    for key in STEPS:
        make_agent(workspace, key, f"You are {key}.", preset=slow_preset)
    steps = [{"name": key, "agent_name": key} for key in STEPS]
    return workflow_create(
        workspace=workspace, actor=operator, key="chain", name="Chain", definition={"version": 1, "steps": steps}
    )


@pytest.fixture
def raw_key(workspace: Workspace, alice: User) -> str:
    return make_key(workspace, "progress-bot", "read,write", owner=alice)[1]


def test_run_workflow_reports_each_step_done_to_a_client_that_asked(
    worker_on_redis: Any, chain: Workflow, raw_key: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def work(client: Client) -> Any:
        return await client.call_tool("run_workflow", {"workflowKey": "chain"}, progress_callback=on_progress)

    body = ok(with_client(Client(build_server(api_key=raw_key)), work))

    assert (body["runStatus"], body["stepsExecuted"], body["stepsCount"]) == ("completed", 3, 3)
    assert [(done, total) for done, total, _ in seen] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert seen[1][2] == "1 of 3 steps done (running)"


def cancel_after_first_step(client: Client, arguments: dict[str, Any]) -> tuple[float, Any]:
    """Call run_workflow, cancel the call once a step is done; then, in the same session,
    another call. Returns how long the cancelled call took and that other answer."""

    async def work(client: Client) -> tuple[float, Any]:
        first_step = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if progress >= 1:
                first_step.set()

        started = anyio.current_time()
        async with anyio.create_task_group() as group:
            call = {"waitSeconds": 120, **arguments}
            group.start_soon(lambda: client.call_tool("run_workflow", call, progress_callback=on_progress))
            await first_step.wait()
            group.cancel_scope.cancel()
        return anyio.current_time() - started, await client.call_tool("list_workflows", {})

    return with_client(client, work)


def test_a_cancelled_call_stops_waiting_and_the_run_goes_on(
    worker_on_redis: Any, chain: Workflow, raw_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="aihummer.mcp"):
        elapsed, after = cancel_after_first_step(Client(build_server(api_key=raw_key)), {"workflowKey": "chain"})

    assert elapsed < 10  # not the 120 s asked for
    assert ok(after)["count"] == 1  # the session goes on serving
    wait_until(lambda: "MCP run_workflow: the client cancelled the call or went away; stopped waiting" in caplog.text)
    run = workflow_run_wait(run=WorkflowRun.objects.get(), timeout=30)
    assert run.status == "completed"


def test_a_cancelled_call_cancels_the_run_when_the_client_asked(
    worker_on_redis: Any, chain: Workflow, raw_key: str
) -> None:
    cancel_after_first_step(
        Client(build_server(api_key=raw_key)), {"workflowKey": "chain", "cancelRunIfAbandoned": True}
    )

    run = WorkflowRun.objects.get()
    wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "cancelled")
    run = workflow_run_wait(run=run, timeout=30)
    assert run.error == "Cancelled by mcp:progress-bot/mcp."


@pytest.fixture(scope="module")
def server_url(django_db_setup: None, django_db_blocker: Any, redis_url: str) -> Iterator[str]:
    """One uvicorn for both HTTP modes, sending tasks to this xdist worker's Redis."""
    with django_db_blocker.unblock():
        env = server_env(CELERY_BROKER_URL=redis_url)
    with live_uvicorn(env) as url:
        yield url


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_over_http_a_client_that_goes_away_stops_the_wait(
    server_url: str, worker_on_redis: Any, chain: Workflow, raw_key: str, mode: str
) -> None:
    """Over HTTP the server learns of the cancellation from the client's
    notifications/cancelled (legacy) or from its closing the request's stream (2026);
    asked to, it cancels the run: proof that it stopped waiting."""
    elapsed, after = cancel_after_first_step(
        http_client(server_url, raw_key, mode=mode), {"workflowKey": "chain", "cancelRunIfAbandoned": True}
    )
    assert elapsed < 10 and ok(after)["count"] == 1
    run = WorkflowRun.objects.get()
    wait_until(lambda: WorkflowRun.objects.get(pk=run.pk).status == "cancelled")
