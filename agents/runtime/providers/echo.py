"""The offline `echo` provider: deterministic, no network, scriptable.

It answers `"[echo <model>] " + <last user message> + " #sp=" + <8 hex of the SHA-256
of the system prompt it received>`, so a test can tell which version ran.

Scripting, through lines of the last user message (the lines stay in the answer):

- `@call <tool> <json object>`: on the first model call after that message, ask for
  this tool call (several lines: several calls in one response). Once tool results
  come back, answer normally.
- `@loop <tool> <json object>`: ask for this tool call on every model call, forever
  (to test `runtime_policy.max_iterations`).
- `@error <kind>`: fail with `ProviderError(kind)` (auth, rate_limit, unavailable, ...).
- `@garbage`: return a response that cannot be parsed (an invalid-response error).

A `<json object>` that does not parse is passed on as malformed arguments.
Usage: four characters a token, input and output, nothing cached.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from agents.runtime.providers.base import ModelRequest, ModelResponse, ProviderError, ToolCall, Usage

DIRECTIVE = re.compile(r"^@(call|loop)\s+([A-Za-z0-9_-]+)\s*(.*)$")


def system_prompt_hash8(system_text: str) -> str:
    return hashlib.sha256(system_text.encode()).hexdigest()[:8]


class EchoProvider:
    name = "echo"

    def complete(self, request: ModelRequest, on_delta: Callable[[str], None] | None = None) -> ModelResponse:
        user_index = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=None)
        if user_index is None:
            raise ProviderError(ProviderError.BAD_REQUEST, "echo needs a user message")
        user_text = request.messages[user_index].content
        lines = [line.strip() for line in user_text.splitlines()]
        for line in lines:
            if line.startswith("@error"):
                kind = line.split(maxsplit=1)[1] if " " in line else ProviderError.UNAVAILABLE
                raise ProviderError(kind, f"echo was scripted to fail with {kind}")
            if line == "@garbage":
                raise ProviderError(ProviderError.INVALID_RESPONSE, "echo was scripted to return garbage")
        answered_tools = any(m.role == "tool" for m in request.messages[user_index + 1 :])
        calls = [
            self._tool_call(match, index)
            for index, match in enumerate(filter(None, (DIRECTIVE.match(line) for line in lines)))
            if match.group(1) == "loop" or not answered_tools
        ]
        input_chars = len(request.system_text) + sum(len(m.content) for m in request.messages)
        if calls:
            usage = Usage(
                input_tokens=input_chars // 4 + 1, output_tokens=sum(len(c.raw_arguments) for c in calls) // 4 + 1
            )
            return ModelResponse(
                text="", tool_calls=tuple(calls), usage=usage, finish_reason="tool_calls", raw=_raw(calls)
            )
        answer = f"[echo {request.model}] {user_text} #sp={system_prompt_hash8(request.system_text)}"
        if on_delta is not None:
            on_delta(answer)
        usage = Usage(input_tokens=input_chars // 4 + 1, output_tokens=len(answer) // 4 + 1)
        return ModelResponse(text=answer, usage=usage, finish_reason="stop", raw={"text": answer})

    def sent_parameters(self, request: ModelRequest) -> dict:
        """Echo reads the model's name and nothing else of the parameters."""
        return {"model": request.model}

    def _tool_call(self, match: re.Match, index: int) -> ToolCall:
        raw = match.group(3).strip() or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError:
            arguments = None
        return ToolCall(
            id=f"echo-call-{index}",
            name=match.group(2),
            arguments=arguments if isinstance(arguments, dict) else None,
            raw_arguments=raw,
        )


def _raw(calls: list[ToolCall]) -> dict:
    return {"tool_calls": [{"id": c.id, "name": c.name, "arguments": c.raw_arguments} for c in calls]}
