"""A test-only ASGI app for the official MCP conformance suite
(`@modelcontextprotocol/conformance`, see test_mcp_conformance.py): our MCP server,
with every tool of ours, plus the fixture tools, resources and prompts the suite's
server scenarios call (`test_simple_text`, `test://static-text`, ...), served at /mcp
behind our Host/Origin guard but without credentials (the suite sends none).

`uvicorn aihummer.tests.mcp_conformance_app:application`. Never mounted in the product.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import anyio
from django.core.asgi import get_asgi_application
from starlette.types import ASGIApp

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")
get_asgi_application()  # loads the apps

from mcp.server.mcpserver import Context  # noqa: E402  (after the apps)
from mcp.server.mcpserver.prompts.base import Message, UserMessage  # noqa: E402
from mcp.types import (  # noqa: E402
    AudioContent,
    Completion,
    EmbeddedResource,
    ImageContent,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

from aihummer.mcp import MCP_PATH, AiHummerMCP, HostGuard, build_server, transport_security  # noqa: E402

# A 1x1 red PNG and a short silent WAV: the suite checks type, data and MIME type.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=")
FIXTURE_TOOLS: set[str] = set()


def png() -> str:
    return base64.b64encode(PNG).decode()


def add_fixtures(server: AiHummerMCP) -> None:
    """The reference server's fixtures, as the suite's scenario descriptions give them."""

    def fixture(name: str, description: str) -> Any:
        FIXTURE_TOOLS.add(name)
        return server.tool(name=name, description=description, structured_output=False)

    @fixture("test_simple_text", "Returns simple text.")
    def simple_text() -> list:
        return [TextContent(type="text", text="This is a simple text response for testing.")]

    @fixture("test_image_content", "Returns an image.")
    def image_content() -> list:
        return [ImageContent(type="image", data=png(), mime_type="image/png")]

    @fixture("test_audio_content", "Returns audio.")
    def audio_content() -> list:
        return [AudioContent(type="audio", data=base64.b64encode(WAV).decode(), mime_type="audio/wav")]

    @fixture("test_embedded_resource", "Returns an embedded resource.")
    def embedded_resource() -> list:
        text = TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return [EmbeddedResource(type="resource", resource=text)]

    @fixture("test_multiple_content_types", "Returns text, an image and a resource.")
    def multiple_content_types() -> list:
        resource = TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return [
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=png(), mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]

    @fixture("test_tool_with_logging", "Logs three messages while it runs.")
    async def tool_with_logging(ctx: Context) -> str:
        await ctx.info("Tool execution started")
        await anyio.sleep(0.05)
        await ctx.info("Tool processing data")
        await anyio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Logging completed."

    @fixture("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.")
    async def tool_with_progress(ctx: Context) -> str:
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100)
            if done < 100:
                await anyio.sleep(0.05)
        return "Progress completed."

    @fixture("test_error_handling", "Always fails.")
    def error_handling() -> str:
        raise ValueError("This tool intentionally returns an error for testing")

    @fixture("test_sampling", "Asks the client's model.")
    async def sampling(prompt: str, ctx: Context) -> str:
        message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
        result = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
        content = result.content
        return f"LLM response: {getattr(content, 'text', content)}"

    @fixture("test_elicitation", "Asks the user.")
    async def elicitation(message: str, ctx: Context) -> str:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return f"User response: action={result.action}, content={json.dumps(result.content)}"

    async def elicited(ctx: Context, schema: dict) -> str:
        result = await ctx.session.elicit_form("Please review.", schema, related_request_id=ctx.request_id)
        return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"

    @fixture("test_elicitation_sep1034_defaults", "Asks the user, with defaults (SEP-1034).")
    async def elicitation_defaults(ctx: Context) -> str:
        properties = {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        }
        return await elicited(ctx, {"type": "object", "properties": properties})

    @fixture("test_elicitation_sep1330_enums", "Asks the user, with every enum form (SEP-1330).")
    async def elicitation_enums(ctx: Context) -> str:
        options = [{"const": f"value{n}", "title": title} for n, title in ((1, "First Option"), (2, "Second Option"))]
        choices = [{"const": f"value{n}", "title": title} for n, title in ((1, "First Choice"), (2, "Second Choice"))]
        properties = {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": options},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": choices}},
        }
        return await elicited(ctx, {"type": "object", "properties": properties})

    @server.resource("test://static-text", name="static-text", description="A static text.", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", description="A PNG.", mime_type="image/png")
    def static_binary() -> bytes:
        return PNG

    @server.resource(
        "test://template/{id}/data", name="template", description="Data for an id.", mime_type="application/json"
    )
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.prompt(name="test_simple_prompt", description="A simple prompt.")
    def simple_prompt() -> list[Message]:
        return [UserMessage("This is a simple prompt for testing.")]

    @server.prompt(name="test_prompt_with_arguments", description="A prompt with two arguments.")
    def prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(name="test_prompt_with_embedded_resource", description="A prompt embedding a resource.")
    def prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
        text = TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(EmbeddedResource(type="resource", resource=text)),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt(name="test_prompt_with_image", description="A prompt with an image.")
    def prompt_with_image() -> list[Message]:
        return [
            UserMessage(ImageContent(type="image", data=png(), mime_type="image/png")),
            UserMessage("Please analyze the image above."),
        ]

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion:
        return Completion(values=[], total=0, has_more=False)


class ConformanceServer(AiHummerMCP):
    """Ours, with the fixture tools answered by the SDK as the reference server does."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        if name in FIXTURE_TOOLS:
            return await super(AiHummerMCP, self).call_tool(name, arguments, context)
        return await super().call_tool(name, arguments, context)


def conformance_app() -> ASGIApp:
    server = build_server(server_class=ConformanceServer)
    add_fixtures(server)
    return HostGuard(server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=transport_security()))


application = conformance_app()
