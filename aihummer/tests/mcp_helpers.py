"""Driving the MCP server with the official client, and reading its answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
from django.conf import settings
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation

from aihummer.mcp import build_server
from aihummer.tests.ports import free_port

CLIENT_NAME = "pytest-client"
TIMEOUT_SECONDS = 60
SERVER_START_SECONDS = 90  # a bound for a loaded machine (Django starts in about 3 s idle)


def with_client(client: Client, work: Callable[[Client], Awaitable[Any]]) -> Any:
    """Open `client`, run `work` with it, close it; bounded in time."""

    async def main() -> Any:
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with client:
                return await work(client)

    return anyio.run(main)


def call_tools(raw_key: str, *calls: tuple[str, dict]) -> list[CallToolResult]:
    """Each `(tool, arguments)` in turn, in one session of the in-process server."""

    async def work(client: Client) -> list[CallToolResult]:
        return [await client.call_tool(name, arguments) for name, arguments in calls]

    client = Client(build_server(api_key=raw_key), client_info=Implementation(name=CLIENT_NAME, version="1"))
    return with_client(client, work)


def call_tool(raw_key: str, tool: str, /, **arguments: Any) -> CallToolResult:
    return call_tools(raw_key, (tool, arguments))[0]


def _body(result: CallToolResult) -> dict:
    # The same JSON object as structured content and as text.
    assert len(result.content) == 1
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def ok(result: CallToolResult) -> dict:
    body = _body(result)
    assert not result.is_error, body
    assert body["status"] == "success"
    assert datetime.fromisoformat(body["timestamp"]).tzinfo is not None
    return body


def error(result: CallToolResult) -> dict:
    body = _body(result)
    assert result.is_error, body
    assert body["status"] == "error"
    assert "timestamp" not in body
    return body


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a server process: this one's, on the test database, tasks inline."""
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": "", **extra}


async def in_thread(function: Callable[[], Any]) -> Any:
    """Database work from inside a client session, on a connection of its own."""

    def run() -> Any:
        try:
            return function()
        finally:
            connection.close()

    return await anyio.to_thread.run_sync(run)


def http_client(base_url: str, raw_key: str, *, name: str = "http-test", mode: str = "auto") -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_key}"}, timeout=30)
    transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
    return Client(transport, client_info=Implementation(name=name, version="1"), mode=mode)


@contextmanager
def live_uvicorn(
    env: dict[str, str],
    *,
    port: int | None = None,
    app: str = "aihummer.asgi:application",
    log_to: Path | None = None,
) -> Iterator[str]:
    """`uvicorn <app>` on `port` (default: a free one) with `env` (see `server_env`);
    its base URL while the block runs. `log_to`: a file that keeps what the server
    printed, for a test to read (by default a temporary file, removed after)."""
    port = port or free_port()
    log_path = log_to or Path(tempfile.gettempdir()) / f"uvicorn-{port}-{os.getpid()}.log"
    log = log_path.open("w+")  # closed below
    command = [sys.executable, "-m", "uvicorn", app, "--port", str(port)]
    command += ["--timeout-graceful-shutdown", "2"]  # open SSE streams would hold the shutdown
    process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"uvicorn did not start:\n{log_path.read_text()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
        if log_to is None:
            log_path.unlink()


def node_tools() -> dict[str, str]:
    """The environment that runs the pinned MCP tools (aihummer/tests/mcp_tools/: the
    conformance suite, the inspector) on Node 22, first on PATH; installed first if missing."""
    base = Path(settings.BASE_DIR)
    subprocess.run([str(base / "bin" / "ensure-mcp-tools")], check=True, capture_output=True, timeout=600)
    tools = base / "var" / "mcp-tools" / "node_modules" / ".bin"
    return {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
