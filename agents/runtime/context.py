"""What each model call of a turn is sent, under `runtime_policy.context` and `.pruning`.

Before every call, from the conversation's history (earlier rounds, loaded by the
conversation within `max_history_messages`, see `agents.runtime.conversations`) and
the turn's own messages (the user's message, then the tool exchanges so far):

1. pruning: a tool result is stale when it is at least `ttl_seconds` old and comes
   before the last `keep_last_assistants` assistant messages (with fewer of them,
   nothing is). When the request fills more than `soft_trim_ratio` of the budget,
   stale results longer than `head_chars + tail_chars` keep only their head and tail;
   while it still fills more than `hard_clear_ratio`, stale results are replaced by the
   placeholder, oldest first.
2. the window: the history fits its share of the budget (`history_share` of the
   budget less `reserve_tokens`): the oldest rounds of the conversation leave it first
   (a round is a user message and what answered it), then the turn's oldest tool
   exchanges; the user's message and the newest exchange always stay.

Only what is sent changes: the stored history, the user's text, never. The budget is
`context.max_tokens` when set (an explicit context, where the conversation compacts
what leaves the window instead: `agents.runtime.compaction`), else the model's window.
A turn's own tool results age from when they were added, so a long turn's older
results pass `ttl_seconds` too; a conversation stores no tool results (only the
messages and answers), so earlier turns bring none.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from agents import catalog
from agents.policy_models import PruningPolicy, RuntimePolicy
from agents.runtime.errors import TurnFailed
from agents.runtime.providers.base import Message

CHARS_PER_TOKEN = 4
# A message's framing (role, separators) in tokens, on top of its text.
MESSAGE_OVERHEAD_TOKENS = 8
# The budget for a model the catalog does not know.
UNKNOWN_MODEL_WINDOW = 128_000


@dataclass(frozen=True)
class History:
    """What a conversation brings to each request of a turn: its earlier messages
    (oldest first) with when each was written (seconds since the epoch: the age of a
    tool result), and the reference text (summary, notes) for the volatile part."""

    messages: tuple[Message, ...] = ()
    written_at: tuple[float, ...] = ()
    reference: str = ""


NO_HISTORY = History()


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def context_window(policy: RuntimePolicy, model_info: catalog.ModelInfo | None) -> int:
    """The request's budget in tokens: `context.max_tokens` (never beyond the model's
    window), or the model's window."""
    model_window = model_info.context_window if model_info else UNKNOWN_MODEL_WINDOW
    explicit = policy.context.max_tokens
    return min(explicit, model_window) if explicit else model_window


def history_budget(policy: RuntimePolicy, model_info: catalog.ModelInfo | None) -> int:
    """Tokens the history may use: its share of the budget less the reserve."""
    window = context_window(policy, model_info)
    return int((window - policy.context.reserve_tokens) * policy.context.history_share)


def prepare_messages(
    messages: list[Message],
    policy: RuntimePolicy,
    system_text: str,
    model_info: catalog.ModelInfo | None,
    history: History = NO_HISTORY,
    *,
    now: float | None = None,
    written_at: list[float] | None = None,
) -> tuple[list[Message], int]:
    """The messages to send: `history` then the turn's `messages` (the user's first),
    pruned, then windowed (see the module's docstring). Returns them and how many
    rounds and exchanges left the window. `written_at`: when each of `messages` was
    added (seconds since the epoch; absent: now), so a long turn's older tool results
    age past `pruning.ttl_seconds` too."""
    context = policy.context
    window = context_window(policy, model_info)
    input_budget = window - context.reserve_tokens
    now = time.time() if now is None else now
    turn_ages = [now - written for written in written_at] if written_at else [0.0] * len(messages)
    ages = [now - written for written in history.written_at] + turn_ages
    fixed_chars = len(system_text) + len(history.reference)
    pruned = prune_tool_results(
        [*history.messages, *messages],
        ages,
        policy.pruning,
        budget_chars=window * CHARS_PER_TOKEN,
        fixed_chars=fixed_chars,
    )
    prior, current = pruned[: len(history.messages)], pruned[len(history.messages) :]
    fixed = estimate_tokens(system_text) + estimate_tokens(history.reference) + estimate_tokens(current[0].content)
    if fixed > input_budget:
        raise TurnFailed(
            f"The system prompt and message need about {fixed} tokens, but runtime_policy.context allows "
            f"{input_budget} (a budget of {window} tokens minus reserve_tokens {context.reserve_tokens})."
        )
    budget = min(int(input_budget * context.history_share), input_budget - fixed)
    rounds, exchanges = _rounds(prior), _exchanges(current[1:])
    dropped = 0
    while rounds and _tokens(rounds) + _tokens(exchanges) > budget:
        rounds.pop(0)
        dropped += 1
    # The newest exchange always stays: it holds the results the model just asked for.
    while len(exchanges) > 1 and _tokens(exchanges) > budget:
        exchanges.pop(0)
        dropped += 1
    if exchanges and _tokens(exchanges) > budget:
        exchanges[-1] = _fit_results(exchanges[-1], budget, policy.pruning.placeholder)
    return [*(m for group in rounds for m in group), current[0], *(m for group in exchanges for m in group)], dropped


def prune_tool_results(
    messages: list[Message], ages: list[float], pruning: PruningPolicy, *, budget_chars: int, fixed_chars: int = 0
) -> list[Message]:
    """`messages` with their stale tool results soft-trimmed, then cleared, as far as
    the request's size against `budget_chars` asks (see the module's docstring)."""
    pruned = list(messages)
    stale = _stale(messages, ages, pruning)
    total = fixed_chars + sum(len(m.content) for m in messages)
    if not stale or total <= pruning.soft_trim_ratio * budget_chars:
        return pruned
    for index in stale:
        trimmed = soft_trim(pruned[index].content, pruning.head_chars, pruning.tail_chars)
        total -= len(pruned[index].content) - len(trimmed)
        pruned[index] = replace(pruned[index], content=trimmed)
    for index in stale:  # oldest first
        if total <= pruning.hard_clear_ratio * budget_chars:
            break
        total -= len(pruned[index].content) - len(pruning.placeholder)
        pruned[index] = replace(pruned[index], content=pruning.placeholder)
    return pruned


def soft_trim(text: str, head: int, tail: int) -> str:
    """`text`'s first `head` and last `tail` characters, with a note of what was cut;
    `text` itself when that would not make it shorter."""
    note = f"\n[tool result trimmed: the first {head} and last {tail} of {len(text)} characters kept]"
    if len(text) <= head + tail + len(note) + 3:
        return text
    return f"{text[:head]}\n…\n{text[len(text) - tail :] if tail else ''}{note}"


def _stale(messages: list[Message], ages: list[float], pruning: PruningPolicy) -> list[int]:
    """Indexes of the tool results pruning may touch, oldest first."""
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if len(assistants) < pruning.keep_last_assistants:
        return []
    cutoff = assistants[-pruning.keep_last_assistants] if pruning.keep_last_assistants else len(messages)
    return [
        i for i, m in enumerate(messages[:cutoff]) if m.role == "tool" and ages[i] >= pruning.ttl_seconds and m.content
    ]


def _tokens(groups: list[list[Message]]) -> int:
    return sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for group in groups for m in group)


def _fit_results(exchange: list[Message], budget: int, placeholder: str) -> list[Message]:
    """Cut the tool results of one exchange so that together they fit `budget`."""
    results = [m for m in exchange if m.role == "tool"]
    if not results:
        return exchange
    others = _tokens([[m for m in exchange if m.role != "tool"]])
    chars = max((budget - others) * CHARS_PER_TOKEN // len(results) - len(placeholder) - 40, 0)
    return [
        replace(m, content=f"{m.content[:chars]}\n{placeholder}") if m.role == "tool" and len(m.content) > chars else m
        for m in exchange
    ]


def _rounds(history: list[Message]) -> list[list[Message]]:
    """The conversation's earlier messages grouped by round: a user message and what
    answered it, so the window never starts with an orphan answer or tool result."""
    rounds: list[list[Message]] = []
    for message in history:
        if message.role == "user" or not rounds:
            rounds.append([message])
        else:
            rounds[-1].append(message)
    return rounds


def _exchanges(turn: list[Message]) -> list[list[Message]]:
    """Group an assistant message with the tool results that answer it."""
    groups: list[list[Message]] = []
    for message in turn:
        if message.role == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups
