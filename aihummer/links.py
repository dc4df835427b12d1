"""Links handed to programs (a review page in an MCP or REST answer) for a person to
open: absolute under `AIHUMMER_PUBLIC_URL` when it is set, else under the address the
caller reached us at (`base`, e.g. an MCP request's), else a path."""

from __future__ import annotations

from django.conf import settings


def public_link(path: str, *, base: str = "") -> str:
    """`path` (`/admin/…`) as a person can open it."""
    return f"{(settings.AIHUMMER_PUBLIC_URL or base).rstrip('/')}{path}"
