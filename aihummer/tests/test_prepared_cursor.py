"""`aihummer.db.prepared_cursor`: statements prepared on the server, their conversion
to PostgreSQL's form worked out once per process even where psycopg would not cache it
(over 4096 characters or 50 parameters, as a workflow step's claim and result are)."""

from __future__ import annotations

import pytest
from psycopg import _queries

from aihummer import db

# Long and with many parameters, as the step's hot statements: psycopg alone splits it
# again on every execution.
COLUMNS = 60
POSITIONAL = "SELECT " + ", ".join(f"%s::int AS c{i}" for i in range(COLUMNS)) + " -- " + "x" * 4200
NAMED = "SELECT %(b)s::text, %(a)s::int, %(b)s::text -- " + "y" * 4200


@pytest.fixture
def preparing(monkeypatch):
    monkeypatch.setattr(db, "PREPARE", True)  # as with a pool, where connections live on


def test_the_statements_are_above_what_psycopg_caches() -> None:
    assert len(POSITIONAL) > _queries.MAX_CACHED_STATEMENT_LENGTH and COLUMNS > _queries.MAX_CACHED_STATEMENT_PARAMS
    assert len(NAMED) > _queries.MAX_CACHED_STATEMENT_LENGTH


@pytest.mark.django_db
def test_a_long_statement_is_converted_once_and_binds_each_executions_values(preparing) -> None:
    db._converted.cache_clear()
    rows = []
    for first in (1, 100, 7):
        with db.prepared_cursor() as cursor:
            cursor.execute(POSITIONAL, [first + i for i in range(COLUMNS)])
            rows.append(cursor.fetchone())
    assert rows == [tuple(first + i for i in range(COLUMNS)) for first in (1, 100, 7)]
    info = db._converted.cache_info()
    assert (info.misses, info.hits) == (1, 2)


@pytest.mark.django_db
def test_named_parameters_keep_their_order_and_repeats(preparing) -> None:
    db._converted.cache_clear()
    with db.prepared_cursor() as cursor:
        cursor.execute(NAMED, {"a": 1, "b": "un"})
        first = cursor.fetchone()
        cursor.execute(NAMED, {"b": "deux", "a": 2})
        second = cursor.fetchone()
    assert (first, second) == (("un", 1, "un"), ("deux", 2, "deux"))
    assert db._converted.cache_info().misses == 1


@pytest.mark.django_db
def test_a_statement_is_prepared_on_the_server_once(preparing) -> None:
    for _ in range(3):
        with db.prepared_cursor() as cursor:
            cursor.execute(POSITIONAL, list(range(COLUMNS)))
    with db.prepared_cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["%xxxx%"])
        assert cursor.fetchone() == (1,)
