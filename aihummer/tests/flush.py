"""How a transactional test empties the database after itself: DELETE, not TRUNCATE.

Django's `flush` TRUNCATEs every table (56 here). PostgreSQL gives each truncated table,
index and TOAST table a new file, and a transaction that drops files waits for its WAL
flush whatever `synchronous_commit` says: 0.4 s per test on this machine, the largest
part of a transactional test's cost. A DELETE of the few rows a test leaves takes 10 ms.
The result is the one `flush` leaves: every table empty, sequences not reset (Django's
teardown passes reset_sequences=False), then post_migrate as `flush` sends it (content
types and permissions made again). Foreign keys are deferred to the commit, so the order
of the DELETEs does not matter. Tests that ask for reset sequences, available apps or a
serialized rollback keep Django's own teardown.

post_migrate only makes again the content types and permissions it finds missing, and
costs 25-30 ms of CPU (35-45 ms wall) per test, most of a teardown now. So those two tables
are kept while no test touched them (the same row count and highest id as after the last
full reset: a row added or deleted changes one of them), and emptied and made again as
above when one did. The other tables go in one statement: one round trip, not 56.
"""

from __future__ import annotations

from django.core.management.sql import emit_post_migrate_signal
from django.db import connections, transaction
from django.test import TransactionTestCase

_django_fixture_teardown = TransactionTestCase._fixture_teardown


# What post_migrate fills (django.contrib.contenttypes and auth), and what it would make again.
MADE_BY_POST_MIGRATE = ("django_content_type", "auth_permission")
_made_as_after_reset: dict[str, tuple] = {}  # by database alias


def _made_by_post_migrate(cursor) -> tuple:
    counts = " UNION ALL ".join(f"SELECT count(*), max(id) FROM {table}" for table in MADE_BY_POST_MIGRATE)
    cursor.execute(counts)
    return tuple(cursor.fetchall())


def delete_every_row(using: str) -> None:
    """Every table of the installed models emptied, as `flush` leaves them."""
    connection = connections[using]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    quote = connection.ops.quote_name
    with transaction.atomic(using=using), connection.cursor() as cursor:
        untouched = _made_as_after_reset.get(using) == _made_by_post_migrate(cursor)
        emptied = [table for table in sorted(tables) if not (untouched and table in MADE_BY_POST_MIGRATE)]
        # Names from the model registry; no parameters, so one round trip for all.
        cursor.execute("; ".join(["SET CONSTRAINTS ALL DEFERRED", *(f"DELETE FROM {quote(t)}" for t in emptied)]))
    if untouched:
        return
    emit_post_migrate_signal(verbosity=0, interactive=False, db=using)
    with connection.cursor() as cursor:
        _made_as_after_reset[using] = _made_by_post_migrate(cursor)


def _fixture_teardown(self: TransactionTestCase) -> None:
    if self.reset_sequences or self.available_apps is not None or self.serialized_rollback:
        _django_fixture_teardown(self)
        return
    for using in self._databases_names(include_mirrors=False):
        delete_every_row(using)


def install() -> None:
    """Every transactional test of this process ends with `delete_every_row`."""
    TransactionTestCase._fixture_teardown = _fixture_teardown
