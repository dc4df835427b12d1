"""Anthropic's Messages API through the official `anthropic` SDK.

What goes out:

- the system prompt as two text blocks: the stable prefix, marked
  `cache_control: {"type": "ephemeral"}` (the cache breakpoint, so tools and prefix are
  cached), then the volatile part;
- user and assistant messages; an assistant's tool calls as `tool_use` blocks; tool
  results as `tool_result` blocks (`is_error` on a failed call), consecutive ones in a
  single user message as the API requires;
- tools as `{name, description, input_schema}`;
- `max_tokens` (required by the API): the preset's cap, else the catalog's maximum for
  the model, else 4096;
- `temperature` only when it differs from the API's default of 1.0: this SDK no longer
  takes it as an argument, the newest models refuse it, and the 4.x models refuse it
  together with `top_p`, which is therefore never sent;
- `service_tier`: the API knows `auto` (priority capacity when there is some) and
  `standard_only`; the policy's `auto` and `priority` ask for `auto`, `default` and
  `flex` (no flex tier here) for `standard_only`;
- `reasoning_effort` as `output_config.effort` (`minimal` has no equivalent: `low`);
  a model that takes no effort answers 400, which names it.
  `request.stream` is not used: the answer comes in one piece.

What comes back: text, tool calls, usage and the response as a JSON dict. Anthropic
counts cache reads and writes apart from `input_tokens`; both are added back so
`input_tokens` is every prompt token; cache reads are the cached part, cache writes
their own (priced at the catalog's `cache_write_per_mtok`). A body that is not a
Messages response is `invalid_response`.

Errors: 402, or a message about the credit balance, is `quota`; otherwise the status
decides. The SDK retries transient failures itself (`max_retries`, its own backoff).
A base URL (`request.base_url`) is for proxies and tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
from anthropic.types import Message as AnthropicMessage

from agents import catalog
from agents.runtime.providers.base import Message, ModelRequest, ModelResponse, ProviderError, ToolCall, Usage
from agents.runtime.providers.clients import ClientCache
from agents.runtime.providers.common import (
    kind_for_status,
    max_retries,
    provider_error,
    require_api_key,
    timeout_error,
    unreachable_error,
)
from agents.runtime.providers.deadline import Deadline, DeadlineClient, DeadlineExceeded, bounded_by

DEFAULT_MAX_TOKENS = 4096
API_DEFAULT_TEMPERATURE = 1.0
SERVICE_TIERS = {"auto": "auto", "priority": "auto", "default": "standard_only", "flex": "standard_only"}
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
# What `sent_parameters` reports: everything sent but the prompt itself.
NOT_PARAMETERS = ("system", "messages", "tools")
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


class _Client(DeadlineClient, anthropic.Anthropic):
    """The SDK's client, its attempts and retries bounded by the call's deadline."""


# One per configuration (see agents.runtime.providers.clients); timeouts come per call.
CLIENTS: ClientCache[_Client] = ClientCache(_Client)  # built from the configuration: base_url, api_key, max_retries


class AnthropicProvider:
    name = "anthropic"

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        """One Messages API call; `on_delta` (if given) receives the whole text once.
        Answers or fails within `request.timeout_seconds`, retries included."""
        require_api_key(request)
        deadline = Deadline(request.timeout_seconds)  # building a first client counts against it
        client = CLIENTS.get(base_url=request.base_url or None, api_key=request.api_key, max_retries=max_retries())
        try:
            with bounded_by(deadline):
                # A timeout given (each attempt's is then the time left): else the SDK
                # refuses a large max_tokens without streaming.
                message = client.messages.create(**_params(request), timeout=request.timeout_seconds)
        except DeadlineExceeded as exc:
            raise timeout_error(request, exc.after) from None
        except anthropic.AnthropicError as exc:
            # `from None`: the SDK's exception holds the request, and so its x-api-key header.
            raise _error(exc, request) from None
        except json.JSONDecodeError as exc:  # the SDK parses a JSON content type itself
            raise provider_error(ProviderError.INVALID_RESPONSE, f"The answer is not JSON ({exc}).", request) from None
        response = _response(message, request)
        if on_delta and response.text:
            on_delta(response.text)
        return response

    def sent_parameters(self, request: ModelRequest) -> dict[str, Any]:
        """The request's parameters as this adapter sends them (for the debug log)."""
        params = _params(request)
        sent = {key: value for key, value in params.items() if key not in (*NOT_PARAMETERS, "extra_body")}
        return {**sent, **params.get("extra_body", {})}


# --- request ----------------------------------------------------------------------------
def _params(request: ModelRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens or _model_max_tokens(request.model),
        "system": _system(request),
        "messages": _messages(request.messages),
    }
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    if request.service_tier in SERVICE_TIERS:
        params["service_tier"] = SERVICE_TIERS[request.service_tier]
    if request.reasoning_effort in EFFORTS:
        params["output_config"] = {"effort": EFFORTS[request.reasoning_effort]}
    if request.temperature != API_DEFAULT_TEMPERATURE:
        params["extra_body"] = {"temperature": request.temperature}
    return params


def _model_max_tokens(model: str) -> int:
    info = catalog.get_model("anthropic", model)
    return info.max_output_tokens if info else DEFAULT_MAX_TOKENS


def _system(request: ModelRequest) -> list[dict[str, Any]]:
    # The API refuses empty text blocks, hence the two conditions.
    blocks: list[dict[str, Any]] = []
    if request.system_prefix:
        blocks.append({"type": "text", "text": request.system_prefix, "cache_control": {"type": "ephemeral"}})
    if request.system_volatile:
        blocks.append({"type": "text", "text": request.system_volatile})
    return blocks


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            if out and out[-1]["role"] == "user" and _is_tool_results(out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(message)})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def _is_tool_results(content: object) -> bool:
    return isinstance(content, list) and all(block.get("type") == "tool_result" for block in content)


def _assistant_content(message: Message) -> str | list[dict[str, Any]]:
    if not message.tool_calls:
        return message.content
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments or {}}
        for call in message.tool_calls
    ]
    return blocks


# --- response ---------------------------------------------------------------------------
def _response(message: AnthropicMessage, request: ModelRequest) -> ModelResponse:
    if not isinstance(message, AnthropicMessage) or message.content is None:
        raise provider_error(ProviderError.INVALID_RESPONSE, "The server answered without a message.", request)
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = tuple(_tool_call(block) for block in message.content if block.type == "tool_use")
    reason = FINISH_REASONS.get(message.stop_reason or "end_turn", message.stop_reason)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=_usage(message.usage),
        finish_reason="tool_calls" if calls else reason,
        raw=message.model_dump(mode="json", exclude_none=True),
    )


def _tool_call(block: Any) -> ToolCall:
    arguments = block.input
    return ToolCall(
        id=block.id,
        name=block.name,
        arguments=arguments if isinstance(arguments, dict) else None,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    return Usage(
        input_tokens=(usage.input_tokens or 0) + cache_read + cache_write,
        output_tokens=usage.output_tokens or 0,
        cached_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
    )


# --- errors -----------------------------------------------------------------------------
def _error(exc: anthropic.AnthropicError, request: ModelRequest) -> ProviderError:
    if isinstance(exc, anthropic.APITimeoutError):
        return timeout_error(request)
    if isinstance(exc, anthropic.APIConnectionError):
        return unreachable_error(request, "the Anthropic API", exc.__cause__)
    if isinstance(exc, anthropic.APIStatusError):
        message = exc.api_message or exc.message
        kind = kind_for_status(exc.status_code)
        if exc.status_code == 402 or "credit balance" in str(message).lower():
            kind = ProviderError.QUOTA
        return provider_error(kind, message, request, status_code=exc.status_code)
    return provider_error(ProviderError.INVALID_RESPONSE, str(exc), request)
