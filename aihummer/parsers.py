"""The REST API's one body parser (kept apart from `aihummer.api`: DRF imports parser
classes while `rest_framework.views` is still loading)."""

from __future__ import annotations

import re

from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser

# Text PostgreSQL cannot store (NUL) or UTF-8 cannot encode (lone surrogates).
_UNSTORABLE = re.compile("[\\x00\\ud800-\\udfff]")


class StrictJSONParser(JSONParser):
    """JSON bodies, refused with a 400 (never a 500) when nested past Python's recursion
    limit or carrying text the database cannot store."""

    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise drf_exceptions.ParseError("JSON parse error - nested too deeply.") from None
        problems = unstorable_text(data)
        if problems:
            raise drf_exceptions.ValidationError(
                {
                    path or "non_field_errors": ["NUL characters and lone surrogates are not allowed."]
                    for path in problems
                }
            )
        return data


def unstorable_text(data: object) -> list[str]:
    """The JSON paths of strings (keys included) that PostgreSQL could not store."""
    problems, stack = [], [("", data)]
    while stack:  # iterative: the document may be nested nearly to the recursion limit
        path, value = stack.pop()
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                problems.append(path)
        elif isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if _UNSTORABLE.search(key):
                    problems.append(path)
                    continue
                stack.append((child, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return sorted(problems)
