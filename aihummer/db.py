"""Statements prepared on the server, for the few a workflow step sends every time.

Django sends every statement with its values inlined (client-side binding), so
PostgreSQL parses and plans each one anew: for a step's claim, its agent read (six
tables), its turn and debug log and its finish, about 1.3 ms of the database's CPU per
step, a third of all it spends on the step. `prepared_cursor()` gives a cursor that
sends values apart (server-side binding) and has each statement prepared once per
connection, then only bound and executed: the database's CPU per step drops from 3.3
to 2.1 ms (`bench/workflows.py`, phase A).

It is a Django cursor (the same wrappers: query counts in tests, the debug log of
queries), used only where a statement is sent again on the same connection: with a
connection pool (`DATABASE_POOL_MAX_SIZE`) or persistent connections
(`CONN_MAX_AGE`). A connection opened for one task would pay the prepare round trip
and never use it again, so without either, and on SQLite, it is the usual cursor.

Its statements are constants of their modules, so their conversion to PostgreSQL's
form (`%s` → `$1`, split at each placeholder) is worked out once per process too:
psycopg caches that only for statements under 4096 characters and 50 parameters, and
a step's two hot ones are above (the claim with its agent read: 6 kB; the turn, its
log and the finish: 70 parameters), so it split both again on every step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

# None: prepare when connections live on (pool or CONN_MAX_AGE); True/False: always/never
# (tests force both ways).
PREPARE: bool | None = None


def prepares(connection: BaseDatabaseWrapper) -> bool:
    """Whether `prepared_cursor` prepares on this connection."""
    if connection.vendor != "postgresql":
        return False
    if PREPARE is not None:
        return PREPARE
    settings = connection.settings_dict
    return bool(settings.get("OPTIONS", {}).get("pool")) or settings["CONN_MAX_AGE"] != 0


def prepared_cursor(using: str = "default") -> CursorWrapper:
    """A cursor (use it as a context manager) whose statements are prepared on the
    server once per connection, where that pays (`prepares`); else the usual one."""
    connection = connections[using]
    if not prepares(connection):
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django's None switches psycopg's preparing off, even when asked for. Its own
        # cursors never prepare (they bind on the client) whatever the threshold, so
        # only these cursors' statements are prepared, because they ask.
        raw.prepare_threshold = _ONLY_WHEN_ASKED
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        cursor = _classes()[0](raw)
    return _classes()[1](cursor, connection) if connection.queries_logged else connection.make_cursor(cursor)


_ONLY_WHEN_ASKED = 2**31  # executions before psycopg would prepare a statement by itself


_CLASSES: tuple[type, type] | None = None


# Distinct statements whose conversion a process keeps: the prepared ones are a few dozen.
@lru_cache(maxsize=256)
def _converted(query: str, encoding: str) -> tuple:
    """psycopg's conversion of `query` (its PostgreSQL text, formats, names, parts)."""
    from psycopg import _queries

    return _queries._query2pg_nocache(query.encode(encoding), encoding)


def _classes() -> tuple[type, type]:
    # Built on first use: the PostgreSQL backend (and psycopg) load only where used.
    global _CLASSES
    if _CLASSES is None:
        from django.db.backends.postgresql.base import CursorDebugWrapper, ServerBindingCursor
        from psycopg import _queries

        class ConstantQuery(_queries.PostgresQuery):
            """psycopg's query conversion, cached whatever the statement's length: the
            statements sent here are the code's own, a bounded few."""

            __slots__ = ()

            def convert(self, query: Any, vars: Any) -> None:
                if vars is None or not isinstance(query, str):
                    return super().convert(query, vars)
                self.query, self._want_formats, self._order, self._parts = _converted(query, self._tx.encoding)
                self.dump(vars)
                return None

        class PreparingCursor(ServerBindingCursor):
            """Django's server-side binding cursor, preparing every statement it runs."""

            _query_cls = ConstantQuery

            def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None, **kwargs: Any) -> Any:
                return super().execute(query, params, prepare=True, **kwargs)

        class DebugWrapper(CursorDebugWrapper):
            """Records each statement with its values merged, as Django's wrapper does
            for its own cursors (it reads them from where only those keep them)."""

            def execute(self, sql: str, params: Any = None) -> Any:
                with self.debug_sql(self.db.ops.compose_sql(sql, params)):
                    return CursorWrapper.execute(self, sql, params)

        _CLASSES = (PreparingCursor, DebugWrapper)
    return _CLASSES


# --- statements composed of parts -----------------------------------------------------------
_NAMED = re.compile(r"%\((\w+)\)s")


def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """`sql` with its `%(name)s` parameters made positional (`%s`), and the names in
    the order their values go: a named statement's values, as a list, can then follow
    another statement's (`Tail`)."""
    names: list[str] = []

    def slot(match: re.Match) -> str:
        names.append(match.group(1))
        return "%s"

    return _NAMED.sub(slot, sql), tuple(names)


@dataclass(frozen=True)
class Tail:
    """Data-modifying CTEs (`a AS (…), b AS (…)`, positional parameters) another
    statement appends to its own, so that two writes go in one statement: one round
    trip and, in autocommit, one commit. The statement returns the row of its CTE
    `last` (NULLs when that matched nothing); what each statement lets its tail read
    of it is the statement's to say (`agents.runtime.prepared.insert_with_parent`).
    `sql` is a constant: the composed statement is built, and prepared, once."""

    sql: str
    params: tuple[Any, ...]
    last: str
