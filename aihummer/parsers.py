"""The REST API's one body parser (kept apart from `aihummer.api`: DRF imports parser
classes while `rest_framework.views` is still loading)."""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser

from aihummer.jsonsafe import UNSTORABLE, IntegerOutOfRange, UnsafeJSON, parse


class Refused(drf_exceptions.APIException):
    status_code = 422
    default_code = "refused"


class StrictJSONParser(JSONParser):
    """JSON bodies through `aihummer.jsonsafe.parse` (finite numbers, nesting Python can
    walk), refused with a 400 — never a 500, never `1e999` stored as "inf" — and text
    the database cannot store refused with the path of each string that holds it."""

    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = parse(stream.read().decode(encoding))
        except UnicodeDecodeError:
            raise drf_exceptions.ParseError(f"JSON parse error - the body is not {encoding} text.") from None
        except IntegerOutOfRange as exc:
            raise Refused(f"JSON parse error - {exc}") from None
        except UnsafeJSON as exc:
            raise drf_exceptions.ParseError(f"JSON parse error - {exc}") from None
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
            if UNSTORABLE.search(value):
                problems.append(path)
        elif isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if UNSTORABLE.search(key):
                    problems.append(path)
                    continue
                stack.append((child, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return sorted(problems)
