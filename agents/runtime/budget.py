"""The context budget: which messages of a turn are sent to the model. Older tool
results are trimmed (`runtime_policy.pruning`), then the oldest tool exchanges dropped
until the history fits its share of the window (`runtime_policy.context`)."""

from __future__ import annotations

import math
from dataclasses import replace

from agents import catalog
from agents.policy import RuntimePolicy
from agents.runtime.errors import TurnFailed
from agents.runtime.providers.base import Message

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prepare_messages(
    messages: list[Message], policy: RuntimePolicy, system_text: str, model_info: catalog.ModelInfo | None
) -> tuple[list[Message], int]:
    """The messages to send: older tool results trimmed (`pruning`), then the oldest
    tool exchanges dropped until the history fits its share of the budget (`context`).
    The user's text is never touched. Returns them and how many exchanges were dropped."""
    pruned = prune_tool_results(messages, policy)
    context = policy.context
    window = min(context.max_tokens, model_info.context_window) if model_info else context.max_tokens
    input_budget = window - context.reserve_tokens
    fixed = estimate_tokens(system_text) + estimate_tokens(pruned[0].content)
    if fixed > input_budget:
        raise TurnFailed(
            f"The system prompt and message need about {fixed} tokens, but runtime_policy.context allows "
            f"{input_budget} (max_tokens {window} minus reserve_tokens {context.reserve_tokens})."
        )
    history_budget = min(int(input_budget * context.history_share), input_budget - fixed)
    exchanges = _exchanges(pruned[1:])
    dropped = 0
    # The newest exchange always stays: it holds the results the model just asked for.
    while len(exchanges) > 1 and _tokens(exchanges) > history_budget:
        exchanges.pop(0)
        dropped += 1
    if exchanges and _tokens(exchanges) > history_budget:
        exchanges[-1] = _trim_results(exchanges[-1], history_budget, policy)
    return [pruned[0], *(m for exchange in exchanges for m in exchange)], dropped


def _tokens(exchanges: list[list[Message]]) -> int:
    return sum(estimate_tokens(m.content) + 8 for exchange in exchanges for m in exchange)


def _trim_results(exchange: list[Message], budget: int, policy: RuntimePolicy) -> list[Message]:
    """Cut the tool results of one exchange so that together they fit `budget`."""
    results = [m for m in exchange if m.role == "tool"]
    if not results:
        return exchange
    others = _tokens([[m for m in exchange if m.role != "tool"]])
    chars = max((budget - others) * CHARS_PER_TOKEN // len(results) - len(policy.pruning.placeholder) - 40, 0)
    return [
        replace(m, content=f"{m.content[:chars]}\n{policy.pruning.placeholder}")
        if m.role == "tool" and len(m.content) > chars
        else m
        for m in exchange
    ]


def prune_tool_results(messages: list[Message], policy: RuntimePolicy) -> list[Message]:
    """Tool results older than the last `keep_last_tool_results` are cut to
    `max_tool_result_chars` and marked with the placeholder."""
    pruning = policy.pruning
    if not pruning.enabled:
        return list(messages)
    tool_indexes = [i for i, m in enumerate(messages) if m.role == "tool"]
    keep = set(tool_indexes[-pruning.keep_last_tool_results :]) if pruning.keep_last_tool_results else set()
    return [
        replace(m, content=f"{m.content[: pruning.max_tool_result_chars]}\n{pruning.placeholder}")
        if m.role == "tool" and i not in keep and len(m.content) > pruning.max_tool_result_chars
        else m
        for i, m in enumerate(messages)
    ]


def _exchanges(history: list[Message]) -> list[list[Message]]:
    """Group an assistant message with the tool results that answer it."""
    groups: list[list[Message]] = []
    for message in history:
        if message.role == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups
