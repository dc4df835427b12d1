"""The vendor adapters, each through its official SDK against a local server that speaks
the vendor's protocol (pytest-httpserver): what goes on the wire, what comes back, how
errors map, what is retried; then one turn through the real runtime."""

from __future__ import annotations

import json

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone
from pytest_httpserver import HTTPServer
from werkzeug import Request

from agents.models import AgentTurn, DebugLog
from agents.rendering import render_system_prompt
from agents.runtime import agent_turn_run
from agents.runtime.providers import get_provider
from agents.runtime.providers.base import Message, ModelRequest, ProviderError, ToolCall, ToolSpec, Usage
from agents.services import agent_create
from agents.tests.helpers import settled, sleeping
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset
from aihummer.tests.ports import free_port
from workflows.tests.fake_openai import chat_completion

SECRET = "sk-test-0123456789abcdefghijklmnop"
PREFIX = "You are Camille, a careful writer."
VOLATILE = "Today is 2026-11-30."
SEARCH = ToolSpec(
    name="search",
    description="Search the notes.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
GEMINI_PATH = "/v1/models/gemini-2.5-flash:generateContent"


@pytest.fixture
def no_retries(settings) -> None:
    settings.AIHUMMER_PROVIDER_MAX_RETRIES = 0


def make_request(base_url: str, model: str, **fields: object) -> ModelRequest:
    values = {
        "system_prefix": PREFIX,
        "system_volatile": VOLATILE,
        "messages": (Message(role="user", content="Hello"),),
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 100,
        "timeout_seconds": 5.0,
        "api_key": SECRET,
        **fields,
    }
    return ModelRequest(model=model, base_url=base_url, **values)


def bodies(server: HTTPServer) -> list[dict]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def tool_round_trip_messages(calls: tuple[ToolCall, ...]) -> tuple[Message, ...]:
    """What the runtime sends after running the calls: the first succeeded, the second was refused."""
    return (
        Message(role="user", content="Find cats"),
        Message(role="assistant", content="Let me look.", tool_calls=calls),
        Message(role="tool", content="3 notes about cats", tool_call_id=calls[0].id, tool_name="search"),
        Message(
            role="tool",
            content="Malformed arguments for 'search': send a JSON object.",
            tool_call_id=calls[1].id,
            tool_name="search",
            is_error=True,
        ),
    )


# --- OpenAI and compatible servers --------------------------------------------------------
def completion(message: dict, *, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    return chat_completion(**message, finish_reason=finish_reason, usage=usage)


def openai_error(message: str, code: str, error_type: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def test_openai_plain_answer_sends_prefix_first_and_maps_usage(httpserver):
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 3,
        "total_tokens": 1203,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    httpserver.expect_request(OPENAI_PATH, method="POST").respond_with_json(
        completion({"content": "Bonjour"}, usage=usage)
    )

    response = get_provider("openai").complete(make_request(httpserver.url_for("/v1"), "gpt-4.1"))

    assert bodies(httpserver) == [
        {
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": f"{PREFIX}\n\n{VOLATILE}"},
                {"role": "user", "content": "Hello"},
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 100,
        }
    ]
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {SECRET}"
    assert (response.text, response.tool_calls, response.finish_reason) == ("Bonjour", (), "stop")
    assert response.usage == Usage(input_tokens=1200, output_tokens=3, cached_input_tokens=1024)
    assert response.raw["id"] == "chatcmpl-1"
    assert response.raw["choices"][0]["message"]["content"] == "Bonjour"


def test_openai_answer_read_from_its_json_keeps_no_nulls_and_reads_a_body_labelled_as_text(httpserver):
    # The adapter reads the answer's JSON itself (not the SDK's typed objects): nulls are
    # left out of the logged body as the SDK's dump left them out, and a JSON body whose
    # content type says text is still an answer, as the SDK reads it for a typed one.
    body = completion({"content": "Bonjour", "refusal": None})
    body["system_fingerprint"] = None
    httpserver.expect_ordered_request(OPENAI_PATH, method="POST").respond_with_json(body)
    httpserver.expect_ordered_request(OPENAI_PATH, method="POST").respond_with_data(
        json.dumps(completion({"content": "Salut"})), content_type="text/plain"
    )
    request = make_request(httpserver.url_for("/v1"), "gpt-4.1")

    first, second = get_provider("openai").complete(request), get_provider("openai").complete(request)

    assert "system_fingerprint" not in first.raw
    assert first.raw["choices"][0]["message"] == {"role": "assistant", "content": "Bonjour"}
    assert (second.text, second.usage) == ("Salut", Usage(input_tokens=12, output_tokens=3))


@pytest.mark.parametrize("body", [{"id": "x", "choices": []}, {"id": "x"}, "not json at all"])
def test_openai_answer_without_a_choice_is_an_invalid_response(httpserver, body):
    respond = httpserver.expect_request(OPENAI_PATH, method="POST")
    if isinstance(body, str):
        respond.respond_with_data(body, content_type="text/plain")
    else:
        respond.respond_with_json(body)

    with pytest.raises(ProviderError) as raised:
        get_provider("openai").complete(make_request(httpserver.url_for("/v1"), "gpt-4.1"))

    assert raised.value.kind == ProviderError.INVALID_RESPONSE
    assert "The server answered without a choice: not a Chat Completions response." in raised.value.message


def test_openai_reasoning_model_on_openai_api_gets_effort_and_no_sampling(httpserver, monkeypatch):
    # No preset base URL: the SDK's own default applies, pointed here through its env variable.
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    httpserver.expect_request(OPENAI_PATH).respond_with_json(completion({"content": "OK"}))
    request = make_request("", "gpt-5-mini", reasoning_effort="low", service_tier="flex")

    get_provider("openai").complete(request)

    assert bodies(httpserver) == [
        {
            "model": "gpt-5-mini",
            "messages": [
                {"role": "system", "content": f"{PREFIX}\n\n{VOLATILE}"},
                {"role": "user", "content": "Hello"},
            ],
            "max_completion_tokens": 100,
            "reasoning_effort": "low",
            "service_tier": "flex",
        }
    ]


def test_openai_tool_call_round_trip(httpserver):
    tool_calls = [
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "cats"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": "cats, please"}},
    ]
    httpserver.expect_ordered_request(OPENAI_PATH).respond_with_json(
        completion({"content": "Let me look.", "tool_calls": tool_calls}, finish_reason="tool_calls")
    )
    httpserver.expect_ordered_request(OPENAI_PATH).respond_with_json(completion({"content": "Three notes."}))
    provider = get_provider("openai")
    url = httpserver.url_for("/v1")

    first = provider.complete(make_request(url, "gpt-4.1", tools=(SEARCH,)))
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls == (
        ToolCall(id="call_1", name="search", arguments={"q": "cats"}, raw_arguments='{"q": "cats"}'),
        ToolCall(id="call_2", name="search", arguments=None, raw_arguments="cats, please"),
    )
    second = provider.complete(
        make_request(url, "gpt-4.1", tools=(SEARCH,), messages=tool_round_trip_messages(first.tool_calls))
    )

    sent = bodies(httpserver)[1]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search the notes.", "parameters": SEARCH.parameters},
        }
    ]
    assert sent["messages"][1:] == [
        {"role": "user", "content": "Find cats"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": tool_calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 notes about cats"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Malformed arguments for 'search': send a JSON object."},
    ]
    assert second.text == "Three notes."


def test_openai_retries_a_429_then_succeeds(httpserver):
    # retry-after-ms is the SDK's own knob for its backoff: keeps the test fast.
    httpserver.expect_ordered_request(OPENAI_PATH).respond_with_json(
        openai_error("Rate limit reached for gpt-4.1.", "rate_limit_exceeded", "requests"),
        status=429,
        headers={"retry-after-ms": "10"},
    )
    httpserver.expect_ordered_request(OPENAI_PATH).respond_with_json(completion({"content": "Bonjour"}))

    response = get_provider("openai").complete(make_request(httpserver.url_for("/v1"), "gpt-4.1"))

    assert response.text == "Bonjour"
    assert len(httpserver.log) == 2


def test_openai_401_is_auth_without_the_key_and_not_retried(httpserver):
    httpserver.expect_request(OPENAI_PATH).respond_with_json(
        openai_error(f"Incorrect API key provided: {SECRET}.", "invalid_api_key"), status=401
    )

    with pytest.raises(ProviderError) as caught:
        get_provider("openai").complete(make_request(httpserver.url_for("/v1"), "gpt-4.1"))

    assert (caught.value.kind, caught.value.status_code) == (ProviderError.AUTH, 401)
    assert caught.value.message == "Incorrect API key provided: [redacted]."
    assert SECRET not in str(caught.value)
    assert len(httpserver.log) == 1


def test_openai_insufficient_quota_is_quota(httpserver, no_retries):
    message = "You exceeded your current quota, please check your plan and billing details."
    httpserver.expect_request(OPENAI_PATH).respond_with_json(
        openai_error(message, "insufficient_quota", "insufficient_quota"), status=429
    )

    with pytest.raises(ProviderError) as caught:
        get_provider("openai").complete(make_request(httpserver.url_for("/v1"), "gpt-4.1"))

    assert (caught.value.kind, caught.value.message, caught.value.status_code) == (ProviderError.QUOTA, message, 429)


def sse(*chunks: dict) -> str:
    return "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"


def chunk(delta: dict | None, finish_reason: str | None = None, usage: dict | None = None) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    data = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": choices}
    return {**data, "usage": usage} if usage else data


def test_openai_streamed_answer_is_assembled_with_deltas_in_order(httpserver):
    fragments = [
        {"index": 0, "id": "call_9", "type": "function", "function": {"name": "search", "arguments": '{"q": '}},
        {"index": 0, "function": {"arguments": '"cats"}'}},
    ]
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let me "}),
        chunk({"content": "look."}),
        chunk({"tool_calls": fragments[:1]}),
        chunk({"tool_calls": fragments[1:]}, finish_reason="tool_calls"),
        chunk(None, usage={"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}),
    )
    httpserver.expect_request(OPENAI_PATH).respond_with_data(body, content_type="text/event-stream")
    deltas: list[str] = []

    response = get_provider("openai").complete(
        make_request(httpserver.url_for("/v1"), "gpt-4.1", stream=True, tools=(SEARCH,)), on_delta=deltas.append
    )

    sent = bodies(httpserver)[0]
    assert (sent["stream"], sent["stream_options"]) == (True, {"include_usage": True})
    assert deltas == ["Let me ", "look."]
    assert response.text == "Let me look."
    assert response.tool_calls == (
        ToolCall(id="call_9", name="search", arguments={"q": "cats"}, raw_arguments='{"q": "cats"}'),
    )
    assert (response.finish_reason, response.usage) == ("tool_calls", Usage(input_tokens=40, output_tokens=9))
    assert response.raw["choices"][0]["message"]["content"] == "Let me look."


# --- Anthropic ----------------------------------------------------------------------------
def message(content: list[dict], *, stop_reason: str = "end_turn", usage: dict | None = None) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 3},
    }


def anthropic_error(status_type: str, text: str) -> dict:
    return {"type": "error", "error": {"type": status_type, "message": text}}


def test_anthropic_plain_answer_puts_the_cache_breakpoint_after_the_prefix(httpserver):
    usage = {"input_tokens": 20, "output_tokens": 3, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 1000}
    httpserver.expect_request(ANTHROPIC_PATH, method="POST").respond_with_json(
        message([{"type": "text", "text": "Bonjour"}], usage=usage)
    )

    response = get_provider("anthropic").complete(make_request(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert bodies(httpserver) == [
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 100,
            "system": [
                {"type": "text", "text": PREFIX, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": VOLATILE},
            ],
            "messages": [{"role": "user", "content": "Hello"}],
            "temperature": 0.2,
        }
    ]
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {SECRET}"
    assert (response.text, response.finish_reason) == ("Bonjour", "stop")
    # Cache reads and writes are prompt tokens too: input_tokens counts all of them.
    assert response.usage == Usage(
        input_tokens=1050, output_tokens=3, cached_input_tokens=1000, cache_write_input_tokens=30
    )
    assert response.raw["usage"]["cache_read_input_tokens"] == 1000


def test_anthropic_tool_call_round_trip(httpserver):
    first_content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "cats"}},
        {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {}},
    ]
    httpserver.expect_ordered_request(ANTHROPIC_PATH).respond_with_json(message(first_content, stop_reason="tool_use"))
    httpserver.expect_ordered_request(ANTHROPIC_PATH).respond_with_json(message([{"type": "text", "text": "Three."}]))
    provider = get_provider("anthropic")
    url = httpserver.url_for("/")
    # Temperature at the API's default and no output cap: neither is sent, the catalog's maximum is.
    fields = {"tools": (SEARCH,), "temperature": 1.0, "max_output_tokens": None}

    first = provider.complete(make_request(url, "claude-haiku-4-5", **fields))
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls == (
        ToolCall(id="toolu_1", name="search", arguments={"q": "cats"}, raw_arguments='{"q": "cats"}'),
        ToolCall(id="toolu_2", name="search", arguments={}, raw_arguments="{}"),
    )
    provider.complete(
        make_request(url, "claude-haiku-4-5", messages=tool_round_trip_messages(first.tool_calls), **fields)
    )

    sent = bodies(httpserver)[1]
    assert sent["tools"] == [{"name": "search", "description": "Search the notes.", "input_schema": SEARCH.parameters}]
    assert "temperature" not in sent
    assert sent["max_tokens"] == 64000
    assert sent["messages"] == [
        {"role": "user", "content": "Find cats"},
        {"role": "assistant", "content": first_content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 notes about cats"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Malformed arguments for 'search': send a JSON object.",
                    "is_error": True,
                },
            ],
        },
    ]


def test_anthropic_retries_a_429_then_succeeds(httpserver):
    httpserver.expect_ordered_request(ANTHROPIC_PATH).respond_with_json(
        anthropic_error("rate_limit_error", "Number of requests has exceeded your rate limit."),
        status=429,
        headers={"retry-after-ms": "10"},
    )
    httpserver.expect_ordered_request(ANTHROPIC_PATH).respond_with_json(message([{"type": "text", "text": "Hi"}]))

    response = get_provider("anthropic").complete(make_request(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert response.text == "Hi"
    assert len(httpserver.log) == 2


def test_anthropic_401_is_auth_and_not_retried(httpserver):
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_json(
        anthropic_error("authentication_error", "invalid x-api-key"), status=401
    )

    with pytest.raises(ProviderError) as caught:
        get_provider("anthropic").complete(make_request(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert (caught.value.kind, caught.value.message, caught.value.status_code) == (
        ProviderError.AUTH,
        "invalid x-api-key",
        401,
    )
    assert len(httpserver.log) == 1


@pytest.mark.parametrize(
    ("status", "error_type", "text"),
    [
        (400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
        (402, "billing_error", "Payment required: add credits to your account."),
    ],
)
def test_anthropic_credit_balance_and_402_are_quota(httpserver, status, error_type, text):
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_json(anthropic_error(error_type, text), status=status)

    with pytest.raises(ProviderError) as caught:
        get_provider("anthropic").complete(make_request(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert (caught.value.kind, caught.value.message) == (ProviderError.QUOTA, text)
    assert len(httpserver.log) == 1


# --- Gemini -------------------------------------------------------------------------------
def generated(parts: list[dict], *, finish_reason: str = "STOP", usage: dict | None = None) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
        "usageMetadata": usage or {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    }


def gemini_error(code: int, status: str, text: str, details: list | None = None) -> dict:
    return {"error": {"code": code, "message": text, "status": status, "details": details or []}}


def test_gemini_plain_answer_sends_prefix_first_and_maps_usage(httpserver):
    usage = {
        "promptTokenCount": 1200,
        "candidatesTokenCount": 3,
        "thoughtsTokenCount": 40,
        "cachedContentTokenCount": 1024,
        "totalTokenCount": 1243,
    }
    httpserver.expect_request(GEMINI_PATH, method="POST").respond_with_json(
        generated([{"text": "Bonjour"}], usage=usage)
    )

    response = get_provider("gemini").complete(make_request(httpserver.url_for("/"), "gemini-2.5-flash"))

    assert bodies(httpserver) == [
        {
            "contents": [{"parts": [{"text": "Hello"}], "role": "user"}],
            "systemInstruction": {"parts": [{"text": f"{PREFIX}\n\n{VOLATILE}"}], "role": "user"},
            "generationConfig": {"temperature": 0.2, "topP": 0.9, "maxOutputTokens": 100},
        }
    ]
    assert httpserver.log[0][0].headers["x-goog-api-key"] == SECRET
    assert (response.text, response.finish_reason) == ("Bonjour", "stop")
    # Thinking tokens are billed as output.
    assert response.usage == Usage(input_tokens=1200, output_tokens=43, cached_input_tokens=1024)
    assert response.raw["response_id"] == "resp-1"


def test_gemini_tool_call_round_trip(httpserver):
    httpserver.expect_ordered_request(GEMINI_PATH).respond_with_json(
        generated(
            [
                {"text": "Let me look."},
                {"functionCall": {"name": "search", "args": {"q": "cats"}}},
                {"functionCall": {"id": "fc-2", "name": "search", "args": {}}},
            ]
        )
    )
    httpserver.expect_ordered_request(GEMINI_PATH).respond_with_json(generated([{"text": "Three."}]))
    provider = get_provider("gemini")
    url = httpserver.url_for("/")

    first = provider.complete(make_request(url, "gemini-2.5-flash", tools=(SEARCH,)))
    # Gemini may send no call id: one is made up for the runtime, and never sent back.
    assert first.tool_calls == (
        ToolCall(id="gemini-call-0", name="search", arguments={"q": "cats"}, raw_arguments='{"q": "cats"}'),
        ToolCall(id="fc-2", name="search", arguments={}, raw_arguments="{}"),
    )
    assert first.finish_reason == "tool_calls"
    provider.complete(
        make_request(url, "gemini-2.5-flash", tools=(SEARCH,), messages=tool_round_trip_messages(first.tool_calls))
    )

    sent = bodies(httpserver)[1]
    assert sent["tools"] == [
        {
            "functionDeclarations": [
                {"description": "Search the notes.", "name": "search", "parameters_json_schema": SEARCH.parameters}
            ]
        }
    ]
    assert sent["contents"] == [
        {"parts": [{"text": "Find cats"}], "role": "user"},
        {
            "parts": [
                {"text": "Let me look."},
                {"functionCall": {"args": {"q": "cats"}, "name": "search"}},
                {"functionCall": {"id": "fc-2", "args": {}, "name": "search"}},
            ],
            "role": "model",
        },
        {
            "parts": [
                {"functionResponse": {"name": "search", "response": {"output": "3 notes about cats"}}},
                {
                    "functionResponse": {
                        "id": "fc-2",
                        "name": "search",
                        "response": {"error": "Malformed arguments for 'search': send a JSON object."},
                    }
                },
            ],
            "role": "user",
        },
    ]


def test_gemini_retries_a_429_then_succeeds(httpserver):
    httpserver.expect_ordered_request(GEMINI_PATH).respond_with_json(
        gemini_error(429, "RESOURCE_EXHAUSTED", "Too many requests, slow down."), status=429
    )
    httpserver.expect_ordered_request(GEMINI_PATH).respond_with_json(generated([{"text": "Hi"}]))

    response = get_provider("gemini").complete(make_request(httpserver.url_for("/"), "gemini-2.5-flash"))

    assert response.text == "Hi"
    assert len(httpserver.log) == 2


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, gemini_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")),
        (
            400,
            gemini_error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
            ),
        ),
    ],
)
def test_gemini_bad_key_is_auth_and_not_retried(httpserver, status, error):
    httpserver.expect_request(GEMINI_PATH).respond_with_json(error, status=status)

    with pytest.raises(ProviderError) as caught:
        get_provider("gemini").complete(make_request(httpserver.url_for("/"), "gemini-2.5-flash"))

    assert (caught.value.kind, caught.value.message) == (ProviderError.AUTH, error["error"]["message"])
    assert len(httpserver.log) == 1


def test_gemini_exhausted_quota_is_quota(httpserver, no_retries):
    text = "You exceeded your current quota, please check your plan and billing details."
    httpserver.expect_request(GEMINI_PATH).respond_with_json(gemini_error(429, "RESOURCE_EXHAUSTED", text), status=429)

    with pytest.raises(ProviderError) as caught:
        get_provider("gemini").complete(make_request(httpserver.url_for("/"), "gemini-2.5-flash"))

    assert (caught.value.kind, caught.value.message, caught.value.status_code) == (ProviderError.QUOTA, text, 429)


# --- every vendor ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("vendor", "path", "base", "model"),
    [
        ("openai", OPENAI_PATH, "/v1", "gpt-4.1"),
        ("anthropic", ANTHROPIC_PATH, "/", "claude-haiku-4-5"),
        ("gemini", GEMINI_PATH, "/", "gemini-2.5-flash"),
    ],
)
def test_an_answer_later_than_the_timeout_is_a_timeout(httpserver, no_retries, vendor, path, base, model):
    seen: list[Request] = []
    httpserver.expect_request(path).respond_with_handler(sleeping(1.0, seen))

    with pytest.raises(ProviderError) as caught:
        get_provider(vendor).complete(make_request(httpserver.url_for(base), model, timeout_seconds=0.5))

    assert (caught.value.kind, caught.value.message) == (ProviderError.TIMEOUT, "No answer within 0.5 s.")
    assert settled(httpserver, seen) == 1


@pytest.mark.parametrize(
    ("vendor", "path", "model"),
    [("openai", "/v1", "gpt-4.1"), ("anthropic", "/", "claude-haiku-4-5"), ("gemini", "/", "gemini-2.5-flash")],
)
def test_a_server_nobody_listens_on_is_unavailable_and_named(no_retries, vendor, path, model) -> None:
    base_url = f"http://127.0.0.1:{free_port()}{path}"

    with pytest.raises(ProviderError) as caught:
        get_provider(vendor).complete(make_request(base_url, model))

    assert caught.value.kind == ProviderError.UNAVAILABLE
    assert caught.value.message.startswith(f"Cannot reach {base_url} (")
    assert caught.value.message.endswith(").")


# --- through the runtime ------------------------------------------------------------------
@pytest.fixture
def local_agent(workspace, ada, httpserver):
    """An agent on an `openai` preset whose base URL is the local server, its key in the vault."""
    actor = Actor.for_user(ada)
    vault_preset(workspace, httpserver.url_for("/v1"), secret=SECRET, by=actor, is_active=True)
    return agent_create(
        workspace=workspace, actor=actor, key="writer", name="Writer", snapshot={"system_prompt": PREFIX}
    )


def debug_log_json(turn: AgentTurn) -> str:
    return json.dumps(model_to_dict(DebugLog.all_objects.get(turn=turn)), default=str)


def test_runtime_turn_through_the_openai_adapter_logs_usage_and_no_key(httpserver, local_agent, ada):
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 4,
        "total_tokens": 54,
        "prompt_tokens_details": {"cached_tokens": 32},
    }
    httpserver.expect_request(OPENAI_PATH).respond_with_json(completion({"content": "Bonjour"}, usage=usage))

    turn = agent_turn_run(agent=local_agent, message="Hello", actor=Actor.for_user(ada))

    assert (turn.status, turn.answer, turn.error) == ("succeeded", "Bonjour", "")
    rendered = render_system_prompt(local_agent.live_version.snapshot, first_turn=True, today=timezone.localdate())
    assert bodies(httpserver)[0]["messages"][0] == {
        "role": "system",
        "content": f"{rendered.prefix}\n\n{rendered.volatile}",
    }
    assert httpserver.log[0][0].headers["Authorization"] == f"Bearer {SECRET}"
    log = DebugLog.all_objects.get(turn=turn)
    assert (log.input_tokens, log.output_tokens, log.cached_input_tokens) == (50, 4, 32)
    assert (turn.input_tokens, turn.output_tokens, turn.cached_input_tokens) == (50, 4, 32)
    assert log.response["choices"][0]["message"]["content"] == "Bonjour"
    assert SECRET not in debug_log_json(turn)


def test_runtime_turn_fails_with_the_mapped_error_on_a_401(httpserver, local_agent, ada):
    httpserver.expect_request(OPENAI_PATH).respond_with_json(
        openai_error(f"Incorrect API key provided: {SECRET}.", "invalid_api_key"), status=401
    )

    turn = agent_turn_run(agent=local_agent, message="Hello", actor=Actor.for_user(ada))

    expected = "Provider error (auth): Incorrect API key provided: [redacted]."
    assert (turn.status, turn.error) == ("failed", expected)
    log = DebugLog.all_objects.get(turn=turn)
    assert (log.error, log.finish_reason) == (expected, "error")
    assert SECRET not in debug_log_json(turn)
    assert len(httpserver.log) == 1
