"""Fixtures shared by the agents tests (the personas live in the root conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from agents.models import Preset
from agents.services import preset_create
from aihummer.actors import Actor
from aihummer.models import User, Workspace

PRICED_ECHO = {
    "name": "echo-paid",
    "label": "Echo, priced",
    "context_window": 200_000,
    "max_output_tokens": 8_000,
    "streaming": False,
    "tools": True,
    "vision": False,
    "input_per_mtok": "3.00",
    "output_per_mtok": "15.00",
    "cached_input_per_mtok": "0.30",
}


@pytest.fixture
def echo_preset(workspace: Workspace, ada: User) -> Preset:
    """The workspace's default preset: the offline echo provider."""
    return preset_create(
        workspace=workspace,
        actor=Actor.for_user(ada),
        key="echo",
        name="Echo",
        provider_name="echo",
        model="echo-1",
        is_active=True,
    )


@pytest.fixture
def paid_echo(settings: Settings, tmp_path: Path, workspace: Workspace, ada: User) -> Preset:
    """An echo model with list prices (a catalog extension), so costs are not all zero."""
    extra = tmp_path / "catalog-extra.json"
    extra.write_text(json.dumps({"schema": 1, "providers": {"echo": {"models": [PRICED_ECHO]}}}))
    settings.AIHUMMER_MODEL_CATALOG_EXTRA = str(extra)
    return preset_create(
        workspace=workspace, actor=Actor.for_user(ada), key="paid", name="Paid", provider_name="echo", model="echo-paid"
    )
