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


# What `django.setup()` alone must not load: every process pays for it (workers, beat,
# commands, the MCP server, web processes, each test worker), and these serve only
# single sign-on (requests, PyJWT, the OIDC library), the vault (cryptography), a turn
# being run or resumed (the agent runtime, with its provider adapters and metrics), or a
# policy, snapshot or judgement being validated (pydantic).
NOT_AT_SETUP = (
    "requests",
    "urllib3",
    "charset_normalizer",
    "jwt",
    "mozilla_django_oidc",
    "cryptography",
    "agents.runtime",
    "prometheus_client",
    "pydantic",
)
SETUP = f"import sys, django; django.setup(); print(sorted(m for m in {NOT_AT_SETUP!r} if m in sys.modules))"


def test_setting_django_up_loads_no_package_that_only_a_few_processes_use() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "aihummer.settings"}
    done = subprocess.run(
        [sys.executable, "-c", SETUP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )

    assert done.stdout.strip() == "[]"


def test_the_system_checks_load_neither_pyjwt_nor_cryptography() -> None:
    # A Celery worker runs them at start, as `manage.py check` does: they load the
    # URLconf, the API's authentication and the middleware, and none needs a token yet.
    checks = (
        "import sys, django; django.setup(); from django.core.checks import run_checks; run_checks(); "
        "print(sorted(m for m in ('jwt', 'cryptography') if m in sys.modules))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "aihummer.settings"}
    done = subprocess.run(
        [sys.executable, "-c", checks], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )

    assert done.stdout.strip() == "[]"


# A check registered in the process, then Celery's own start-up of a worker for our app.
WORKER_START = (
    "import django; django.setup(); from django.core import checks\n"
    "@checks.register()\n"
    "def seen(**kwargs):\n"
    "    print('checked'); return []\n"
    "from celery.fixups.django import DjangoWorkerFixup; from aihummer.celery import app\n"
    "DjangoWorkerFixup(app).validate_models(); print('started')"
)


def test_a_worker_starts_without_running_the_system_checks_the_release_ran() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "aihummer.settings"}
    env.pop("CELERY_SKIP_CHECKS", None)
    done = subprocess.run(
        [sys.executable, "-c", WORKER_START], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )

    assert done.stdout.split() == ["started"]
