"""Test-case assertions: strict parsing and evaluation, pure functions of data.

A case's assertions, all optional, all of which must hold:

- `contains`, `not_contains`: lists of strings the answer must (must not) contain;
  `case_insensitive` makes them, and `regex`, ignore case;
- `regex`: a Python regular expression searched anywhere in the answer;
- `min_length`, `max_length`: bounds on the answer's length in characters;
- `max_tokens`: a bound on the turn's tokens, input and output together (a prompt
  that grows shows here even when the answer does not);
- `max_cost_usd`: a bound on the turn's cost in US dollars.

A case with no assertion passes when the turn succeeds. Nothing here reads the
database: the runtime produces the answer, this module judges it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

import re2
from django.core.exceptions import ValidationError

ASSERTION_FIELDS = (
    "contains",
    "not_contains",
    "case_insensitive",
    "regex",
    "min_length",
    "max_length",
    "max_tokens",
    "max_cost_usd",
)
MAX_STRINGS = 20
MAX_STRING_CHARS = 1_000
MAX_REGEX_CHARS = 500
RE2_SYNTAX = "(RE2 syntax: no backreferences or lookarounds)."
MAX_LENGTH = 1_000_000
MAX_COST_USD = Decimal("1000")


@dataclass(frozen=True)
class Assertions:
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    case_insensitive: bool = False
    regex: str = ""
    min_length: int | None = None
    max_length: int | None = None
    max_tokens: int | None = None
    max_cost_usd: Decimal | None = None


@dataclass(frozen=True)
class Check:
    """One assertion applied to one answer: what was expected, whether it held, and
    what was seen when it did not."""

    assertion: str
    expected: str
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


# --- parsing ------------------------------------------------------------------------------
def parse_assertions(data: dict) -> Assertions:
    """Strictly parse assertions from a dict (a service's input or a model's fields).

    Every problem is reported at once, keyed by its field, as a ValidationError;
    unknown keys are errors, not silently dropped.
    """
    if not isinstance(data, dict):
        raise ValidationError({"assertions": "Give the assertions as an object."})
    errors: dict[str, str] = {}
    values: dict[str, object] = {}
    for key in sorted(set(data) - set(ASSERTION_FIELDS)):
        errors[key] = f"Unknown assertion; use {', '.join(ASSERTION_FIELDS)}."
    parsers = {
        "contains": _strings,
        "not_contains": _strings,
        "case_insensitive": _boolean,
        "regex": _regex,
        "min_length": lambda v: _count(v, minimum=0),
        "max_length": lambda v: _count(v, minimum=0),
        "max_tokens": lambda v: _count(v, minimum=1),
        "max_cost_usd": _cost,
    }
    for field, parse in parsers.items():
        if data.get(field) is None:
            continue
        try:
            values[field] = parse(data[field])
        except ValueError as exc:
            errors[field] = str(exc)
    minimum, maximum = values.get("min_length"), values.get("max_length")
    if minimum is not None and maximum is not None and minimum > maximum and "max_length" not in errors:
        errors["max_length"] = f"Must be at least min_length ({minimum})."
    if errors:
        raise ValidationError(errors)
    return Assertions(**values)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ValueError("Give a list of strings.")
    items = tuple(value)
    if any(not item.strip() for item in items):
        raise ValueError("Empty strings match every answer; remove them.")
    if len(items) > MAX_STRINGS:
        raise ValueError(f"At most {MAX_STRINGS} strings.")
    long = next((item for item in items if len(item) > MAX_STRING_CHARS), None)
    if long is not None:
        raise ValueError(f"Each string has at most {MAX_STRING_CHARS} characters ('{long[:20]}…' has {len(long)}).")
    return items


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("Give true or false.")
    return value


def _regex(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("Give the regular expression as a string.")
    if len(value) > MAX_REGEX_CHARS:
        raise ValueError(f"At most {MAX_REGEX_CHARS} characters.")
    try:
        _compiled(value, case_insensitive=False)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(f"Not a valid regular expression: {reason} {RE2_SYNTAX}") from None
    return value


def _compiled(pattern: str, *, case_insensitive: bool) -> re2._Regexp:
    """RE2, not `re`: an editor's pattern runs on the shared workers, and RE2 matches in
    time linear in the answer (`(a+)+$` cannot hang a worker)."""
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not case_insensitive
    return re2.compile(pattern, options)


def _count(value: object, *, minimum: int) -> int:
    # bool is an int in Python; `true` is no length.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("Give a whole number.")
    if value < minimum or value > MAX_LENGTH:
        raise ValueError(f"Give a number from {minimum} to {MAX_LENGTH}.")
    return value


def _cost(value: object) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValueError("Give an amount in US dollars, e.g. 0.01.")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValueError("Give an amount in US dollars, e.g. 0.01.") from None
    if not amount.is_finite() or amount < 0 or amount > MAX_COST_USD:
        raise ValueError(f"Give an amount from 0 to {MAX_COST_USD} US dollars.")
    if amount.as_tuple().exponent < -6:
        raise ValueError("At most 6 decimal places.")
    return amount


# --- evaluation ---------------------------------------------------------------------------
def evaluate(assertions: Assertions, *, answer: str, tokens: int, cost_usd: Decimal) -> list[Check]:
    """Apply every assertion to one answer, in a stable order; all are reported, so a
    reviewer sees each reason a case failed, not only the first."""
    fold = str.casefold if assertions.case_insensitive else str
    haystack = fold(answer)
    checks = [
        Check("contains", text, fold(text) in haystack, "" if fold(text) in haystack else "not found")
        for text in assertions.contains
    ]
    checks += [
        Check("not_contains", text, fold(text) not in haystack, "found" if fold(text) in haystack else "")
        for text in assertions.not_contains
    ]
    if assertions.regex:
        pattern = _compiled(assertions.regex, case_insensitive=assertions.case_insensitive)
        found = pattern.search(answer) is not None
        checks.append(Check("regex", assertions.regex, found, "" if found else "no match"))
    length = len(answer)
    if assertions.min_length is not None:
        passed = length >= assertions.min_length
        checks.append(Check("min_length", str(assertions.min_length), passed, f"{length} characters"))
    if assertions.max_length is not None:
        passed = length <= assertions.max_length
        checks.append(Check("max_length", str(assertions.max_length), passed, f"{length} characters"))
    if assertions.max_tokens is not None:
        passed = tokens <= assertions.max_tokens
        checks.append(Check("max_tokens", str(assertions.max_tokens), passed, f"{tokens} tokens"))
    if assertions.max_cost_usd is not None:
        passed = cost_usd <= assertions.max_cost_usd
        checks.append(Check("max_cost_usd", str(assertions.max_cost_usd), passed, f"${cost_usd:f}"))
    return checks
