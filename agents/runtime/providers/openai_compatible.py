"""OpenAI, and servers that speak its Chat Completions protocol (vLLM, Ollama, LM
Studio…), through the official `openai` SDK. A preset's base URL points it at such a
server; without one the SDK talks to OpenAI.

What goes out:

- one system message: the stable prefix first and unchanged, then a blank line and the
  volatile part (OpenAI caches the longest identical prompt prefix by itself);
- user and assistant messages; an assistant's tool calls as `tool_calls` (`type:
  "function"`, arguments as the JSON text the model wrote); tool results as role `tool`
  messages. The format has no error flag: a failed tool's text says so itself;
- tools as `{"type": "function", "function": {name, description, parameters}}`;
- `temperature` and `top_p`, except to OpenAI reasoning models (o-series, gpt-5), which
  refuse them; `reasoning_effort` and `service_tier` when set (a model that does not take
  them answers with a bad-request error that says so);
- the output cap as `max_completion_tokens` to OpenAI's own API and to reasoning models,
  as `max_tokens` to other models on a compatible server (the name they all read).

What comes back: the text, tool calls (arguments that are not a JSON object give
`arguments=None` with the raw text kept), usage (`prompt_tokens` counts cached tokens
too; `prompt_tokens_details.cached_tokens` is the cached part) and the response as a
JSON dict. With `request.stream` the answer is streamed: text deltas (passed to
`on_delta` in order) and tool-call fragments are assembled into the same response, and
usage comes in the last chunk (`stream_options.include_usage`).

Errors: a 429 whose code is `insufficient_quota` is `quota`; otherwise the status
decides (`agents.runtime.providers.common.kind_for_status`). Transient failures are retried by the SDK
itself (`max_retries`, its own backoff, honouring `retry-after`); note that it retries a
429 even when it means an exhausted quota.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

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

# o1, o3, o4-mini, gpt-5, gpt-5-mini… but not gpt-5-chat-latest, a plain chat model.
REASONING_MODEL = re.compile(r"^(o\d|gpt-5)(?!.*-chat)")


class _Client(DeadlineClient, openai.OpenAI):
    """The SDK's client, its attempts and retries bounded by the call's deadline."""


# The per-attempt timeout comes from each call's deadline: not part of the configuration.
CLIENTS: ClientCache[_Client] = ClientCache(_Client)  # built from the configuration: base_url, api_key, max_retries


class OpenAICompatibleProvider:
    name = "openai"

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        """One Chat Completions call (streamed when `request.stream`); `on_delta` receives
        the answer's text as it arrives: delta by delta when streaming, whole otherwise.
        Answers or fails within `request.timeout_seconds`, retries included."""
        require_api_key(request)
        deadline = Deadline(request.timeout_seconds)  # building a first client counts against it
        client = CLIENTS.get(base_url=request.base_url or None, api_key=request.api_key, max_retries=max_retries())
        try:
            with bounded_by(deadline):
                if request.stream:
                    return _streamed(client, request, on_delta, deadline)
                completion = _post(client, _params(request))
        except DeadlineExceeded as exc:
            raise timeout_error(request, exc.after) from None
        except openai.OpenAIError as exc:
            # `from None`: the SDK's exception holds the request, and so its Authorization header.
            raise _error(exc, request) from None
        except json.JSONDecodeError as exc:  # a streamed chunk the SDK could not parse
            raise provider_error(
                ProviderError.INVALID_RESPONSE, f"A streamed chunk is not JSON ({exc}).", request
            ) from None
        response = _response(completion, request)
        if on_delta and response.text:
            on_delta(response.text)
        return response

    def sent_parameters(self, request: ModelRequest) -> dict[str, Any]:
        """The request's parameters as this adapter sends them (for the debug log)."""
        return {key: value for key, value in _params(request).items() if key not in ("messages", "tools")}


# --- request ----------------------------------------------------------------------------
def _post(client: openai.OpenAI, params: dict[str, Any]) -> object | openai.Stream[ChatCompletionChunk]:
    """`chat.completions.create(**params)` through the SDK's `post` (its documented way
    to any endpoint), as `create` itself ends: `create` first re-validates and
    re-transforms its keyword arguments against their typed definitions, about 1 ms of
    CPU per call (40 % of the SDK's share of a call), for parameters built here as
    plain JSON already (no aliases, no files, nothing to transform). A whole answer
    comes back as its JSON (`cast_to=object`): read here as it is, not built into the
    SDK's typed objects and dumped back to JSON for the debug log (a sixth of the
    SDK's share of a call)."""
    options = {"security": {"bearer_auth": True}}  # the API key, as `create` asks for it
    if params.get("stream"):
        return client.post(
            "/chat/completions",
            body=params,
            cast_to=ChatCompletion,
            options=options,
            stream=True,
            stream_cls=openai.Stream[ChatCompletionChunk],
        )
    return client.post("/chat/completions", body=params, cast_to=object, options=options)


def _params(request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for `request`."""
    reasoning = bool(REASONING_MODEL.match(request.model))
    params: dict[str, Any] = {"model": request.model, "messages": _messages(request)}
    if request.tools:
        params["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if not reasoning:
        params["temperature"] = request.temperature
        params["top_p"] = request.top_p
    if request.max_output_tokens is not None:
        cap = "max_completion_tokens" if reasoning or not request.base_url else "max_tokens"
        params[cap] = request.max_output_tokens
    if request.reasoning_effort is not None:
        params["reasoning_effort"] = request.reasoning_effort
    if request.service_tier is not None:
        params["service_tier"] = request.service_tier
    if request.stream:
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
    return params


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system_text}] if request.system_text else []
    for message in request.messages:
        if message.role == "tool":
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        elif message.role == "assistant":
            messages.append(_assistant(message))
        else:
            messages.append({"role": "user", "content": message.content})
    return messages


def _assistant(message: Message) -> dict[str, Any]:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    return {
        "role": "assistant",
        "content": message.content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments or json.dumps(call.arguments or {})},
            }
            for call in message.tool_calls
        ],
    }


# --- response ---------------------------------------------------------------------------
def _response(completion: object, request: ModelRequest) -> ModelResponse:
    """The answer from the response's JSON (the SDK gives the text of a body not
    labelled JSON: read as JSON too, as the SDK reads it for a typed answer)."""
    if isinstance(completion, str):
        with contextlib.suppress(json.JSONDecodeError):  # not JSON: no choice in it either
            completion = json.loads(completion)
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise provider_error(
            ProviderError.INVALID_RESPONSE,
            "The server answered without a choice: not a Chat Completions response.",
            request,
        )
    choice = choices[0]
    message = choice.get("message")  # none is the adapter's failure, as it was with the SDK's objects
    calls = tuple(
        _tool_call(call.get("id"), function.get("name"), function.get("arguments"), index)
        for index, call in enumerate(message.get("tool_calls") or ())
        # custom (non-function) tools are never offered
        if isinstance(call, dict) and isinstance(function := call.get("function"), dict)
    )
    return ModelResponse(
        text=message.get("content") or "",
        tool_calls=calls,
        usage=_usage(completion.get("usage")),
        finish_reason=_finish_reason(choice.get("finish_reason"), calls),
        raw=_without_none(completion),
    )


def _without_none(value: Any) -> Any:
    """The JSON without its null members, as the SDK's `model_dump(exclude_none=True)`
    gave the debug log."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


def _tool_call(call_id: str | None, name: str, raw_arguments: str | None, index: int) -> ToolCall:
    """A ToolCall from the JSON text the model wrote; not a JSON object → arguments=None."""
    raw = raw_arguments or ""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        arguments = None
    # Some compatible servers send no id; the runtime needs one to pair call and result.
    return ToolCall(
        id=call_id or f"call_{index}",
        name=name,
        arguments=arguments if isinstance(arguments, dict) else None,
        raw_arguments=raw,
    )


def _usage(usage: dict[str, Any] | None) -> Usage:
    """Usage from its JSON (`usage` of a response or of a stream's last chunk)."""
    if not isinstance(usage, dict):
        return Usage()
    prompt = usage.get("prompt_tokens") or 0
    details = usage.get("prompt_tokens_details")
    cached = (details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(
        input_tokens=prompt, output_tokens=usage.get("completion_tokens") or 0, cached_input_tokens=min(cached, prompt)
    )


def _finish_reason(reason: str | None, calls: tuple[ToolCall, ...]) -> str:
    if calls:
        return "tool_calls"
    return reason or "stop"


# --- streaming --------------------------------------------------------------------------
def _streamed(
    client: openai.OpenAI, request: ModelRequest, on_delta: Callable[[str], None] | None, deadline: Deadline
) -> ModelResponse:
    text: list[str] = []
    fragments: dict[int, dict[str, str]] = {}
    meta: dict[str, Any] = {}
    finish, usage = None, None
    with _post(client, _params(request)) as stream:
        for chunk in stream:
            if deadline.remaining() <= 0:  # each read is bounded; a trickle of chunks is not
                raise DeadlineExceeded()
            meta = meta or {"id": chunk.id, "model": chunk.model, "created": chunk.created}
            usage = chunk.usage or usage
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                if choice.delta.content:
                    text.append(choice.delta.content)
                    if on_delta:
                        on_delta(choice.delta.content)
                _add_fragments(fragments, choice.delta.tool_calls or ())
    if not meta:
        raise provider_error(ProviderError.INVALID_RESPONSE, "The stream ended before its first chunk.", request)
    calls = tuple(
        _tool_call(slot["id"], slot["name"], slot["arguments"], index) for index, slot in sorted(fragments.items())
    )
    raw = {
        **meta,
        "object": "chat.completion",
        "streamed": True,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "".join(text),
                    "tool_calls": [_call_dict(c) for c in calls],
                },
                "finish_reason": finish,
            }
        ],
        "usage": usage.model_dump(mode="json", exclude_none=True) if usage is not None else None,
    }
    return ModelResponse(
        text="".join(text),
        tool_calls=calls,
        usage=_usage(raw["usage"]),
        finish_reason=_finish_reason(finish, calls),
        raw=raw,
    )


def _add_fragments(fragments: dict[int, dict[str, str]], deltas: Iterable[Any]) -> None:
    # A tool call arrives in pieces keyed by index: id and name once, arguments in slices.
    for delta in deltas:
        slot = fragments.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
        slot["id"] = slot["id"] or (delta.id or "")
        if delta.function is not None:
            slot["name"] = slot["name"] or (delta.function.name or "")
            slot["arguments"] += delta.function.arguments or ""


def _call_dict(call: ToolCall) -> dict[str, str]:
    return {"id": call.id, "name": call.name, "arguments": call.raw_arguments}


# --- errors -----------------------------------------------------------------------------
def _error(exc: openai.OpenAIError, request: ModelRequest) -> ProviderError:
    if isinstance(exc, openai.APITimeoutError):
        return timeout_error(request)
    if isinstance(exc, openai.APIConnectionError):
        return unreachable_error(request, "the OpenAI API", exc.__cause__)
    if isinstance(exc, openai.APIStatusError):
        kind = kind_for_status(exc.status_code)
        if exc.status_code == 429 and exc.code == "insufficient_quota":
            kind = ProviderError.QUOTA
        return provider_error(kind, _body_message(exc.body) or exc.message, request, status_code=exc.status_code)
    if isinstance(exc, openai.APIResponseValidationError):
        return provider_error(ProviderError.INVALID_RESPONSE, exc.message, request, status_code=exc.status_code)
    if isinstance(exc, openai.APIError):
        # An error event in the middle of a stream: the server gave up on this answer.
        return provider_error(ProviderError.UNAVAILABLE, _body_message(exc.body) or exc.message, request)
    return provider_error(ProviderError.INVALID_RESPONSE, str(exc), request)


def _body_message(body: object) -> str:
    # OpenAI: {"error": {"message": …}} (the SDK unwraps "error"); vLLM and others: "message" or "detail".
    if isinstance(body, dict):
        return str(body.get("message") or body.get("detail") or "")
    return str(body or "")
