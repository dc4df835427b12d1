"""Debug logs: one row per model call, and what it may hold (secrets redacted, bodies
bounded)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings

from agents.models import AgentTurn, DebugLog

if TYPE_CHECKING:
    from agents.runtime.providers.base import Message, ModelRequest, ModelResponse, Usage

REDACTED = "[redacted]"
# Shapes of well-known secrets, redacted even when nobody told us the value.
SECRET_PATTERNS = [
    re.compile(r"sk-[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic (sk-ant-...)
    re.compile(r"AIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"ahk_\d+_[A-Za-z0-9_-]{20,}"),  # our own API keys
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/-]{20,}=*"),
]


def redact_text(text: str, secrets: list[str], *, bound: bool = True) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + REDACTED, text)
    limit = settings.AIHUMMER_DEBUG_MAX_CHARS
    if bound and len(text) > limit:
        text = f"{text[:limit]}… [{len(text) - limit} more characters not kept]"
    return text


def redact(value: object, secrets: list[str]) -> object:
    """`value` (JSON-like) with every string redacted and bounded."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value


def debug_log_write(
    *,
    turn: AgentTurn,
    provider_name: str,
    request: ModelRequest,
    response: ModelResponse | None,
    error: str,
    usage: Usage,
    sequence: int,
    prefix_hash: str,
    cost: Decimal,
    latency_ms: int,
    secrets: list[str],
) -> DebugLog:
    """Record one model call of `turn`, redacted by value (`secrets`) and by shape."""
    return DebugLog.all_objects.create(
        turn=turn,
        workspace_id=turn.workspace_id,
        agent_key=turn.agent_key,
        sequence=sequence,
        provider_name=provider_name,
        model=request.model,
        system_prompt=redact(request.system_text, secrets),
        messages=redact([_message_dict(m) for m in request.messages], secrets),
        tools_offered=[
            {"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools
        ],
        parameters=request.parameters(),
        response=redact(response.raw if response else {}, secrets),
        finish_reason=response.finish_reason if response else "error",
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cost_usd=cost,
        latency_ms=latency_ms,
        prefix_hash=prefix_hash,
        error=redact(error, secrets),
        is_sandbox=turn.is_sandbox,
    )


def _message_dict(message: Message) -> dict:
    data = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.raw_arguments} for c in message.tool_calls]
    if message.tool_call_id:
        data["tool_call_id"] = message.tool_call_id
        data["tool_name"] = message.tool_name
    return data
