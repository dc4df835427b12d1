"""The assertion engine (agents.evidence), one assertion at a time: strict parsing
with a field error per problem, then evaluation against an answer."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from agents.evidence import Assertions, Check, evaluate, parse_assertions


def errors_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        parse_assertions(data)
    return caught.value.message_dict


def run(answer: str = "", *, tokens: int = 0, cost: str = "0", **assertions: object) -> list[Check]:
    return evaluate(parse_assertions(assertions), answer=answer, tokens=tokens, cost_usd=Decimal(cost))


# --- parsing ----------------------------------------------------------------------------
def test_no_assertion_parses_to_empty_assertions():
    assert parse_assertions({}) == Assertions()
    assert parse_assertions({"regex": None, "contains": None}) == Assertions()


def test_contains_must_be_a_list_of_strings():
    assert errors_of({"contains": "bonjour"}) == {"contains": ["Give a list of strings."]}
    assert errors_of({"not_contains": ["ok", 3]}) == {"not_contains": ["Give a list of strings."]}


def test_contains_refuses_empty_strings_that_match_everything():
    assert errors_of({"contains": ["  "]}) == {"contains": ["Empty strings match every answer; remove them."]}


def test_contains_is_bounded():
    assert errors_of({"contains": ["a"] * 21}) == {"contains": ["At most 20 strings."]}
    assert errors_of({"contains": ["x" * 1001]}) == {
        "contains": ["Each string has at most 1000 characters ('xxxxxxxxxxxxxxxxxxxx…' has 1001)."]
    }


RE2 = "(RE2 syntax: no backreferences or lookarounds)."


def test_a_bad_regex_is_a_field_error_naming_the_problem():
    assert errors_of({"regex": "(unclosed"}) == {
        "regex": [f"Not a valid regular expression: missing ): (unclosed {RE2}"]
    }


def test_patterns_re2_cannot_run_in_linear_time_are_refused():
    assert errors_of({"regex": r"(a)\1"}) == {
        "regex": [f"Not a valid regular expression: invalid escape sequence: \\1 {RE2}"]
    }
    assert errors_of({"regex": "foo(?=bar)"}) == {
        "regex": [f"Not a valid regular expression: invalid perl operator: (?= {RE2}"]
    }


def test_a_catastrophic_pattern_answers_at_once_on_a_long_answer():
    # With Python's backtracking `re` this search takes longer than the universe's age.
    answer = "a" * 10_000 + "!"
    assert run(answer, regex=r"^(a+)+$") == [Check("regex", r"^(a+)+$", False, "no match")]
    assert run(answer, regex=r"(a|aa)+!")[0].passed


def test_case_insensitive_must_be_a_boolean():
    assert errors_of({"case_insensitive": "yes"}) == {"case_insensitive": ["Give true or false."]}


def test_lengths_are_whole_numbers_in_range():
    assert errors_of({"min_length": "10"}) == {"min_length": ["Give a whole number."]}
    assert errors_of({"max_length": True}) == {"max_length": ["Give a whole number."]}
    assert errors_of({"max_length": -1}) == {"max_length": ["Give a number from 0 to 1000000."]}
    assert errors_of({"max_tokens": 0}) == {"max_tokens": ["Give a number from 1 to 1000000."]}


def test_min_length_above_max_length_is_refused_on_max_length():
    assert errors_of({"min_length": 50, "max_length": 10}) == {"max_length": ["Must be at least min_length (50)."]}


def test_max_cost_is_a_non_negative_amount_with_six_decimals_at_most():
    assert parse_assertions({"max_cost_usd": "0.0125"}).max_cost_usd == Decimal("0.0125")
    assert parse_assertions({"max_cost_usd": 1}).max_cost_usd == Decimal("1")
    assert errors_of({"max_cost_usd": "cheap"}) == {"max_cost_usd": ["Give an amount in US dollars, e.g. 0.01."]}
    assert errors_of({"max_cost_usd": "-1"}) == {"max_cost_usd": ["Give an amount from 0 to 1000 US dollars."]}
    assert errors_of({"max_cost_usd": "0.0000001"}) == {"max_cost_usd": ["At most 6 decimal places."]}
    assert errors_of({"max_cost_usd": "NaN"}) == {"max_cost_usd": ["Give an amount from 0 to 1000 US dollars."]}


def test_unknown_assertions_are_errors_and_every_problem_is_reported_at_once():
    assert errors_of({"contain": ["x"], "regex": "[", "min_length": "a"}) == {
        "contain": [
            "Unknown assertion; use contains, not_contains, case_insensitive, regex, min_length, max_length, "
            "max_tokens, max_cost_usd."
        ],
        "regex": [f"Not a valid regular expression: missing ]: [ {RE2}"],
        "min_length": ["Give a whole number."],
    }


def test_assertions_that_are_not_an_object_are_refused():
    assert errors_of(["contains"]) == {"assertions": ["Give the assertions as an object."]}


# --- evaluation -------------------------------------------------------------------------
def test_contains_passes_when_every_string_is_found():
    assert run("Bonjour Camille", contains=["Bonjour", "Camille"]) == [
        Check("contains", "Bonjour", True),
        Check("contains", "Camille", True),
    ]


def test_contains_fails_on_each_missing_string_and_is_case_sensitive_by_default():
    assert run("Bonjour Camille", contains=["bonjour", "Camille"]) == [
        Check("contains", "bonjour", False, "not found"),
        Check("contains", "Camille", True),
    ]


def test_contains_with_case_insensitive_ignores_case():
    assert run("BONJOUR", contains=["bonjour"], case_insensitive=True) == [Check("contains", "bonjour", True)]


def test_not_contains_fails_when_a_string_is_found():
    assert run("Ceci est confidentiel", not_contains=["confidentiel", "secret"]) == [
        Check("not_contains", "confidentiel", False, "found"),
        Check("not_contains", "secret", True),
    ]


def test_not_contains_with_case_insensitive_ignores_case():
    assert run("SECRET", not_contains=["secret"], case_insensitive=True) == [
        Check("not_contains", "secret", False, "found")
    ]
    assert run("SECRET", not_contains=["secret"]) == [Check("not_contains", "secret", True)]


def test_regex_is_searched_anywhere_and_follows_case_insensitive():
    assert run("Réf. AB-1234 reçue", regex=r"[A-Z]{2}-\d{4}") == [Check("regex", r"[A-Z]{2}-\d{4}", True)]
    assert run("ref ab-1234", regex=r"[A-Z]{2}-\d{4}") == [Check("regex", r"[A-Z]{2}-\d{4}", False, "no match")]
    assert run("ref ab-1234", regex=r"[A-Z]{2}-\d{4}", case_insensitive=True)[0].passed


def test_min_length_counts_characters():
    assert run("abcde", min_length=5) == [Check("min_length", "5", True, "5 characters")]
    assert run("abcd", min_length=5) == [Check("min_length", "5", False, "4 characters")]


def test_max_length_counts_characters():
    assert run("abcde", max_length=5) == [Check("max_length", "5", True, "5 characters")]
    assert run("abcdef", max_length=5) == [Check("max_length", "5", False, "6 characters")]


def test_max_tokens_bounds_the_turns_tokens():
    assert run("ok", tokens=120, max_tokens=120) == [Check("max_tokens", "120", True, "120 tokens")]
    assert run("ok", tokens=121, max_tokens=120) == [Check("max_tokens", "120", False, "121 tokens")]


def test_max_cost_bounds_the_turns_cost():
    assert run("ok", cost="0.002", max_cost_usd="0.002") == [Check("max_cost_usd", "0.002", True, "$0.002")]
    assert run("ok", cost="0.002001", max_cost_usd="0.002") == [Check("max_cost_usd", "0.002", False, "$0.002001")]


def test_no_assertion_means_no_check():
    assert run("anything") == []
