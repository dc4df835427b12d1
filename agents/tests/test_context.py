"""What each request of a turn is sent (agents/runtime/context.py): pruning of stale tool
results and the history window, as pure functions of messages and the policy.

Sizes are chosen so the arithmetic is visible: 4 characters a token, 8 tokens of
framing per message, a budget of `max_tokens` (or the model's window) less the reserve.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents import catalog
from agents.policy import parse_runtime_policy
from agents.policy_models import RuntimePolicy
from agents.runtime import TurnFailed, prepare_messages, prune_tool_results
from agents.runtime.context import History, context_window, history_budget, soft_trim
from agents.runtime.providers.base import Message, ToolCall

NOW = 1_800_000_000.0
NO_PRESSURE = {"soft_trim_ratio": 1.0, "hard_clear_ratio": 1.0}


def exchange(number: int, result: str) -> list[Message]:
    """An assistant tool call and the tool result that answers it."""
    call = ToolCall(id=f"call-{number}", name="lookup", arguments={}, raw_arguments="{}")
    return [
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", content=result, tool_call_id=f"call-{number}", tool_name="lookup"),
    ]


def pruning(**fields: object) -> object:
    return parse_runtime_policy({"pruning": fields}).pruning


def model(window: int) -> catalog.ModelInfo:
    return catalog.ModelInfo(
        provider="echo",
        name="tiny",
        label="Tiny",
        context_window=window,
        max_output_tokens=500,
        streaming=False,
        tools=True,
        vision=False,
        input_per_mtok=Decimal(0),
        output_per_mtok=Decimal(0),
        cached_input_per_mtok=Decimal(0),
    )


# --- pruning ---------------------------------------------------------------------------
def conversation(results: list[str]) -> list[Message]:
    """user, then per result: an assistant call, its result, an assistant answer."""
    messages = [Message(role="user", content="u" * 100)]
    for number, result in enumerate(results, start=1):
        messages += [*exchange(number, result), Message(role="assistant", content=f"answer {number}")]
    return messages


def test_a_request_under_the_soft_ratio_is_not_pruned() -> None:
    messages = conversation(["a" * 3_000, "b" * 3_000])

    # 6 120 characters of 40 000 (10 000 tokens): 0.15 < 0.3.
    pruned = prune_tool_results(messages, [600.0] * 7, pruning(keep_last_assistants=1), budget_chars=40_000)

    assert pruned == messages


def test_the_soft_trim_keeps_the_head_and_the_tail_of_stale_results() -> None:
    messages = conversation(["a" * 1_000 + "z" * 1_000, "b" * 2_000, "c" * 2_000])

    # 6 100+ characters of 10 000: over 0.3, and after the trim under 0.5.
    pruned = prune_tool_results(
        messages,
        [600.0] * len(messages),
        pruning(keep_last_assistants=2, head_chars=10, tail_chars=5),
        budget_chars=10_000,
    )

    assert pruned[2].content == (
        "a" * 10 + "\n…\n" + "z" * 5 + "\n[tool result trimmed: the first 10 and last 5 of 2000 characters kept]"
    )
    # The last two assistant messages are call 3 and answer 3: result 2 is before them, 3 is not.
    assert pruned[5].content.startswith("b" * 10 + "\n…\n")
    assert pruned[8].content == "c" * 2_000
    assert [m.content for m in pruned if m.role != "tool"] == [m.content for m in messages if m.role != "tool"]
    assert messages[2].content == "a" * 1_000 + "z" * 1_000  # the input is not changed


def test_a_soft_trim_with_no_tail_keeps_only_the_head() -> None:
    assert (
        soft_trim("abcdefghij" * 20, 4, 0)
        == "abcd\n…\n\n[tool result trimmed: the first 4 and last 0 of 200 characters kept]"
    )
    assert soft_trim("short", 4, 0) == "short"


def test_the_hard_clear_replaces_stale_results_oldest_first_until_under_its_ratio() -> None:
    messages = conversation(["a" * 4_000, "b" * 4_000, "c" * 4_000, "d" * 4_000])

    # 16 000+ characters of 20 000; a soft trim to 3 000 + note keeps it over 0.5 (10 000),
    # so results 1, 2… are cleared until the total is under 10 000.
    pruned = prune_tool_results(
        messages,
        [600.0] * len(messages),
        pruning(keep_last_assistants=1, head_chars=1_500, tail_chars=1_500, placeholder="[gone]"),
        budget_chars=20_000,
    )

    results = [m.content for m in pruned if m.role == "tool"]
    assert results[0] == "[gone]"
    assert results[1].startswith("b" * 1_500 + "\n…\n")
    assert results[2].startswith("c" * 1_500 + "\n…\n")
    assert results[3].startswith("d" * 1_500 + "\n…\n")
    assert sum(len(m.content) for m in pruned) <= 10_000


def test_results_younger_than_the_ttl_stay_whole() -> None:
    messages = conversation(["a" * 4_000, "b" * 4_000])
    ages = [900.0, 900.0, 900.0, 900.0, 10.0, 10.0, 10.0]

    pruned = prune_tool_results(
        messages, ages, pruning(ttl_seconds=300, keep_last_assistants=0, placeholder="[gone]"), budget_chars=4_000
    )

    assert [m.content for m in pruned if m.role == "tool"] == ["[gone]", "b" * 4_000]


def test_the_last_assistants_protect_the_results_after_them() -> None:
    messages = conversation(["a" * 4_000, "b" * 4_000, "c" * 4_000])

    pruned = prune_tool_results(
        messages, [900.0] * 10, pruning(keep_last_assistants=4, placeholder="[gone]"), budget_chars=4_000
    )

    # Assistants: call1, answer1, call2, answer2, call3, answer3; the last four start at call2.
    assert [m.content for m in pruned if m.role == "tool"] == ["[gone]", "b" * 4_000, "c" * 4_000]


def test_with_fewer_assistants_than_protected_nothing_is_pruned() -> None:
    messages = conversation(["a" * 40_000])

    pruned = prune_tool_results(messages, [900.0] * 4, pruning(keep_last_assistants=3), budget_chars=4_000)

    assert pruned == messages


def test_ratios_of_one_prune_only_past_the_whole_budget() -> None:
    messages = conversation(["a" * 3_000, "b" * 3_000])

    kept = prune_tool_results(messages, [900.0] * 7, pruning(keep_last_assistants=0, **NO_PRESSURE), budget_chars=7_000)
    cut = prune_tool_results(messages, [900.0] * 7, pruning(keep_last_assistants=0, **NO_PRESSURE), budget_chars=6_000)

    assert kept == messages
    assert cut != messages


def test_the_users_text_is_never_pruned() -> None:
    messages = [Message(role="user", content="u" * 50_000), *exchange(1, "r" * 50_000), Message(role="assistant")]

    pruned = prune_tool_results(
        messages, [900.0] * 4, pruning(keep_last_assistants=0, placeholder="[gone]"), budget_chars=1_000
    )

    assert [m.content for m in pruned] == ["u" * 50_000, "", "[gone]", ""]


# --- the window ------------------------------------------------------------------------
def budget_policy(**context: object) -> RuntimePolicy:
    return parse_runtime_policy({"context": {"reserve_tokens": 0, **context}, "pruning": NO_PRESSURE})


def test_the_turns_exchanges_fit_the_history_share_by_dropping_the_oldest() -> None:
    # Budget 1000, history 500; each exchange costs (0 + 8) + (200 + 8) = 216 tokens.
    policy = budget_policy(max_tokens=1000, history_share=0.5)
    user = Message(role="user", content="u" * 400)
    first, second, third = exchange(1, "a" * 800), exchange(2, "b" * 800), exchange(3, "c" * 800)

    prepared, dropped = prepare_messages([user, *first, *second, *third], policy, "s" * 400, None)

    assert dropped == 1
    assert prepared == [user, *second, *third]


def test_a_history_within_the_budget_is_sent_as_it_is() -> None:
    policy = budget_policy(max_tokens=1000, history_share=0.5)
    messages = [Message(role="user", content="u" * 400), *exchange(1, "a" * 800), *exchange(2, "b" * 800)]

    prepared, dropped = prepare_messages(messages, policy, "s" * 400, None)

    assert (prepared, dropped) == (messages, 0)


def test_the_users_message_and_the_newest_exchange_always_stay() -> None:
    # History budget 250: only the newest exchange (216) fits.
    policy = budget_policy(max_tokens=1000, history_share=0.25)
    user = Message(role="user", content="u" * 2000)
    first, second, third = exchange(1, "a" * 800), exchange(2, "b" * 800), exchange(3, "c" * 800)

    prepared, dropped = prepare_messages([user, *first, *second, *third], policy, "s" * 400, None)

    assert dropped == 2
    assert prepared == [user, *third]


def test_the_history_never_takes_what_the_prompt_and_message_need() -> None:
    # Share 0.9 would allow 900 tokens, but the prompt and message already need 800.
    policy = budget_policy(max_tokens=1000, history_share=0.9)
    user = Message(role="user", content="u" * 1600)
    first, second = exchange(1, "a" * 400), exchange(2, "b" * 400)  # 116 tokens each

    prepared, dropped = prepare_messages([user, *first, *second], policy, "s" * 1600, None)

    assert dropped == 1
    assert prepared == [user, *second]


def test_earlier_rounds_of_a_conversation_leave_the_window_whole_and_first() -> None:
    # Each round: a 400-character question and a 400-character answer, 2 * 108 = 216 tokens.
    policy = budget_policy(max_tokens=1000, history_share=0.5)
    rounds = [
        [Message(role="user", content=f"{n}" * 400), Message(role="assistant", content=f"{n}" * 400)] for n in range(3)
    ]
    history = History(messages=tuple(m for r in rounds for m in r), written_at=(NOW,) * 6)
    user = Message(role="user", content="now")

    prepared, dropped = prepare_messages([user], policy, "s" * 400, None, history, now=NOW)

    assert dropped == 1
    assert prepared == [*rounds[1], *rounds[2], user]


def test_the_reference_text_counts_against_the_budget() -> None:
    policy = budget_policy(max_tokens=1000, history_share=0.9)
    history = History(
        messages=(Message(role="user", content="q" * 400), Message(role="assistant", content="a" * 400)),
        written_at=(NOW, NOW),
        reference="r" * 2_800,  # 700 tokens
    )

    prepared, dropped = prepare_messages([Message(role="user", content="now")], policy, "s" * 400, None, history)

    assert dropped == 1
    assert prepared == [Message(role="user", content="now")]


def test_a_prompt_and_message_bigger_than_the_budget_fail_the_turn() -> None:
    policy = parse_runtime_policy({"context": {"max_tokens": 1000, "reserve_tokens": 100}})

    with pytest.raises(TurnFailed) as failed:
        prepare_messages([Message(role="user", content="u" * 401)], policy, "s" * 3200, None)

    assert str(failed.value) == (
        "The system prompt and message need about 901 tokens, but runtime_policy.context allows "
        "900 (a budget of 1000 tokens minus reserve_tokens 100)."
    )


def test_the_models_context_window_caps_an_explicit_budget() -> None:
    policy = parse_runtime_policy({"context": {"max_tokens": 128_000, "reserve_tokens": 500}})

    with pytest.raises(TurnFailed) as failed:
        prepare_messages([Message(role="user", content="u" * 8000)], policy, "sys", model(2_000))

    assert str(failed.value) == (
        "The system prompt and message need about 2001 tokens, but runtime_policy.context allows "
        "1500 (a budget of 2000 tokens minus reserve_tokens 500)."
    )


def test_without_max_tokens_the_budget_is_the_models_window() -> None:
    policy = parse_runtime_policy({})

    assert context_window(policy, model(32_000)) == 32_000
    assert context_window(policy, None) == 128_000
    assert context_window(parse_runtime_policy({"context": {"max_tokens": 8_000}}), model(32_000)) == 8_000
    assert history_budget(parse_runtime_policy({"context": {"max_tokens": 8_000}}), None) == (8_000 - 4_096) // 2
