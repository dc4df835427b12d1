"""Google's Gemini API through the official `google-genai` SDK.

What goes out:

- `system_instruction`: the stable prefix first and unchanged, then a blank line and the
  volatile part (Gemini caches identical prompt prefixes implicitly);
- `contents`: user turns, model turns (an assistant's tool calls as `function_call`
  parts) and tool results as `function_response` parts (`{"output": …}`, or
  `{"error": …}` for a failed call), consecutive ones in one user turn;
- tools as `function_declarations` with the JSON Schema as `parameters_json_schema`;
  the SDK's automatic function calling stays off: the runtime runs tools itself;
- `temperature`, `top_p`, `max_output_tokens`;
- `reasoning_effort` as a `thinking_config`: a thinking level on Gemini 3 and later, a
  token budget on the 2.x models (which take no level);
- `service_tier`: `flex`, `priority`, and `default` as `standard`; `auto` leaves the
  API's default. `request.stream` is not used.
- a tool call's thought signature (`ToolCall.signature`) goes back on its
  `function_call` part: Gemini's thinking models refuse a tool exchange without it.

What comes back: text (thought parts left out), tool calls with their thought
signatures (Gemini may give no call id: one is made up, and not sent back), usage
(`prompt_token_count` includes cached tokens, `cached_content_token_count` is the
cached part; thinking tokens are billed as output and counted there) and the response
as a JSON dict.

Errors: a 429 RESOURCE_EXHAUSTED whose message speaks of quota is `quota`; a 400 for an
invalid API key is `auth`; otherwise the status decides. Retries follow the SDK's rules
(408, 429 and 5xx, timeouts and connection failures; `AIHUMMER_PROVIDER_MAX_RETRIES` of
them, backing off from half a second like the other vendors' SDKs) but are driven here,
one SDK call per attempt, so that the whole call ends within `request.timeout_seconds`
(see `agents.providers.deadline`); an exhausted quota is not retried. A base URL
(`request.base_url`) is for proxies and tests.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
from agents.runtime.providers.deadline import Deadline, DeadlineExceeded, backoff, retry_until

GENERATED_ID_PREFIX = "gemini-call-"
FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
# Backoff of the SDK's retries: 0.5 s, 1 s, 2 s… (plus up to 0.5 s of jitter), at most 8 s.
RETRY_INITIAL_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
RETRY_JITTER = 0.5


# What the SDK itself would retry (google.genai._api_client): these statuses, timeouts
# and failed connections.
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
SERVICE_TIERS = {"flex": "flex", "priority": "priority", "default": "standard"}
THINKING_LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}
# Gemini 2.x thinks within a token budget (0 turns thinking off where the model allows).
THINKING_BUDGETS = {"minimal": 0, "low": 1024, "medium": 8192, "high": 24576}
# What `sent_parameters` reports: everything sent but the prompt and the client's options.
NOT_PARAMETERS = {"system_instruction", "tools", "automatic_function_calling", "http_options"}


def _client(base_url: str | None, api_key: str) -> genai.Client:
    # One attempt per SDK call: `retry_until` retries, against the call's deadline.
    return genai.Client(
        api_key=api_key, vertexai=False, http_options=types.HttpOptions(base_url=base_url, retry_options=None)
    )


# One per configuration (see agents.runtime.providers.clients); each attempt's timeout
# is in its request's config.
CLIENTS: ClientCache[genai.Client] = ClientCache(_client)


class GeminiProvider:
    name = "gemini"

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        """One generateContent call; `on_delta` (if given) receives the whole text once.
        Answers or fails within `request.timeout_seconds`, retries included."""
        require_api_key(request)
        deadline = Deadline(request.timeout_seconds)
        client = CLIENTS.get(base_url=request.base_url or None, api_key=request.api_key)
        try:
            result = retry_until(
                deadline,
                lambda seconds: client.models.generate_content(
                    model=request.model, contents=_contents(request.messages), config=_config(request, seconds)
                ),
                retries=max_retries(),
                retriable=_retriable,
                wait=lambda retry: backoff(
                    retry, initial=RETRY_INITIAL_DELAY, maximum=RETRY_MAX_DELAY, jitter=RETRY_JITTER
                ),
            )
        except DeadlineExceeded as exc:
            raise timeout_error(request, exc.after) from None
        except genai_errors.APIError as exc:
            raise _api_error(exc, request) from None
        except httpx2.TimeoutException:
            raise timeout_error(request) from None
        except httpx2.TransportError as exc:
            raise unreachable_error(request, "the Gemini API", exc) from None
        except (genai_errors.UnknownApiResponseError, json.JSONDecodeError) as exc:
            raise provider_error(ProviderError.INVALID_RESPONSE, f"The answer is not JSON ({exc}).", request) from None
        response = _response(result, request)
        if on_delta and response.text:
            on_delta(response.text)
        return response

    def sent_parameters(self, request: ModelRequest) -> dict:
        """The request's parameters as this adapter sends them (for the debug log)."""
        config = _config(request, request.timeout_seconds).model_dump(
            mode="json", exclude_none=True, exclude=NOT_PARAMETERS
        )
        return {"model": request.model, **config}


def _retriable(exc: Exception) -> str | None:
    """What failed, when the SDK would retry it ("" for a timeout); None otherwise. An
    exhausted quota is not retried (the SDK would: its 429 looks like a rate limit)."""
    if isinstance(exc, genai_errors.APIError) and exc.code in RETRY_STATUSES:
        if exc.code == 429 and "quota" in str(exc.message or "").lower():
            return None
        return f"HTTP {exc.code}"
    if isinstance(exc, httpx2.TimeoutException):
        return ""
    if isinstance(exc, httpx2.ConnectError):
        return "a connection error"
    return None


# --- request ----------------------------------------------------------------------------
def _timeout_ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _config(request: ModelRequest, seconds: float) -> types.GenerateContentConfig:
    tools = None
    if request.tools:
        declarations = [
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters)
            for t in request.tools
        ]
        tools = [types.Tool(function_declarations=declarations)]
    return types.GenerateContentConfig(
        system_instruction=request.system_text or None,
        temperature=request.temperature,
        top_p=request.top_p,
        max_output_tokens=request.max_output_tokens,
        thinking_config=_thinking(request),
        service_tier=SERVICE_TIERS.get(request.service_tier or ""),
        tools=tools,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        http_options=types.HttpOptions(timeout=_timeout_ms(seconds)),  # this attempt: the time left
    )


def _thinking(request: ModelRequest) -> types.ThinkingConfig | None:
    effort = request.reasoning_effort
    if effort not in THINKING_LEVELS:
        return None
    if request.model.startswith("gemini-2"):
        return types.ThinkingConfig(thinking_budget=THINKING_BUDGETS[effort])
    return types.ThinkingConfig(thinking_level=THINKING_LEVELS[effort])


def _contents(messages: tuple[Message, ...]) -> list[types.Content]:
    contents: list[types.Content] = []
    for message in messages:
        if message.role == "tool":
            part = types.Part(function_response=_function_response(message))
            if contents and contents[-1].role == "user" and contents[-1].parts[0].function_response is not None:
                contents[-1].parts.append(part)
            else:
                contents.append(types.Content(role="user", parts=[part]))
        elif message.role == "assistant":
            parts = [types.Part(text=message.content)] if message.content else []
            parts += [
                types.Part(
                    function_call=_function_call(call),
                    thought_signature=base64.b64decode(call.signature) if call.signature else None,
                )
                for call in message.tool_calls
            ]
            contents.append(types.Content(role="model", parts=parts))
        else:
            contents.append(types.Content(role="user", parts=[types.Part(text=message.content)]))
    return contents


def _vendor_id(call_id: str) -> str | None:
    return None if call_id.startswith(GENERATED_ID_PREFIX) else call_id


def _function_call(call: ToolCall) -> types.FunctionCall:
    return types.FunctionCall(id=_vendor_id(call.id), name=call.name, args=call.arguments or {})


def _function_response(message: Message) -> types.FunctionResponse:
    payload = {"error": message.content} if message.is_error else {"output": message.content}
    return types.FunctionResponse(id=_vendor_id(message.tool_call_id), name=message.tool_name, response=payload)


# --- response ---------------------------------------------------------------------------
def _response(result: types.GenerateContentResponse, request: ModelRequest) -> ModelResponse:
    if not result.candidates:
        feedback = result.prompt_feedback
        if feedback is not None and feedback.block_reason:
            reason = feedback.block_reason_message or getattr(feedback.block_reason, "value", feedback.block_reason)
            raise provider_error(ProviderError.BAD_REQUEST, f"The prompt was blocked: {reason}.", request)
        raise provider_error(ProviderError.INVALID_RESPONSE, "The server answered without a candidate.", request)
    candidate = result.candidates[0]
    parts = (candidate.content.parts if candidate.content else None) or []
    text = "".join(part.text for part in parts if part.text and not part.thought)
    calls = tuple(_tool_call(part, index) for index, part in enumerate(p for p in parts if p.function_call is not None))
    reason = candidate.finish_reason.value if candidate.finish_reason else "STOP"
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=_usage(result.usage_metadata),
        finish_reason="tool_calls" if calls else FINISH_REASONS.get(reason, reason.lower()),
        raw=result.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"}),
    )


def _tool_call(part: types.Part, index: int) -> ToolCall:
    call = part.function_call
    # The API sends args as a JSON object (a Struct): never malformed, possibly absent.
    arguments = call.args if call.args is not None else {}
    return ToolCall(
        id=call.id or f"{GENERATED_ID_PREFIX}{index}",
        name=call.name or "",
        arguments=arguments,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
        signature=base64.b64encode(part.thought_signature).decode() if part.thought_signature else "",
    )


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage()
    prompt = meta.prompt_token_count or 0
    return Usage(
        input_tokens=prompt,
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cached_input_tokens=min(meta.cached_content_token_count or 0, prompt),
    )


# --- errors -----------------------------------------------------------------------------
def _api_error(exc: genai_errors.APIError, request: ModelRequest) -> ProviderError:
    status = exc.code if isinstance(exc.code, int) else 500
    message = str(exc.message or exc)
    kind = kind_for_status(status)
    if status == 429 and "quota" in message.lower():
        kind = ProviderError.QUOTA
    # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    if status == 400 and ("API_KEY_INVALID" in str(exc.details) or "api key not valid" in message.lower()):
        kind = ProviderError.AUTH
    return provider_error(kind, message, request, status_code=status)
