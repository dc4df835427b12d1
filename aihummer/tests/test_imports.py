"""What a process pays to load: the vendor SDKs only where a model call needs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD = (
    "import os, sys, django; django.setup(); import aihummer.urls, agents.admin, workflows.admin; "
    "print(sorted(m for m in ('openai', 'anthropic', 'google.genai') if m in sys.modules))"
)


def test_loading_the_site_and_its_admin_imports_no_vendor_sdk() -> None:
    env = {**os.environ, "DATABASE_URL": "sqlite:///:memory:", "DJANGO_SETTINGS_MODULE": "aihummer.settings"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )

    assert done.stdout.strip() == "[]"
