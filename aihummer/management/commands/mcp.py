from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from aihummer.mcp import build_server
from aihummer.services import api_key_authenticate

API_KEY_VARIABLE = "AIHUMMER_API_KEY"


class Command(BaseCommand):
    help = f"Serve the MCP server over stdio (for MCP clients that launch it), as the API key in ${API_KEY_VARIABLE}."

    def handle(self, *args: object, **options: object) -> None:
        raw_key = os.environ.get(API_KEY_VARIABLE, "").strip()
        if not raw_key:
            raise CommandError(f"Set {API_KEY_VARIABLE} to an API key (manage.py create_api_key prints one).")
        # Refused before serving, so a client sees a failed start, not a server that
        # errs on every call. Each call checks the key again (revocation is immediate).
        if api_key_authenticate(raw_key) is None:
            raise CommandError(f"{API_KEY_VARIABLE} is not a live API key: it is unknown, malformed or revoked.")
        connection.close()  # tools use their own threads' connections; this one would idle all session
        build_server(api_key=raw_key).run("stdio")
