"""MCP tools for agents and presets (assembled by `aihummer/mcp.py`).

Each tool parses its parameters, calls the same services and selectors as the admin,
and returns the payload of its success; failures are what the services raise, turned
into tool errors in one place. Names and shapes follow the seed (`update_agent_system_prompt`
of Synapse) and issue 16.
"""

from agents.mcp.common import (
    KEY_PATTERN,
    NOTHING_GIVEN,
    PENDING_MESSAGE,
    WAITING_FOR,
    Force,
    IncludeSandbox,
    WaitingFor,
    preset_for,
    waiting_for,
)
from agents.mcp.maintaining import delete_agent, delete_preset, known_tools, update_agent, update_preset
from agents.mcp.reading import get_agent, inspect_agent_debug, list_agents, list_models, list_presets
from agents.mcp.talking import handoff_conversation, run_agent_test, send_message, update_agent_system_prompt

__all__ = [
    "KEY_PATTERN",
    "NOTHING_GIVEN",
    "PENDING_MESSAGE",
    "TOOLS",
    "WAITING_FOR",
    "Force",
    "IncludeSandbox",
    "WaitingFor",
    "known_tools",
    "preset_for",
    "waiting_for",
]

TOOLS = [
    list_agents,
    get_agent,
    list_presets,
    list_models,
    update_agent_system_prompt,
    run_agent_test,
    send_message,
    handoff_conversation,
    inspect_agent_debug,
    update_agent,
    update_preset,
    delete_agent,
    delete_preset,
]
