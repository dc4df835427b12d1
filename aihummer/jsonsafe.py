"""JSON from outside, made safe to validate and to store.

What breaks far from where it enters: a document nested so deep that parsing or
validating it recurses past Python's limit (a `RecursionError`, a 500); a number JSON
allows but nothing can hold (`1e999` is a float infinity, stored as "inf"; `NaN`;
an integer of thousands of digits, which Python refuses to convert); and a string
holding NUL (`\\u0000`) or a lone surrogate, which PostgreSQL refuses in `text` and
`jsonb` (a 500 on save). All are refused here, at the boundary, as a `ValidationError`
naming the field and the JSON path. Every surface parses outside JSON through `parse`
(the REST body parser, MCP JSON parameters, the admin's JSON fields).
"""

from __future__ import annotations

import json
import math
import re

from django.core.exceptions import ValidationError

# Deeper than any real configuration; far below the interpreter's recursion limit.
MAX_JSON_DEPTH = 32
NUL = "\x00"
# Text PostgreSQL cannot store (NUL) or UTF-8 cannot encode (lone surrogates).
UNSTORABLE = re.compile("[\\x00\\ud800-\\udfff]")
# Beyond 64 bits no column holds an integer, and no JSON client reads it back exactly.
MAX_JSON_INTEGER = 2**63 - 1


class UnsafeJSON(ValueError):
    """Why a JSON text is refused, in words a caller can act on."""


class IntegerOutOfRange(UnsafeJSON):
    """Valid JSON, but an integer no column holds (the REST API answers 422, not 400:
    a free-form object's schema cannot bound the numbers in it)."""


def _refuse_constant(name: str) -> float:
    raise UnsafeJSON(f"{name} is not a JSON number: numbers must be finite.")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UnsafeJSON(f"{text} is out of range: numbers must be finite.")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) > MAX_JSON_INTEGER:
        shown = f"{text[:30]}{'…' if len(text) > 30 else ''}"
        raise IntegerOutOfRange(f"{shown} is out of range: integers fit in 64 bits.")
    return int(text)


def parse(text: str) -> object:
    """`text` parsed as strict JSON: finite numbers that fit in 64 bits, nesting the
    interpreter can walk. Raises `UnsafeJSON` saying why not."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except UnsafeJSON:
        raise
    except json.JSONDecodeError as exc:
        raise UnsafeJSON(f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    except RecursionError:
        raise UnsafeJSON(f"$: nested deeper than {MAX_JSON_DEPTH} levels.") from None


def json_loads(text: str, *, field: str) -> object:
    """`text` parsed and storable, or a `ValidationError({field: ...})` saying why not."""
    try:
        value = parse(text)
    except UnsafeJSON as exc:
        raise ValidationError({field: str(exc)}) from None
    require_storable(value, field=field)
    return value


def require_storable(value: object, *, field: str) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and NUL in any string or key.

    Walks iteratively, so a hostile depth costs a loop, not the stack."""
    problem = storable_problem(value)
    if problem:
        raise ValidationError({field: problem})


def storable_problem(value: object) -> str | None:
    stack: list[tuple[object, str, int]] = [(value, "$", 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"{path}: nested deeper than {MAX_JSON_DEPTH} levels."
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                return f"{path}: contains {_unstorable(item)}, which cannot be stored."
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and UNSTORABLE.search(key):
                    return f"{path}: a key contains {_unstorable(key)}, which cannot be stored."
                stack.append((child, f"{path}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(item))
    return None


def _unstorable(text: str) -> str:
    return "a NUL character (\\u0000)" if NUL in text else "a lone surrogate (\\ud800-\\udfff)"


def text_problem(value: str) -> str | None:
    """Why a free-text value cannot be stored, or None."""
    return f"contains {_unstorable(value)}, which cannot be stored" if UNSTORABLE.search(value) else None


def require_text(value: object, *, field: str, max_chars: int, label: str | None = None) -> str:
    """A free-text field (a reason, a note) checked before it is stored: a string, no
    NUL, at most `max_chars` characters."""
    label = label or field.replace("_", " ").capitalize()
    if not isinstance(value, str):
        raise ValidationError({field: f"{label} must be text."})
    if UNSTORABLE.search(value):
        raise ValidationError({field: f"{label} {text_problem(value)}."})
    if len(value) > max_chars:
        raise ValidationError({field: f"{label} is {len(value)} characters long; at most {max_chars}."})
    return value
