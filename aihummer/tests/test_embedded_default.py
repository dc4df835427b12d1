"""The README's first command on its embedded default: SQLite, tasks in-process, the echo
provider, demo data. The suite itself runs on PostgreSQL, so this drives the commands
`make run` uses in a child process on a fresh SQLite file."""

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings


def manage(database: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIHUMMER_", "CELERY_", "DJANGO_"))}
    env |= {"DATABASE_URL": f"sqlite:///{database}", "CELERY_BROKER_URL": ""}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_demo_workflow_runs_to_completion_on_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    for command in (("migrate", "--noinput"), ("seed_demo",)):
        done = manage(database, *command)
        assert done.returncode == 0, done.stderr

    done = manage(database, "run_workflow", "demo", "lecture-critique", "--message", "Un texte à lire", "--json")

    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "completed", run
    assert [(step["name"], step["status"], step["attempts"]) for step in run["steps"]] == [
        ("lecture", "completed", 1),
        ("critique", "completed", 1),
    ]
    assert "Un texte à lire" in run["answer"]
