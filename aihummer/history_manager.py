"""The `.history` manager of every tracked model, its class built once.

django-simple-history's descriptor builds the manager class anew on every `.history`
access (`Manager.from_queryset`, which walks the queryset class's members), and every
save of a tracked row goes through it to write its historical record: a class per save
and per read, in production as in the tests. Here the class is built once per
(manager, queryset) pair; the manager and its queries are the library's own.
"""

from __future__ import annotations

import functools

from simple_history.manager import HistoryManager as LibraryHistoryManager


class HistoryManager(LibraryHistoryManager):
    @classmethod
    @functools.cache
    def from_queryset(cls, queryset_class: type, class_name: str | None = None) -> type:
        return super().from_queryset(queryset_class, class_name)
