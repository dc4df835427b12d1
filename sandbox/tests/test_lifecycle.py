"""The seed's whole sandbox lifecycle, as an MCP client that knows only the seed runs
it: over stdio (`manage.py mcp`) and over streamable HTTP (a live uvicorn), the
workflow's steps on a real Celery worker, and no trace of it before a person."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client as DjangoClient
from django.urls import reverse
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from agents.models import Agent, DebugLog, Preset
from aihummer.actors import Actor
from aihummer.models import User
from aihummer.services import api_key_create
from aihummer.tests.factories import PIPELINE
from aihummer.tests.mcp_helpers import (
    call_tools,
    error,
    http_client,
    in_thread,
    live_uvicorn,
    ok,
    server_env,
    with_client,
)
from workflows.models import Workflow, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)

# The seed's pipeline, on the sandbox copies of its agents (sb_lecteur, sb_critique).
DEFINITION = {**PIPELINE, "steps": [{**step, "agent_name": f"sb_{step['agent_name']}"} for step in PIPELINE["steps"]]}
ADMIN_LISTS = [
    "admin:agents_agent_changelist",
    "admin:agents_preset_changelist",
    "admin:workflows_workflow_changelist",
    "admin:workflows_workflowrun_changelist",
]


def visible_counts() -> dict[str, int]:
    return {
        "agents": Agent.objects.count(),
        "presets": Preset.objects.count(),
        "workflows": Workflow.objects.count(),
        "runs": WorkflowRun.objects.count(),
    }


def nothing_shows(root: User) -> None:
    """What a superuser sees: no list, count or change page shows a sandbox row."""
    browser = DjangoClient()
    browser.force_login(root)
    for name in ADMIN_LISTS:
        page = browser.get(reverse(name))
        assert page.status_code == 200, name
        assert b"sb_" not in page.content and b"Sandbox Flash" not in page.content, name

    def answer(url: str) -> tuple[int, str]:
        page = browser.get(url)
        return page.status_code, page.headers.get("Location", "")

    # A hidden row's change and history pages answer exactly like a missing row's.
    # (The run admin's history page fails for every run, real ones too: reported, not ours.)
    for model, name, missing, views in (
        (Agent, "agents_agent", 999_999, ("change", "history")),
        (Preset, "agents_preset", 999_999, ("change", "history")),
        (Workflow, "workflows_workflow", 999_999, ("change", "history")),
        (WorkflowRun, "workflows_workflowrun", "00000000-0000-0000-0000-000000000000", ("change",)),
    ):
        rows = model.all_objects.filter(is_sandbox=True)
        assert rows.exists(), name
        for row in rows:
            for view in views:
                hidden = answer(reverse(f"admin:{name}_{view}", args=[row.pk]))
                assert hidden == answer(reverse(f"admin:{name}_{view}", args=[missing])), (name, view)
                assert hidden[0] in (302, 404)
    assert visible_counts() == {"agents": 1, "presets": 1, "workflows": 0, "runs": 0}


def lifecycle(client: Client, root: User) -> dict:
    async def call(tool: str, **arguments: object) -> dict:
        return ok(await client.call_tool(tool, arguments))

    async def work(_: Client) -> dict:
        seen = {"presets": await call("list_presets")}
        seen["preset"] = await call(
            "create_sandbox_preset", key="sb_flash", name="Sandbox Flash", providerName="echo", model="echo-1"
        )
        for key, prompt in (("sb_lecteur", "Tu lis et résumes."), ("sb_critique", "Tu évalues un résumé.")):
            await call("create_sandbox_agent", key=key, name=key, systemPrompt=prompt, presetKey="sb_flash")
        seen["workflow"] = await call(
            "create_sandbox_workflow", workflowKey="sb_pipeline", name="Pipeline", definition=json.dumps(DEFINITION)
        )
        seen["run"] = await call("run_workflow", workflowKey="sb_pipeline", message="Article : Lorem", waitSeconds=60)
        seen["inspect"] = await call("inspect_workflow_run", workflowRunId=seen["run"]["workflowRunId"])
        seen["listed"] = await call("list_workflows", includeSandbox=True)
        await in_thread(lambda: nothing_shows(root))
        seen["cleanup"] = await call("cleanup_sandbox")
        seen["again"] = await call("cleanup_sandbox")
        debug_id = seen["inspect"]["steps"][1]["debugIds"][0]
        seen["debug"] = await call("inspect_agent_debug", debugId=debug_id)
        return seen

    return with_client(client, work)


def check(seen: dict) -> None:
    assert [p["key"] for p in seen["presets"]["presets"]] == ["echo"]
    assert (seen["preset"]["presetKey"], seen["preset"]["isActive"]) == ("sb_flash", False)
    assert (seen["workflow"]["stepsCount"], seen["workflow"]["agents"]) == (2, ["sb_lecteur", "sb_critique"])
    run, story = seen["run"], seen["inspect"]
    assert (run["runStatus"], run["stepsExecuted"]) == ("completed", 2), run
    assert run["answer"] == run["outputs"]["final"] != ""
    first, second = story["steps"]
    assert (story["runStatus"], story["stepsCount"], story["currentStepIndex"]) == ("completed", 2, 2)
    assert (first["name"], first["agent"], first["agentVersion"], first["input"]) == (
        "lecture",
        "sb_lecteur",
        1,
        "Article : Lorem",
    )
    assert second["input"] == first["output"]["answer"] != ""
    assert second["output"]["answer"] == run["answer"]
    assert story["totalTokens"] == run["usage"]["total_tokens"] > 0
    assert [w["workflowKey"] for w in seen["listed"]["workflows"]] == ["sb_pipeline"]
    counts = {k: v for k, v in seen["cleanup"].items() if k.endswith("Deleted")}
    assert counts == {"workflowRunsDeleted": 1, "workflowsDeleted": 1, "agentsDeleted": 2, "presetsDeleted": 1}
    assert {k: v for k, v in seen["again"].items() if k.endswith("Deleted")} == dict.fromkeys(counts, 0)
    assert (seen["debug"]["agentKey"], seen["debug"]["debugId"]) == ("sb_critique", second["debugIds"][0])
    assert not Agent.all_objects.filter(is_sandbox=True).exists()
    assert not WorkflowRun.all_objects.exists()
    assert DebugLog.all_objects.filter(agent_key__startswith="sb_").count() == 2


def test_the_seed_lifecycle_over_stdio(real, write_key, root, worker_on_redis, redis_url) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=str(settings.BASE_DIR),
        env=server_env(AIHUMMER_API_KEY=write_key, CELERY_BROKER_URL=redis_url),
    )
    check(lifecycle(Client(params, client_info=Implementation(name="seed-bot", version="1")), root))


@pytest.fixture
def uvicorn_on_broker(redis_url: str) -> Iterator[str]:
    """A live uvicorn whose runs go to the Redis broker of `worker_on_redis`."""
    with live_uvicorn(server_env(CELERY_BROKER_URL=redis_url)) as url:
        yield url


def test_the_seed_lifecycle_over_http(real, write_key, root, worker_on_redis, uvicorn_on_broker) -> None:
    check(lifecycle(http_client(uvicorn_on_broker, write_key, name="seed-bot"), root))


def test_another_workspace_s_key_neither_sees_nor_deletes(real, write_key, other_workspace, charlie) -> None:
    built = call_tools(
        write_key,
        ("create_sandbox_agent", {"key": "sb_mine", "name": "Mine", "systemPrompt": "P"}),
        (
            "create_sandbox_workflow",
            {
                "workflowKey": "sb_flow",
                "name": "F",
                "definition": json.dumps(
                    {"version": 1, "steps": [{"name": "a", "agent_name": "sb_mine", "input_mapping": {}}]}
                ),
            },
        ),
        ("run_workflow", {"workflowKey": "sb_flow", "message": "hi"}),
    )
    run_id = ok(built[2])["workflowRunId"]
    theirs = api_key_create(workspace=other_workspace, name="them", scopes="read,write", actor=Actor.for_operator())[1]

    listed, inspected, ran, cleaned = call_tools(
        theirs,
        ("list_workflows", {"includeSandbox": True}),
        ("inspect_workflow_run", {"workflowRunId": run_id}),
        ("run_workflow", {"workflowKey": "sb_flow"}),
        ("cleanup_sandbox", {}),
    )

    assert ok(listed)["workflows"] == []
    assert error(inspected)["error"] == f"No workflow run '{run_id}'."
    assert error(ran)["error"] == "No workflow 'sb_flow' in workspace 'globex'."
    assert {k: v for k, v in ok(cleaned).items() if k.endswith("Deleted")} == {
        "workflowRunsDeleted": 0,
        "workflowsDeleted": 0,
        "agentsDeleted": 0,
        "presetsDeleted": 0,
    }
    assert Workflow.all_objects.filter(key="sb_flow").exists()
    assert WorkflowRun.all_objects.filter(pk=run_id).exists()
