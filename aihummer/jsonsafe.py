"""JSON from outside, made safe to validate and to store.

Two things break far from where they enter: a document nested so deep that parsing or
validating it recurses past Python's limit (a `RecursionError`, a 500), and a string
holding NUL (`\\u0000`), which PostgreSQL refuses in `text` and `jsonb` (a 500 on save).
Both are refused here, at the boundary, as a `ValidationError` naming the field and
the JSON path.
"""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError

# Deeper than any real configuration; far below the interpreter's recursion limit.
MAX_JSON_DEPTH = 32
NUL = "\x00"


def json_loads(text: str, *, field: str) -> object:
    """`text` parsed, or a `ValidationError({field: ...})` saying why not."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError({field: f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."}) from None
    except RecursionError:
        raise ValidationError({field: f"$: nested deeper than {MAX_JSON_DEPTH} levels."}) from None
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
            if NUL in item:
                return f"{path}: contains a NUL character (\\u0000), which cannot be stored."
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and NUL in key:
                    return f"{path}: a key contains a NUL character (\\u0000), which cannot be stored."
                stack.append((child, f"{path}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(item))
    return None


def require_text(value: object, *, field: str, max_chars: int, label: str | None = None) -> str:
    """A free-text field (a reason, a note) checked before it is stored: a string, no
    NUL, at most `max_chars` characters."""
    label = label or field.replace("_", " ").capitalize()
    if not isinstance(value, str):
        raise ValidationError({field: f"{label} must be text."})
    if NUL in value:
        raise ValidationError({field: f"{label} contains a NUL character (\\u0000), which cannot be stored."})
    if len(value) > max_chars:
        raise ValidationError({field: f"{label} is {len(value)} characters long; at most {max_chars}."})
    return value
