"""Milliseconds per MCP tool call: the tool's own work (called directly), through the
official client in-process, and over streamable HTTP against a live uvicorn.

Workload: a workspace of 20 agents on the echo provider; list_agents, get_agent and
run_agent_test, each called CALLS times in one session.

`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/mcp_tools.py`

Every call opens and closes its worker thread's connection (as a Django request does):
without a pool (the development default) that is a new PostgreSQL connection per call
and dominates small tools; set `DATABASE_POOL_MAX_SIZE=10` (the production default) to
measure what production pays.
"""

from __future__ import annotations

import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _django import bench_workspace, throwaway_database

from aihummer.tests.ports import free_port

CALLS = 40
AGENTS = 20
CASES = [
    ("list_agents", {}),
    ("get_agent", {"agentId": "agent-00"}),
    ("run_agent_test", {"agentKey": "agent-00", "input": "Bonjour"}),
]


def row(surface: str, tool: str, timings: list[float], direct: float | None) -> None:
    timings.sort()
    median = statistics.median(timings)
    ratio = f"{median / direct:>6.1f}x" if direct else f"{'—':>7}"
    print(f"{surface:<12} {tool:<16} {median:>9.2f} {timings[int(len(timings) * 0.9)]:>8.2f} {ratio}")


def main() -> None:
    import anyio
    import httpx2
    from django.db import connection
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from agents.mcp import TOOLS
    from agents.services import agent_create
    from aihummer.actors import Actor
    from aihummer.mcp import Caller, build_server
    from aihummer.services import api_key_create

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise
    logging.getLogger("mcp").setLevel(logging.WARNING)
    workspace, operator = bench_workspace()
    for index in range(AGENTS):
        agent_create(workspace=workspace, actor=operator, key=f"agent-{index:02}", name=f"Agent {index}")
    api_key, raw_key = api_key_create(workspace=workspace, name="bench", scopes="read,write", actor=operator)
    caller = Caller(actor=Actor.for_api_key(api_key, surface="mcp", client_name="bench"), workspace=workspace)
    specs = {spec.name: spec for spec in TOOLS}

    print(f"{'surface':<12} {'tool':<16} {'median ms':>9} {'p90 ms':>8} {'vs direct':>7}")
    direct: dict[str, float] = {}
    for tool, arguments in CASES:
        timings = []
        for _ in range(CALLS):
            started = time.perf_counter()
            specs[tool].fn(caller, **arguments)
            timings.append((time.perf_counter() - started) * 1000)
        direct[tool] = statistics.median(timings)
        row("direct", tool, timings, None)

    async def session(client: Client, surface: str) -> None:
        async with client:
            for tool, arguments in CASES:
                timings = []
                for _ in range(CALLS):
                    started = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    timings.append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result.content
                row(surface, tool, timings, direct[tool])

    anyio.run(session, Client(build_server(api_key=raw_key)), "in-process")

    port = free_port()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": "",
        "LOG_LEVEL": "WARNING",
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "aihummer.asgi:application",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command, cwd=Path(__file__).resolve().parent.parent, env=env)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_key}"}, timeout=30)
        client = Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http))
        anyio.run(session, client, "HTTP")
    finally:
        server.terminate()
        server.wait(timeout=10)
        connection.close()


if __name__ == "__main__":
    with throwaway_database():
        main()
