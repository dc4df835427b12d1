"""The agent runtime: the turn loop, its tools, the context budget, debug logs, providers.

Other apps and tests import the turn entry points from here.
"""

from agents.runtime.loop import (
    TurnFailed,
    agent_run_test,
    agent_turn_run,
    delegate_to,
    estimate_tokens,
    prepare_messages,
    prune_tool_results,
)

__all__ = [
    "TurnFailed",
    "agent_run_test",
    "agent_turn_run",
    "delegate_to",
    "estimate_tokens",
    "prepare_messages",
    "prune_tool_results",
]
