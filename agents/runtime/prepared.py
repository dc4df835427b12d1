"""A hot read compiled to SQL once per process.

Compiling a queryset is most of what a turn's agent read costs (six tables joined,
each with its columns and converters: about 2 ms of CPU, more than PostgreSQL takes to
run it), and every workflow step pays it. `PreparedSelect` compiles a queryset once,
then runs that SQL with new values and builds the objects exactly as iterating the
queryset would (select_related objects and annotations included), through Django's
own row converters and related populators.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators


class PreparedSelect:
    """`build(**markers)` returns the queryset; each marker value (distinct, and
    found nowhere else in the query's parameters) is a slot that `first(**values)`
    fills. One compilation per database alias."""

    def __init__(self, build: Callable[..., QuerySet], **markers: object) -> None:
        self._build = build
        self._markers = markers
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def first(self, using: str = "default", **values: object) -> Model | None:
        """The object of the first row (the query should match one at most), or None."""
        compiled = self._compiled.get(using) or self._compile(using)
        params = list(compiled.params)
        for name, value in values.items():
            params[compiled.slots[name]] = value
        with connections[using].cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        return None if row is None else compiled.instance(row)

    def _compile(self, using: str) -> _Compiled:
        with self._lock:
            if using not in self._compiled:
                self._compiled[using] = _Compiled(self._build(**self._markers).using(using), self._markers)
            return self._compiled[using]


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
