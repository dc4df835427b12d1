"""Debug logs: one row per model call, holding what that call added (see DebugLog), and
what it may hold (secrets redacted, bodies bounded)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings

from agents.models import AgentTurn, DebugLog
from agents.redaction import REDACTED, redact_values  # noqa: F401 - REDACTED re-exported
from agents.runtime.prepared import insert, insert_with_parent

if TYPE_CHECKING:
    from agents.runtime.providers.base import Message, ModelRequest, ModelResponse, Provider, Usage
    from aihummer.db import Tail


def redact_text(text: str, secrets: list[str], *, bound: bool = True) -> str:
    """`text` redacted by value and by shape (agents.redaction), bounded for a debug log."""
    text = redact_values(text, secrets)
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


class DebugLogWriter:
    """Writes a turn's debug logs, one per model call, each holding what its call added
    (an `incremental` log: see DebugLog). A call that asked for tools is written once
    they ran, with their outcomes; the turn's last call is written with the turn's
    outcome (`flush`, in the same transaction)."""

    def __init__(self, *, turn: AgentTurn, secrets: list[str]) -> None:
        self.turn = turn
        self.secrets = secrets
        self.messages_logged = 0  # how many of the turn's messages earlier logs hold
        self._pending: DebugLog | None = None
        self._system_prompt: str | None = None
        self._tools: list[dict] | None = None

    def call(
        self,
        *,
        sequence: int,
        provider: Provider,
        request: ModelRequest,
        response: ModelResponse | None,
        error: str,
        new_messages: list[Message],
        dropped: int,
        usage: Usage,
        cost: Decimal,
        latency_ms: int,
        prefix_hash: str,
    ) -> None:
        system_prompt = redact(request.system_text, self.secrets)
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools]
        self._pending = DebugLog(
            turn=self.turn,
            workspace_id=self.turn.workspace_id,
            agent_key=self.turn.agent_key,
            sequence=sequence,
            provider_name=self.turn.provider_name or getattr(provider, "name", ""),
            model=request.model,
            incremental=True,
            system_prompt="" if system_prompt == self._system_prompt else system_prompt,
            tools_offered=[] if tools == self._tools else tools,
            messages=redact([_message_dict(m) for m in new_messages], self.secrets),
            dropped_exchanges=dropped,
            parameters=provider.sent_parameters(request),
            response=redact(response.raw if response else {}, self.secrets),
            finish_reason=response.finish_reason if response else "error",
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
            prefix_hash=prefix_hash,
            error=redact(error, self.secrets),
            is_sandbox=self.turn.is_sandbox,
        )
        self._system_prompt, self._tools = system_prompt, tools
        self.messages_logged += len(new_messages)

    def tools_ran(self, outcomes: list[dict]) -> None:
        """Record what became of the pending call's tool calls, and write it."""
        self._pending.tool_calls = redact(outcomes, self.secrets)
        self.flush()

    def failed(self, *, sequence: int, provider_name: str, model: str, error: str) -> None:
        """A call that could not be made (no preset, no credential, no adapter)."""
        self._pending = DebugLog(
            turn=self.turn,
            workspace_id=self.turn.workspace_id,
            agent_key=self.turn.agent_key,
            sequence=sequence,
            provider_name=provider_name,
            model=model,
            incremental=True,
            finish_reason="error",
            error=redact(error, self.secrets),
            is_sandbox=self.turn.is_sandbox,
        )

    def save_turn(self) -> None:
        """Insert the turn's row if it is not yet in the database (a plain turn's is
        written once, with its outcome)."""
        if self.turn.pk is None:
            insert(self.turn)

    def flush(self, tail: Tail | None = None) -> tuple | None:
        """Write the pending call's log, and the turn's row if it has none yet: both in
        one statement (the turn alone when no call is pending). A `tail` (the caller's
        result, `agents.runtime.prepared.insert_with_parent`) goes in that statement
        too, and its row is returned: only for a turn with no row yet and a call pending."""
        if tail is not None and not self.composable:
            raise ValueError("A tail goes with a new turn's row and its pending log only.")
        row = None
        if self._pending is None:
            self.save_turn()
        elif self.turn.pk is None:
            row = insert_with_parent(self.turn, self._pending, link="turn", tail=tail)
        else:
            self._pending.turn = self.turn  # the turn's id, now that it has one
            insert(self._pending)
        self._pending = None
        return row

    @property
    def composable(self) -> bool:
        """Whether `flush` may take a tail: a new turn's row and its log are to be written."""
        return self._pending is not None and self.turn.pk is None


def _message_dict(message: Message) -> dict:
    data = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.raw_arguments} for c in message.tool_calls]
    if message.tool_call_id:
        data["tool_call_id"] = message.tool_call_id
        data["tool_name"] = message.tool_name
    return data
