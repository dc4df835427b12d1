"""Parameters that are accepted are sent, and the debug log's "parameters sent" is what
went on the wire: reasoning effort and service tier to every vendor that takes them,
Gemini's thought signatures back with their tool calls, Anthropic's cache writes at
their own price, and a body that is not an answer mapped, never a crash."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from agents import catalog
from agents.models import DebugLog
from agents.runtime import agent_turn_run
from agents.runtime.providers import get_provider
from agents.runtime.providers.base import Message, ModelRequest, ProviderError, ToolCall, Usage
from agents.services import agent_create
from aihummer.actors import Actor
from aihummer.tests.factories import vault_preset

SECRET = "sk-test-0123456789abcdefghijklmnop"
ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"


def request_for(base_url: str, model: str, **fields: object) -> ModelRequest:
    values = {
        "system_prefix": "You are terse.",
        "system_volatile": "",
        "messages": (Message(role="user", content="Hello"),),
        "temperature": 0.2,
        "max_output_tokens": 100,
        "api_key": SECRET,
        **fields,
    }
    return ModelRequest(model=model, base_url=base_url, **values)


def body(server) -> dict:
    return json.loads(server.log[-1][0].get_data())


def anthropic_message(text: str = "OK") -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


def gemini_answer(parts: list[dict]) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
    }


def test_anthropic_gets_effort_and_service_tier_and_logs_what_it_sent(httpserver):
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_json(anthropic_message())
    provider = get_provider("anthropic")
    request = request_for(
        httpserver.url_for("/"), "claude-haiku-4-5", reasoning_effort="minimal", service_tier="priority"
    )

    provider.complete(request)

    sent = body(httpserver)
    assert (sent["output_config"], sent["service_tier"]) == ({"effort": "low"}, "auto")
    assert provider.sent_parameters(request) == {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "service_tier": "auto",
        "output_config": {"effort": "low"},
        "temperature": 0.2,
    }
    assert provider.sent_parameters(request) == {
        key: value for key, value in sent.items() if key not in ("system", "messages")
    }


@pytest.mark.parametrize(
    ("model", "thinking"),
    [("gemini-2.5-flash", {"thinking_budget": 8192}), ("gemini-3-pro-preview", {"thinking_level": "MEDIUM"})],
)
def test_gemini_gets_thinking_and_service_tier_and_logs_what_it_sent(httpserver, model, thinking):
    httpserver.expect_request(f"/v1/models/{model}:generateContent").respond_with_json(gemini_answer([{"text": "OK"}]))
    provider = get_provider("gemini")
    request = request_for(httpserver.url_for("/"), model, reasoning_effort="medium", service_tier="flex")

    provider.complete(request)

    sent = body(httpserver)
    assert sent["serviceTier"] == "flex"
    assert sent["generationConfig"]["thinkingConfig"] == thinking  # this SDK writes its keys in snake case
    assert provider.sent_parameters(request) == {
        "model": model,
        "temperature": 0.2,
        "top_p": 0.95,
        "max_output_tokens": 100,
        "thinking_config": thinking,
        "service_tier": "flex",
    }


def test_gemini_auto_tier_and_no_effort_send_neither(httpserver):
    httpserver.expect_request("/v1/models/gemini-2.5-flash:generateContent").respond_with_json(
        gemini_answer([{"text": "OK"}])
    )

    get_provider("gemini").complete(request_for(httpserver.url_for("/"), "gemini-2.5-flash", service_tier="auto"))

    sent = body(httpserver)
    assert "serviceTier" not in sent
    assert "thinkingConfig" not in sent["generationConfig"]


def test_gemini_thought_signatures_go_back_with_their_tool_calls(httpserver):
    path = "/v1/models/gemini-2.5-flash:generateContent"
    call = {"functionCall": {"id": "fc-1", "name": "search", "args": {"q": "cats"}}, "thoughtSignature": "c2lnLTE="}
    httpserver.expect_ordered_request(path).respond_with_json(gemini_answer([call]))
    httpserver.expect_ordered_request(path).respond_with_json(gemini_answer([{"text": "Three notes."}]))
    provider = get_provider("gemini")
    url = httpserver.url_for("/")

    first = provider.complete(request_for(url, "gemini-2.5-flash"))
    assert first.tool_calls == (
        ToolCall(
            id="fc-1", name="search", arguments={"q": "cats"}, raw_arguments='{"q": "cats"}', signature="c2lnLTE="
        ),
    )
    history = (
        Message(role="user", content="Find cats"),
        Message(role="assistant", content="", tool_calls=first.tool_calls),
        Message(role="tool", content="3 notes", tool_call_id="fc-1", tool_name="search"),
    )
    provider.complete(request_for(url, "gemini-2.5-flash", messages=history))

    model_turn = json.loads(httpserver.log[1][0].get_data())["contents"][1]
    assert model_turn == {
        "parts": [
            {"functionCall": {"id": "fc-1", "args": {"q": "cats"}, "name": "search"}, "thoughtSignature": "c2lnLTE="}
        ],
        "role": "model",
    }


def test_anthropic_cache_writes_are_priced_at_their_own_rate(httpserver):
    usage = {"input_tokens": 20, "output_tokens": 3, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 0}
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_json({**anthropic_message(), "usage": usage})

    response = get_provider("anthropic").complete(request_for(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert response.usage == Usage(input_tokens=1020, output_tokens=3, cache_write_input_tokens=1000)
    info = catalog.get_model("anthropic", "claude-haiku-4-5")
    assert info.cache_write_per_mtok == Decimal("1.25")
    # 20 input at $1, 1000 written at $1.25, 3 output at $5 per million tokens.
    assert catalog.cost_usd(info, input_tokens=1020, output_tokens=3, cache_write_input_tokens=1000) == Decimal(
        "0.001285"
    )


@pytest.mark.parametrize(
    ("payload", "content_type", "message"),
    [
        ("not json", "application/json", "The answer is not JSON (Expecting value: line 1 column 1 (char 0))."),
        ("<html>Bad gateway</html>", "text/html", "The server answered without a message."),
    ],
)
def test_anthropic_unparseable_body_is_invalid_response(httpserver, payload, content_type, message):
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_data(payload, content_type=content_type)

    with pytest.raises(ProviderError) as caught:
        get_provider("anthropic").complete(request_for(httpserver.url_for("/"), "claude-haiku-4-5"))

    assert (caught.value.kind, caught.value.message) == (ProviderError.INVALID_RESPONSE, message)


def test_openai_logs_what_it_sent(httpserver):
    request = request_for("http://127.0.0.1:1/v1", "gpt-5-mini", reasoning_effort="low", service_tier="flex")

    assert get_provider("openai").sent_parameters(request) == {
        "model": "gpt-5-mini",
        "max_completion_tokens": 100,
        "reasoning_effort": "low",
        "service_tier": "flex",
    }
    assert get_provider("echo").sent_parameters(request) == {"model": "gpt-5-mini"}


def test_a_turns_debug_log_records_the_parameters_the_adapter_sent(httpserver, monkeypatch, workspace, ada, alice):
    actor = Actor.for_user(ada)
    preset = vault_preset(
        workspace,
        secret=SECRET,
        key="claude",
        provider_name="anthropic",
        model="claude-haiku-4-5",
        by=actor,
        max_output_tokens=200,
        temperature=0.3,
    )
    # Anthropic takes no base URL from a preset: the SDK's own variable points it here.
    snapshot = {"identity": {"name": "A"}, "runtime_policy": {"app": {"reasoning_effort": "high"}}}
    agent = agent_create(workspace=workspace, actor=actor, key="a", name="A", preset=preset, snapshot=snapshot)
    httpserver.expect_request(ANTHROPIC_PATH).respond_with_json(anthropic_message())
    monkeypatch.setenv("ANTHROPIC_BASE_URL", httpserver.url_for("/"))

    turn = agent_turn_run(agent=agent, message="Hello", actor=Actor.for_user(alice))

    assert turn.status == "succeeded", turn.error
    sent = body(httpserver)
    assert (
        DebugLog.objects.get(turn=turn).parameters
        == {key: value for key, value in sent.items() if key not in ("system", "messages")}
        == {"model": "claude-haiku-4-5", "max_tokens": 200, "output_config": {"effort": "high"}, "temperature": 0.3}
    )
