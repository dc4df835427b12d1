"""The advisory judge through the official openai SDK, against a local server that
speaks the Chat Completions protocol (pytest-httpserver): a good judgement, and each
way a judge fails (never a score then, always a reason)."""

from __future__ import annotations

import json

import pytest
from pytest_httpserver import HTTPServer

from agents.judge import CaseLine, Judgement, JudgeUnavailable, band, judge_call, judge_messages
from workflows.tests.fake_openai import chat_completion, tokens

SECRET = "sk-judge-0123456789abcdefghijklmnop"
PATH = "/v1/chat/completions"
GOOD = {
    "overall": 8,
    "clarity": 9,
    "specificity": 7,
    "safety": 10,
    "consistency": 8,
    "rationale": "Clearer goals; one case regressed.",
    "strengths": ["Explicit audience"],
    "weaknesses": ["Longer prompt"],
}


@pytest.fixture(autouse=True)
def no_retries(settings) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0


def completion(content: str | None, *, refusal: str | None = None, finish_reason: str = "stop") -> dict:
    return chat_completion(
        content, model="gpt-4.1-mini", finish_reason=finish_reason, usage=tokens(900, 80), refusal=refusal
    )


def call(server: HTTPServer) -> Judgement:
    messages = judge_messages(
        live_prompt="You are Camille.",
        candidate_prompt="You are Camille, a careful editor.",
        cases=[CaseLine(name="salue", live_passed=True, candidate_passed=False, candidate_answer="Salut")],
    )
    return judge_call(
        model="gpt-4.1-mini",
        base_url=server.url_for("/v1"),
        api_key=SECRET,
        timeout_seconds=5,
        max_output_tokens=None,
        messages=messages,
    )


def test_a_judgement_comes_back_as_structured_output(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion(json.dumps(GOOD)))

    judgement = call(httpserver)

    assert judgement == Judgement(**GOOD)
    body = json.loads(httpserver.log[0][0].get_data())
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {SECRET}"
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]
    assert schema["name"] == "Judgement" and schema["strict"] is True
    assert sorted(schema["schema"]["required"]) == sorted(GOOD)
    assert body["temperature"] == 0 and body["max_completion_tokens"] == 1500
    assert "## Proposed prompt\nYou are Camille, a careful editor." in body["messages"][1]["content"]
    assert "- salue: pass → fail; proposal answered: Salut" in body["messages"][1]["content"]


def test_a_judge_that_answers_an_error_is_unavailable_with_its_reason(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(
        {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "invalid_request_error"}}, status=401
    )

    with pytest.raises(JudgeUnavailable) as caught:
        call(httpserver)

    assert str(caught.value) == "The judge answered HTTP 401: Incorrect API key provided: [redacted]"


def test_a_judgement_outside_the_schema_is_refused(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion(json.dumps({**GOOD, "overall": 11})))

    with pytest.raises(JudgeUnavailable) as caught:
        call(httpserver)

    assert str(caught.value) == "The judge's answer is not a valid judgement: 1 validation error for Judgement"


def test_an_answer_that_is_not_json_is_refused(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion("Looks good to me!"))

    with pytest.raises(JudgeUnavailable) as caught:
        call(httpserver)

    assert str(caught.value).startswith("The judge's answer is not a valid judgement: ")


def test_a_refusal_is_unavailable(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion(None, refusal="I can't help."))

    with pytest.raises(JudgeUnavailable) as caught:
        call(httpserver)

    assert str(caught.value) == "The judge refused: I can't help."


def test_a_judge_nobody_answers_is_unavailable():
    with pytest.raises(JudgeUnavailable) as caught:
        judge_call(
            model="m",
            base_url="http://127.0.0.1:9/v1",
            api_key=SECRET,
            timeout_seconds=2,
            max_output_tokens=None,
            messages=[{"role": "user", "content": "x"}],
        )

    assert str(caught.value) == "Cannot reach the judge at http://127.0.0.1:9/v1."


@pytest.mark.parametrize(
    ("score", "label"),
    [
        (0, "critical"),
        (3, "critical"),
        (4, "improvable"),
        (6, "improvable"),
        (7, "good"),
        (8, "good"),
        (9, "exemplary"),
        (10, "exemplary"),
        (None, ""),
    ],
)
def test_score_bands(score, label):
    assert band(score) == label


def test_a_reasoning_model_gets_no_temperature(httpserver):
    httpserver.expect_request(PATH, method="POST").respond_with_json(completion(json.dumps(GOOD)))

    judge_call(
        model="o4-mini",
        base_url=httpserver.url_for("/v1"),
        api_key=SECRET,
        timeout_seconds=5,
        max_output_tokens=800,
        messages=[{"role": "user", "content": "x"}],
    )

    body = json.loads(httpserver.log[0][0].get_data())
    assert "temperature" not in body and body["max_completion_tokens"] == 800
