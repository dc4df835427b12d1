"""The agent runtime: the turn loop (loop.py), the tools it offers (tools.py), the
request building under the runtime policy (context.py), debug-log writing (debug.py), the vendor adapters
(providers/), conversations (conversations.py). Other apps and tests import the entry points from here."""

from agents.runtime.context import estimate_tokens, prepare_messages, prune_tool_results
from agents.runtime.conversations import ConversationReply, conversation_peer, conversation_send
from agents.runtime.errors import TurnFailed
from agents.runtime.loop import (
    PreparedTurn,
    agent_run_test,
    agent_turn_complete,
    agent_turn_prepare,
    agent_turn_run,
    agent_turn_run_child,
)

__all__ = [
    "ConversationReply",
    "PreparedTurn",
    "TurnFailed",
    "agent_run_test",
    "agent_turn_complete",
    "agent_turn_prepare",
    "agent_turn_run",
    "agent_turn_run_child",
    "conversation_peer",
    "conversation_send",
    "estimate_tokens",
    "prepare_messages",
    "prune_tool_results",
]
