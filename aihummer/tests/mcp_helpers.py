"""Driving the MCP server with the official client, and reading its answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult, Implementation

from aihummer.mcp import build_server

CLIENT_NAME = "pytest-client"
TIMEOUT_SECONDS = 60


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
