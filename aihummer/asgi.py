"""ASGI entry: `uvicorn aihummer.asgi:application` serves the admin, the API and, at
`/mcp`, the MCP server over streamable HTTP.

Lifespan events go to the MCP app (its session manager lives for the process; Django
has no lifespan), `/mcp` too, and every other request to Django.
"""

import os

from django.core.asgi import get_asgi_application
from starlette.types import Receive, Scope, Send

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")

django_application = get_asgi_application()

import aihummer  # noqa: E402

aihummer.loading()  # the MCP SDK's hundreds of models too (aihummer/__init__.py says why)
from aihummer.mcp import MCP_PATH, http_app  # noqa: E402  (needs the apps loaded above)

mcp_application = http_app()
aihummer.loaded()


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    path = scope.get("path", "")
    if scope["type"] == "lifespan" or path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        await mcp_application(scope, receive, send)
    else:
        await django_application(scope, receive, send)
