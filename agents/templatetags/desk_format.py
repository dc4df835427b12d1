"""One money format and one duration format for every admin page (issue 32): costs
print as `$0.000291` (the six decimals they are stored with), durations as `850 ms`,
`3.7 s` or `2.5 min`. Template filters `money` and `duration_ms`; admin code calls
the same functions."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter(name="money")
def money(value: object) -> str:
    """A cost in US dollars, six decimals; `—` for no value."""
    if value is None or value == "":
        return "—"
    try:
        return f"${Decimal(str(value)):.6f}"
    except (InvalidOperation, ValueError):
        return "—"


@register.filter(name="duration_ms")
def duration_ms(value: object) -> str:
    """A duration given in milliseconds (or a timedelta); `—` for none."""
    if isinstance(value, timedelta):
        value = value.total_seconds() * 1000
    if value is None or value == "":
        return "—"
    ms = float(value)
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s" if ms < 60_000 else f"{ms / 60_000:.1f} min"
