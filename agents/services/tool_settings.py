"""Tool settings (issue 30): what a workspace requires of tool calls, and an agent's
side-effect tools (SMTP account, HTTP allow-list). They decide where an agent's calls
may go and who must approve them: managing them needs the MANAGE right."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from agents.models import Agent, AgentToolSettings, Credential, WorkspaceToolPolicy
from aihummer.actors import Actor, Verb
from aihummer.models import Workspace
from aihummer.service_checks import save_checked

AGENT_TOOL_FIELDS = (
    "extra_approval_tools",
    "on_reject",
    "smtp_host",
    "smtp_port",
    "smtp_security",
    "smtp_user",
    "smtp_password",
    "mail_from",
    "http_allowed_hosts",
    "http_timeout_seconds",
    "http_max_response_bytes",
)
POLICY_FIELDS = ("approval_tools", "allow_private_addresses", "approval_expiry_hours")


def _tool_names(value: object, field: str) -> None:
    if not isinstance(value, list) or not all(isinstance(name, str) and name for name in value):
        raise ValidationError({field: 'Give a list of tool names, e.g. ["mail_send", "http_request"].'})


def workspace_tool_policy_update(*, workspace: Workspace, actor: Actor, **fields: object) -> WorkspaceToolPolicy:
    """Set the workspace's tool policy (created with the defaults if it has none)."""
    actor.require(Verb.MANAGE, workspace)
    unknown = set(fields) - set(POLICY_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown field."))
    if "approval_tools" in fields:
        _tool_names(fields["approval_tools"], "approval_tools")
    policy = WorkspaceToolPolicy.objects.filter(workspace=workspace).first() or WorkspaceToolPolicy(workspace=workspace)
    for name, value in fields.items():
        setattr(policy, name, value)
    save_checked(policy, actor=actor, reason="tool policy updated", noun="tool policy")
    return policy


def agent_tool_settings_update(*, agent: Agent, actor: Actor, **fields: object) -> AgentToolSettings:
    """Set an agent's tool settings (created if it has none). `smtp_password` is a
    Credential of the agent's workspace (its secret never passes here)."""
    actor.require(Verb.SANDBOX if agent.is_sandbox else Verb.MANAGE, agent.workspace)
    unknown = set(fields) - set(AGENT_TOOL_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "Unknown field."))
    if "extra_approval_tools" in fields:
        _tool_names(fields["extra_approval_tools"], "extra_approval_tools")
    credential = fields.get("smtp_password")
    if credential is not None and (
        not isinstance(credential, Credential) or credential.workspace_id != agent.workspace_id
    ):
        raise ValidationError({"smtp_password": "Give a credential of the agent's workspace."})
    row = AgentToolSettings.objects.filter(agent=agent).first() or AgentToolSettings(agent=agent)
    for name, value in fields.items():
        setattr(row, name, value)
    save_checked(row, actor=actor, reason="tool settings updated", noun="tool settings")
    return row
