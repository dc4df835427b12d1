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
