"""Fixtures the sandbox's tests share: the real rows an automated client must never
touch, and the key it calls with."""

from __future__ import annotations

import pytest

from aihummer.models import User, Workspace
from aihummer.tests.factories import make_agent, make_echo_preset, make_key


@pytest.fixture
def real(workspace: Workspace, ada: User) -> dict:
    """The workspace's real default preset and a real agent, `writer`."""
    return {"preset": make_echo_preset(workspace, by=ada), "agent": make_agent(workspace, "writer", "W", by=ada)}


@pytest.fixture
def write_key(workspace: Workspace) -> str:
    """The raw value of an API key (read, write) of the workspace: a program, with the sandbox right."""
    return make_key(workspace, "bot", "read,write")[1]
