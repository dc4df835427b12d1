"""A turn's hot statements compiled to SQL once per process.

Compiling a queryset is most of what a turn's agent read costs (six tables joined,
each with its columns and converters: about 2 ms of CPU, more than PostgreSQL takes to
run it), and every workflow step pays it. `PreparedSelect` compiles a queryset once,
then runs that SQL with new values and builds the objects exactly as iterating the
queryset would (select_related objects and annotations included), through Django's
own row converters and related populators.

Writing the turn and its debug log through `Model.save()` compiles two INSERTs per
step (about 1 ms of CPU each); `insert_with_parent` writes both in one statement built
once, with each field's value prepared as `save()` prepares it.

Both run on `aihummer.db.prepared_cursor`: prepared on the server once per connection
where connections live on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

from aihummer.db import Tail, prepared_cursor


class PreparedSelect:
    """`build(**markers)` returns the queryset; each marker value (distinct, and
    found nowhere else in the query's parameters) is a slot that `first(**values)`
    fills. One compilation per database alias."""

    def __init__(self, build: Callable[..., QuerySet], **markers: object) -> None:
        self._build = build
        self._markers = markers
        self._compiled: dict[str, _Compiled] = {}
        self._joined: dict[tuple, Joined] = {}
        self._lock = threading.Lock()

    def first(self, using: str = "default", **values: object) -> Model | None:
        """The object of the first row (the query should match one at most), or None."""
        compiled = self._compiled.get(using) or self._compile(using)
        params = list(compiled.params)
        for name, value in values.items():
            params[compiled.slots[name]] = value
        with prepared_cursor(using) as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        return None if row is None else compiled.instance(row)

    def joined(self, using: str = "default", **columns: str) -> Joined:
        """The query as a subquery for another statement to join (`LEFT JOIN LATERAL`),
        each marker replaced by SQL (`columns`: a column of that statement, say), so
        that its row comes with that statement's, in one round trip."""
        key = (using, tuple(sorted(columns.items())))
        joined = self._joined.get(key)
        if joined is None:
            compiled = self._compiled.get(using) or self._compile(using)
            parts = compiled.sql.split("%s")
            if len(parts) != len(compiled.params) + 1:
                raise ValueError("The query's SQL does not show one %s per parameter.")
            by_slot = {compiled.slots[name]: sql for name, sql in columns.items()}
            sql, params = parts[0], []
            for index, part in enumerate(parts[1:]):
                if index in by_slot:
                    sql += by_slot[index]
                else:
                    sql += "%s"
                    params.append(compiled.params[index])
                sql += part
            joined = self._joined[key] = Joined(sql, tuple(params), compiled)
        return joined

    def _compile(self, using: str) -> _Compiled:
        with self._lock:
            if using not in self._compiled:
                self._compiled[using] = _Compiled(self._build(**self._markers).using(using), self._markers)
            return self._compiled[using]


class Joined:
    """A `PreparedSelect` as SQL for another statement (`sql`, its `params`
    positional), and how its columns, at the end of that statement's row, become the
    object (None when the join found no row)."""

    def __init__(self, sql: str, params: tuple[Any, ...], compiled: _Compiled) -> None:
        self.sql, self.params, self._compiled = sql, params, compiled

    def instance(self, row: tuple[Any, ...]) -> Model | None:
        return None if row[self._compiled.start] is None else self._compiled.instance(row)


class _Compiled:
    """What Django's ModelIterable works out for each query, worked out once."""

    def __init__(self, queryset: QuerySet, markers: dict[str, object]) -> None:
        compiler = queryset.query.get_compiler(queryset.db)
        self.sql, params = compiler.as_sql()
        self.params = tuple(params)
        self.slots = {name: self.params.index(marker) for name, marker in markers.items()}
        if len(set(self.slots.values())) != len(markers) or any(self.params.count(m) != 1 for m in markers.values()):
            raise ValueError("Each marker must appear exactly once in the query's parameters.")
        self.compiler = compiler
        self.db = queryset.db
        self.converters = compiler.get_converters([column for column, _, _ in compiler.select[: compiler.col_count]])
        klass_info = compiler.klass_info
        self.model = klass_info["model"]
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.names = [column.target.attname for column, _, _ in compiler.select[self.start : self.end]]
        self.populators = get_related_populators(klass_info, compiler.select, self.db)
        self.annotations = compiler.annotation_col_map

    def instance(self, row: tuple[Any, ...]) -> Model:
        if self.converters:
            row = next(iter(self.compiler.apply_converters([row], self.converters)))
        obj = self.model.from_db(self.db, self.names, row[self.start : self.end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations.items():
            setattr(obj, name, row[position])
        return obj


# --- inserts ----------------------------------------------------------------------------
class PreparedInsert:
    """The INSERT of one `model` row (every concrete field but its auto primary key),
    its SQL built once per process."""

    def __init__(self, model: type[Model]) -> None:
        meta = model._meta
        self.model = model
        self.table = meta.db_table
        self.fields = [field for field in meta.concrete_fields if field is not meta.auto_field]
        self.pk_column = meta.pk.column

    def values(self, obj: Model, using: str, *, skip: str = "") -> list[Any]:
        """The row's values as `save()` sends them: `pre_save` (auto_now…), then
        `get_db_prep_save`; without the field `skip`."""
        connection = connections[using]
        return [
            field.get_db_prep_save(field.pre_save(obj, add=True), connection)
            for field in self.fields
            if field.attname != skip
        ]

    def statement(self, using: str, *, skip: str = "", first: str = "") -> str:
        """`INSERT INTO t (…) VALUES (…)`: `first` (SQL) is the value of field `skip`,
        put first; every other value a parameter."""
        quote = connections[using].ops.quote_name
        fields = [field for field in self.fields if field.attname != skip]
        columns = [quote(field.column) for field in fields]
        values = ["%s"] * len(fields)
        if skip:
            columns.insert(0, quote(self.model._meta.get_field(skip.removesuffix("_id")).column))
            values.insert(0, first)
        return f"INSERT INTO {quote(self.table)} ({', '.join(columns)}) VALUES ({', '.join(values)})"  # noqa: S608


def _saved(obj: Model, pk: object, using: str) -> None:
    obj.pk = pk
    obj._state.adding, obj._state.db = False, using


def insert_with_parent(
    parent: Model, child: Model, *, link: str, using: str = "default", tail: Tail | None = None
) -> tuple | None:
    """Insert `parent` (unsaved) and `child`, whose foreign key `link` points at it:
    on PostgreSQL in one statement (a data-modifying CTE), its SQL built once per
    pair of models; elsewhere with `save()`, one after the other (the caller's
    transaction holds them together).

    With a `tail` (PostgreSQL only), its CTEs go in the same statement, after the two
    inserts; they may read the parent's new primary key as `(SELECT <pk> FROM parent)`.
    Returns the row of the tail's `last` CTE (all NULLs when it matched nothing: the
    inserts are made all the same), else None."""
    vendor = connections[using].vendor
    if vendor != "postgresql":
        if tail is not None:
            raise ValueError("A tail is composed into a PostgreSQL statement only.")
        parent.save(force_insert=True, using=using)
        setattr(child, link, parent)
        child.save(force_insert=True, using=using)
        return None
    key = (type(parent), type(child), link, using, tail.sql if tail else "")
    sql = _PAIRS.get(key)
    first, second = _insert_of(type(parent)), _insert_of(type(child))
    attname = type(child)._meta.get_field(link).attname
    if sql is None:
        # Table and column names are the models' own (never input); every value a parameter.
        quote = connections[using].ops.quote_name
        parent_pk = f"(SELECT {quote(first.pk_column)} FROM parent)"  # noqa: S608
        head = f"WITH parent AS ({first.statement(using)} RETURNING {quote(first.pk_column)})"
        child_sql = (
            f"{second.statement(using, skip=attname, first=parent_pk)} "
            f"RETURNING {quote(attname)}, {quote(second.pk_column)}"
        )
        if tail is None:
            sql = f"{head} {child_sql}"
        else:  # the tail's SQL is a constant of its module, never input
            last = tail.last
            sql = f"{head}, child AS ({child_sql}), {tail.sql} SELECT child.*, {last}.* FROM child LEFT JOIN {last} ON true"  # noqa: S608, E501
        _PAIRS[key] = sql
    params = first.values(parent, using) + second.values(child, using, skip=attname)
    if tail is not None:
        params += tail.params
    with prepared_cursor(using) as cursor:
        cursor.execute(sql, params)
        parent_pk, child_pk, *rest = cursor.fetchone()
    _saved(parent, parent_pk, using)
    setattr(child, link, parent)
    _saved(child, child_pk, using)
    return None if tail is None else tuple(rest)


def insert_with_children(parent: Model, children: list[Model], *, link: str, using: str = "default") -> None:
    """Insert `parent` (unsaved) and `children` (at least one), whose foreign key `link`
    points at it: on PostgreSQL in one statement (a data-modifying CTE, atomic by
    itself), its SQL built once per pair of models and number of children; elsewhere
    with `save()` and `bulk_create()` (the caller's transaction holds them together).
    Sets their primary keys, as those do."""
    child_model = type(children[0])
    if connections[using].vendor != "postgresql":
        parent.save(force_insert=True, using=using)
        for child in children:
            setattr(child, link, parent)
        child_model._default_manager.db_manager(using).bulk_create(children)
        return
    first, second = _insert_of(type(parent)), _insert_of(child_model)
    attname = child_model._meta.get_field(link).attname
    key = (type(parent), child_model, link, using, len(children))
    sql = _FAMILIES.get(key)
    if sql is None:
        # Table and column names are the models' own (never input); every value a parameter.
        quote = connections[using].ops.quote_name
        head = f"WITH parent AS ({first.statement(using)} RETURNING {quote(first.pk_column)})"
        parent_pk = f"(SELECT {quote(first.pk_column)} FROM parent)"  # noqa: S608
        insert_into, _, row = second.statement(using, skip=attname, first=parent_pk).partition(" VALUES ")
        rows = ", ".join([row] * len(children))
        returning = f"RETURNING {quote(attname)}, {quote(second.pk_column)}"
        sql = _FAMILIES[key] = f"{head} {insert_into} VALUES {rows} {returning}"
    params = first.values(parent, using)
    for child in children:
        params += second.values(child, using, skip=attname)
    with prepared_cursor(using) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    _saved(parent, rows[0][0], using)
    # RETURNING gives the rows in the order of VALUES, as bulk_create relies on too.
    for child, (_, child_pk) in zip(children, rows, strict=True):
        setattr(child, link, parent)
        _saved(child, child_pk, using)


def insert(obj: Model, *, using: str = "default") -> None:
    """Insert `obj` (unsaved), its SQL built once per model; `save()` elsewhere than
    on PostgreSQL."""
    if connections[using].vendor != "postgresql":
        obj.save(force_insert=True, using=using)
        return
    prepared = _insert_of(type(obj))
    sql = _SINGLES.get((type(obj), using))
    if sql is None:
        quote = connections[using].ops.quote_name
        sql = _SINGLES[type(obj), using] = f"{prepared.statement(using)} RETURNING {quote(prepared.pk_column)}"
    with prepared_cursor(using) as cursor:
        cursor.execute(sql, prepared.values(obj, using))
        (pk,) = cursor.fetchone()
    _saved(obj, pk, using)


_INSERTS: dict[type[Model], PreparedInsert] = {}
_PAIRS: dict[tuple, str] = {}
_SINGLES: dict[tuple, str] = {}
_FAMILIES: dict[tuple, str] = {}  # by models, link and number of children: a few dozen at most


def _insert_of(model: type[Model]) -> PreparedInsert:
    prepared = _INSERTS.get(model)
    if prepared is None:
        prepared = _INSERTS[model] = PreparedInsert(model)
    return prepared
