"""Google's Gemini API through the official `google-genai` SDK.

What goes out:

- `system_instruction`: the stable prefix first and unchanged, then a blank line and the
  volatile part (Gemini caches identical prompt prefixes implicitly);
- `contents`: user turns, model turns (an assistant's tool calls as `function_call`
  parts) and tool results as `function_response` parts (`{"output": …}`, or
  `{"error": …}` for a failed call), consecutive ones in one user turn;
- tools as `function_declarations` with the JSON Schema as `parameters_json_schema`;
  the SDK's automatic function calling stays off: the runtime runs tools itself;
- `temperature`, `top_p`, `max_output_tokens`. `reasoning_effort` and `service_tier`
  are not sent: Gemini's thinking budgets and levels differ per model generation, and
  the API has no service tier. `request.stream` is not used.

What comes back: text (thought parts left out), tool calls (Gemini may give no call id:
one is made up, and not sent back), usage (`prompt_token_count` includes cached tokens,
`cached_content_token_count` is the cached part; thinking tokens are billed as output
and counted there) and the response as a JSON dict.

Errors: a 429 RESOURCE_EXHAUSTED whose message speaks of quota is `quota`; a 400 for an
invalid API key is `auth`; otherwise the status decides. Retries are the SDK's own
(`HttpRetryOptions`): `AIHUMMER_PROVIDER_MAX_RETRIES` retries of 408, 429 and 5xx and
of connection failures, backing off from half a second like the other vendors' SDKs.
Note that they retry a 429 even when it means an exhausted quota. A base URL
(`request.base_url`) is for proxies and tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from agents.runtime.providers import kind_for_status, max_retries, provider_error, require_api_key
from agents.runtime.providers.base import Message, ModelRequest, ModelResponse, ProviderError, ToolCall, Usage

GENERATED_ID_PREFIX = "gemini-call-"
FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
# Backoff of the SDK's retries: 0.5 s, 1 s, 2 s… (plus up to 0.5 s of jitter), at most 8 s.
RETRY_INITIAL_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
RETRY_JITTER = 0.5


class GeminiProvider:
    name = "gemini"

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        """One generateContent call; `on_delta` (if given) receives the whole text once."""
        require_api_key(request)
        try:
            with genai.Client(api_key=request.api_key, vertexai=False, http_options=_http_options(request)) as client:
                result = client.models.generate_content(
                    model=request.model, contents=_contents(request.messages), config=_config(request)
                )
        except genai_errors.APIError as exc:
            raise _api_error(exc, request) from None
        except httpx2.TimeoutException:
            raise provider_error(
                ProviderError.TIMEOUT, f"No answer within {request.timeout_seconds:g} s.", request
            ) from None
        except httpx2.TransportError as exc:
            where = request.base_url or "the Gemini API"
            raise provider_error(ProviderError.UNAVAILABLE, f"Cannot reach {where} ({exc}).", request) from None
        except (genai_errors.UnknownApiResponseError, json.JSONDecodeError) as exc:
            raise provider_error(ProviderError.INVALID_RESPONSE, f"The answer is not JSON ({exc}).", request) from None
        response = _response(result, request)
        if on_delta and response.text:
            on_delta(response.text)
        return response


# --- request ----------------------------------------------------------------------------
def _http_options(request: ModelRequest) -> types.HttpOptions:
    retry = types.HttpRetryOptions(
        attempts=max_retries() + 1,  # attempts include the first request
        initial_delay=RETRY_INITIAL_DELAY,
        max_delay=RETRY_MAX_DELAY,
        jitter=RETRY_JITTER,
    )
    return types.HttpOptions(
        base_url=request.base_url or None,
        timeout=max(1, round(request.timeout_seconds * 1000)),  # milliseconds
        retry_options=retry,
    )


def _config(request: ModelRequest) -> types.GenerateContentConfig:
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
        tools=tools,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


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
            parts += [types.Part(function_call=_function_call(call)) for call in message.tool_calls]
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
    calls = tuple(
        _tool_call(part.function_call, index)
        for index, part in enumerate(p for p in parts if p.function_call is not None)
    )
    reason = candidate.finish_reason.value if candidate.finish_reason else "STOP"
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=_usage(result.usage_metadata),
        finish_reason="tool_calls" if calls else FINISH_REASONS.get(reason, reason.lower()),
        raw=result.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"}),
    )


def _tool_call(call: types.FunctionCall, index: int) -> ToolCall:
    # The API sends args as a JSON object (a Struct): never malformed, possibly absent.
    arguments = call.args if call.args is not None else {}
    return ToolCall(
        id=call.id or f"{GENERATED_ID_PREFIX}{index}",
        name=call.name or "",
        arguments=arguments,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
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
