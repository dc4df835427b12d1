"""One migrated test database per run, copied for each xdist worker (tests only).

Migrating an empty database costs about 3 s of CPU here (through the squashed
migrations), and pytest-django has every xdist worker migrate its own. Instead the first
worker to take the lock migrates a template database once; each worker's database is
then made from it by PostgreSQL (`CREATE DATABASE ... TEMPLATE`, Django's
`TEST["TEMPLATE"]`: 0.3 s), and the worker's own `migrate` finds nothing to apply (about
1 s). The controller drops the template when the run ends. Without xdist, or with
--reuse-db, nothing changes.
"""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql


def template_name(test_database_name: str) -> str:
    return f"{test_database_name}_template"


def _marker(template: str, run_id: str, kind: str) -> Path:
    return Path(tempfile.gettempdir()) / f"{template}.{run_id}.{kind}"


def _migrate_template(template: str) -> None:
    """The template, migrated, by Django's own test-database creation (an old one of
    the same name is dropped first)."""
    connection = connections[DEFAULT_DB_ALIAS]
    database, test = settings.DATABASES[DEFAULT_DB_ALIAS], connection.settings_dict["TEST"]
    name, worker_test_name = connection.settings_dict["NAME"], test["NAME"]
    test["NAME"] = template
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    finally:
        # No session may stay on a template while PostgreSQL copies it.
        connection.close()
        test["NAME"] = worker_test_name
        database["NAME"] = connection.settings_dict["NAME"] = name


def use_template(*, worker: str, run_id: str) -> None:
    """This worker's test database will be a copy of the run's template, which the
    first worker to get here migrates while the others wait for it."""
    connection = connections[DEFAULT_DB_ALIAS]
    template = template_name(connection.creation._get_test_db_name().removesuffix(f"_{worker}"))
    with _marker(template, run_id, "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        ready = _marker(template, run_id, "ready")
        if not ready.exists():
            _migrate_template(template)
            ready.touch()
    connection.settings_dict["TEST"]["TEMPLATE"] = template


def drop_template(run_id: str) -> None:
    """At the end of the run (in the controller): the template and its lock files gone."""
    database = settings.DATABASES[DEFAULT_DB_ALIAS]
    template = template_name(connections[DEFAULT_DB_ALIAS].creation._get_test_db_name())
    if not _marker(template, run_id, "ready").exists():
        return
    params = {"host": database["HOST"] or None, "port": database["PORT"] or None, "user": database["USER"] or None}
    with psycopg.connect(dbname="postgres", password=database["PASSWORD"] or None, autocommit=True, **params) as db:
        db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(template)))
    for kind in ("ready", "lock"):
        _marker(template, run_id, kind).unlink(missing_ok=True)
