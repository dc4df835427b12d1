"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm, pinned
in aihummer/tests/mcp_tools/ with the Node 22 it needs; bin/ensure-mcp-tools installs
them) against our server: every server scenario, on a live uvicorn serving the
test-only app (our server plus the suite's fixtures, aihummer/tests/mcp_conformance_app.py),
with the committed baseline of expected failures. A new failure fails this test, and so
does a baseline entry that passes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from aihummer.tests.mcp_helpers import live_uvicorn, node_tools, server_env

BASE = Path(settings.BASE_DIR)
BASELINE = BASE / "aihummer" / "tests" / "mcp_tools" / "conformance-baseline.yml"
SUITE_SECONDS = 300


def test_every_expected_failure_is_named_with_why() -> None:
    lines = BASELINE.read_text().splitlines()
    entries = [index for index, line in enumerate(lines) if re.match(r"^  - [a-z0-9-]+$", line)]
    assert entries, "the baseline names its expected failures"
    assert all(lines[index - 1].lstrip().startswith("#") for index in entries)


@pytest.mark.django_db(transaction=True)
def test_the_conformance_suite_passes_but_for_its_baseline(tmp_path: Path) -> None:
    env = node_tools()
    with live_uvicorn(server_env(), app="aihummer.tests.mcp_conformance_app:application") as url:
        command = ["conformance", "server", "--url", f"{url}/mcp", "--expected-failures", str(BASELINE)]
        run = subprocess.run(
            [*command, "-o", str(tmp_path)], env=env, capture_output=True, text=True, timeout=SUITE_SECONDS
        )

    summary = run.stdout[run.stdout.rfind("=== SUMMARY ===") :]
    assert run.returncode == 0, summary + run.stderr[-3000:]
    assert re.search(r"Total: [1-9][0-9]* passed, 4 failed", summary), summary
