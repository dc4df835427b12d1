"""Shared set-up for bench scripts: Django on a throw-away test database.

Run a bench with the database you want measured, e.g.
`DATABASE_URL=postgres://postgres@127.0.0.1:5432/aihummer .venv/bin/python bench/review_desk.py`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aihummer.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


@contextmanager
def throwaway_database() -> Iterator[None]:
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


# Eight sections of some length: a prompt of a realistic size for the benches' agents.
BENCH_SECTIONS = [{"key": f"s{i}", "title": f"Section {i}", "body": "Some guidance. " * 40} for i in range(8)]


def bench_agent(workspace: object, operator: object, key: str = "bench", **snapshot: object) -> object:
    """Agent `key` (named after it, its persona "Bench"), told BENCH_SECTIONS and any other
    snapshot field given, on the workspace's default preset."""
    from agents.services import agent_create

    snapshot = {"identity": {"name": "Bench"}, "sections": BENCH_SECTIONS, **snapshot}
    return agent_create(workspace=workspace, actor=operator, key=key, name=key.title(), snapshot=snapshot)


def bench_workspace(slug: str = "bench") -> tuple:
    """A workspace whose default preset is the offline echo provider, and the operator
    that made it: the world every bench starts from."""
    from aihummer.actors import Actor
    from aihummer.models import Workspace
    from aihummer.tests.factories import make_echo_preset

    operator = Actor.for_operator()
    workspace = Workspace.objects.create(slug=slug, name=slug.title())
    make_echo_preset(workspace, by=operator)
    return workspace, operator


def page_cost(client, url: str) -> tuple[int, float]:
    """Queries and milliseconds of one GET of `url` (after a warm-up GET: templates and
    content types cached, as on a running server)."""
    import time

    from django.test.utils import CaptureQueriesContext

    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(url)
        elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    return len(queries), elapsed


class StatementCounter:
    """SQL statements sent, and transactions committed, while active.

    A statement run in autocommit is its own transaction (a SELECT alone writes nothing
    to commit: not counted); statements inside `transaction.atomic()` commit together
    once, when the outermost block exits. Both are counted here, from Django's side of
    the connection (BEGIN/COMMIT themselves are not statements of ours)."""

    def __init__(self) -> None:
        self.statements = 0
        self.commits = 0

    def __enter__(self) -> StatementCounter:
        self._wrapper = connection.execute_wrapper(self._execute)
        self._wrapper.__enter__()
        self._commit = connection.commit
        connection.commit = self._counting_commit
        return self

    def __exit__(self, *exc: object) -> None:
        connection.commit = self._commit
        self._wrapper.__exit__(*exc)

    def _execute(self, execute, sql, params, many, context):
        self.statements += 1
        if connection.get_autocommit() and sql.lstrip()[:6].upper() != "SELECT":
            self.commits += 1
        return execute(sql, params, many, context)

    def _counting_commit(self) -> None:
        self.commits += 1
        self._commit()
