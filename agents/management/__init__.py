"""Helpers shared by the agents' management commands."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from agents.models import Agent, PromptVersion
from agents.selectors import agent_get_by_key
from aihummer.actors import Actor
from aihummer.management import by_key_or_error, workspace_or_error


def add_agent_arguments(parser: CommandParser) -> None:
    """`workspace agent [--version N]`: the agent version a command runs."""
    parser.add_argument("workspace", help="workspace slug")
    parser.add_argument("agent", help="agent key")
    # `--version` here is a prompt version: replace Django's own --version flag.
    parser.conflict_handler = parser._optionals.conflict_handler = "resolve"
    parser.add_argument("--version", type=int, help="run this version number instead of the live one")


def agent_version_or_error(options: dict, *, actor: Actor) -> tuple[Agent, PromptVersion | None]:
    """The agent and the version (None: the live one) a command's `workspace`, `agent`
    and `--version` name, resolved as every program surface resolves them, or the
    CommandError an operator reads."""
    workspace = workspace_or_error(options["workspace"])
    agent = by_key_or_error(agent_get_by_key, workspace=workspace, key=options["agent"], noun="agent", actor=actor)
    if options["version"] is None:
        return agent, None
    # all_objects: a sandbox agent's versions are sandbox rows too.
    version = PromptVersion.all_objects.filter(agent=agent, number=options["version"]).first()
    if version is None:
        raise CommandError(f"Agent '{agent.key}' has no version {options['version']}.")
    return agent, version
