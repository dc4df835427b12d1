"""Row ids as the database spells them, for every surface that reads one from a URL,
a query string or a header.

ASCII digits only: Python's `\\d` and `str.isdigit()` also accept "١٢" (Arabic-Indic)
or "¹", which `int()` reads as 12 or refuses with a ValueError — a second name for a
row, or a 500.
"""

from __future__ import annotations

import re

# An id as the database spells it: ASCII digits that fit a bigint.
CANONICAL_ID = re.compile(r"[0-9]{1,18}")


def canonical_id(value: str) -> bool:
    """Whether `value` can be a row id (anything else answers as a missing row)."""
    return bool(CANONICAL_ID.fullmatch(value))
