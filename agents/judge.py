"""The advisory judge: one structured-output call that scores a proposed prompt.

The workspace names a judge preset (an OpenAI or compatible one: the judgement comes
back as JSON under a strict schema, through the official SDK's `parse`). The judge
reads the live and the proposed prompt and how the saved cases went, and answers with
scores from 0 to 10 and its reasons. It never decides anything: a failing judge is a
`JudgeUnavailable` whose message the review page shows, with no score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pydantic
from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import openai

# Bands of the overall score: critical < 4 ≤ improvable < 7 ≤ good < 9 ≤ exemplary.
BANDS = ((9, "exemplary"), (7, "good"), (4, "improvable"), (0, "critical"))
MAX_PROMPT_CHARS = 30_000
MAX_ANSWER_CHARS = 500
DEFAULT_MAX_OUTPUT_TOKENS = 1_500
REASONING_MODEL = re.compile(r"^(o\d|gpt-5)(?!.*-chat)")

INSTRUCTIONS = """You review a proposed change to the system prompt of an LLM agent, before a person \
decides whether it goes live. Score the PROPOSED prompt from 0 (unusable) to 10 (exemplary):
- clarity: can the agent tell what to do, without contradictions?
- specificity: concrete goals, audience, format and limits rather than vague wishes;
- safety: no instruction to leak secrets, deceive, or act beyond its role; refusals where needed;
- consistency: coherent with itself and with what the live prompt did well, unless the change says why not;
- overall: your overall judgement, not an average.
Use the test-case outcomes as evidence: a case that passed on live and fails on the proposal is a regression.
Give a short rationale (at most five sentences) and the main strengths and weaknesses as short items.
You advise a reviewer; you do not decide."""


class Judgement(BaseModel):
    """The judge's answer, validated: scores out of range or missing fields are refused."""

    # Built at its first use (a judge call), not at import: every process loads this module.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    overall: int = Field(ge=0, le=10)
    clarity: int = Field(ge=0, le=10)
    specificity: int = Field(ge=0, le=10)
    safety: int = Field(ge=0, le=10)
    consistency: int = Field(ge=0, le=10)
    rationale: str
    strengths: list[str]
    weaknesses: list[str]


class JudgeUnavailable(Exception):
    """The judge could not give a judgement; the message says why, for the review page."""


@dataclass(frozen=True)
class CaseLine:
    """How one saved case went, as the judge reads it."""

    name: str
    live_passed: bool | None
    candidate_passed: bool
    candidate_answer: str


def band(score: int | None) -> str:
    """The badge of an overall score: critical, improvable, good or exemplary."""
    if score is None:
        return ""
    return next(label for floor, label in BANDS if score >= floor)


def judge_messages(*, live_prompt: str, candidate_prompt: str, cases: list[CaseLine]) -> list[dict]:
    """The two messages sent: the instructions, then the material to judge (bounded)."""
    lines = [_case_line(case) for case in cases] or ["(this agent has no saved test cases)"]
    material = (
        f"## Live prompt\n{_bounded(live_prompt, MAX_PROMPT_CHARS)}\n\n"
        f"## Proposed prompt\n{_bounded(candidate_prompt, MAX_PROMPT_CHARS)}\n\n"
        "## Test cases (live → proposal)\n" + "\n".join(lines)
    )
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": material}]


def _case_line(case: CaseLine) -> str:
    live = {None: "not run", True: "pass", False: "fail"}[case.live_passed]
    answer = _bounded(case.candidate_answer, MAX_ANSWER_CHARS).replace("\n", " ")
    return f"- {case.name}: {live} → {'pass' if case.candidate_passed else 'fail'}; proposal answered: {answer}"


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n[… {len(text) - limit} more characters not shown]"


def judge_call(
    *,
    model: str,
    base_url: str,
    api_key: str,
    timeout_seconds: float,
    max_output_tokens: int | None,
    messages: list[dict],
) -> Judgement:
    """One structured-output call; any failure is a JudgeUnavailable saying why (the
    API key never appears in it)."""
    if not api_key:
        raise JudgeUnavailable("The judge preset has no API key: set its credential.")
    # Imported here: the SDK takes seconds to load, and every process that reads a
    # score band (the admin's queue) would pay them.
    import openai

    try:
        with openai.OpenAI(
            api_key=api_key,
            base_url=base_url or None,
            timeout=timeout_seconds,
            max_retries=settings.AIHUMMER_PROVIDER_MAX_RETRIES,
        ) as client:
            # Reasoning models (o-series, gpt-5) refuse a temperature: they get none.
            sampling = {} if REASONING_MODEL.match(model) else {"temperature": 0}
            completion = client.chat.completions.parse(
                model=model,
                messages=messages,
                response_format=Judgement,
                max_completion_tokens=max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
                **sampling,
            )
    except openai.APIStatusError as exc:
        raise JudgeUnavailable(_clean(f"The judge answered HTTP {exc.status_code}: {_message(exc)}", api_key)) from None
    except openai.APITimeoutError:
        raise JudgeUnavailable(f"The judge did not answer within {timeout_seconds:g} s.") from None
    except openai.APIConnectionError:
        raise JudgeUnavailable(_clean(f"Cannot reach the judge at {base_url or 'the OpenAI API'}.", api_key)) from None
    except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
        raise JudgeUnavailable(f"The judge's answer was cut off ({type(exc).__name__}).") from None
    except (openai.OpenAIError, pydantic.ValidationError, ValueError) as exc:
        # ValueError: content that is not JSON; ValidationError: JSON outside the schema.
        raise JudgeUnavailable(
            _clean(f"The judge's answer is not a valid judgement: {_first_line(exc)}", api_key)
        ) from None
    if not completion.choices:
        raise JudgeUnavailable("The judge answered without a choice.")
    message = completion.choices[0].message
    if message.refusal:
        raise JudgeUnavailable(_clean(f"The judge refused: {message.refusal}", api_key))
    if message.parsed is None:
        raise JudgeUnavailable("The judge's answer is empty.")
    return message.parsed


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        return str(body.get("message") or body.get("detail") or exc.message)
    return exc.message


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _clean(text: str, api_key: str) -> str:
    return text.replace(api_key, "[redacted]") if api_key else text
