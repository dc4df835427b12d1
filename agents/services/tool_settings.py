"""Tool settings (issue 30): what a workspace requires of tool calls, and an agent's
side-effect tools (SMTP account, HTTP allow-list). They decide where an agent's calls
may go and who must approve them: managing them needs the MANAGE right."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext
from django.views.decorators.debug import sensitive_variables

from agents.models import Agent, AgentToolSettings, Credential, WorkspaceToolPolicy
from agents.services.credentials import credential_create, credential_update
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
        raise ValidationError({"smtp_password": gettext("Give a credential of the agent's workspace.")})
    row = AgentToolSettings.objects.filter(agent=agent).first() or AgentToolSettings(agent=agent)
    for name, value in fields.items():
        setattr(row, name, value)
    save_checked(row, actor=actor, reason="tool settings updated", noun="tool settings")
    return row


def agent_tool_settings_get(*, agent: Agent) -> AgentToolSettings:
    """The agent's tool settings, or the defaults (unsaved) when it has none."""
    return AgentToolSettings.objects.select_related("smtp_password").filter(agent=agent).first() or AgentToolSettings(
        agent=agent
    )


def workspace_tool_policy_get(*, workspace: Workspace) -> WorkspaceToolPolicy:
    """The workspace's tool policy, or the defaults (unsaved) when it has none."""
    return WorkspaceToolPolicy.objects.filter(workspace=workspace).first() or WorkspaceToolPolicy(workspace=workspace)


def smtp_credential_key(agent: Agent) -> str:
    """The vault credential a password typed for the agent's SMTP account goes to."""
    return f"smtp-{agent.key}"[:50]


@sensitive_variables("secret")
def agent_smtp_password_set(*, agent: Agent, actor: Actor, secret: str) -> AgentToolSettings:
    """Write-only: put `secret` in the vault as the agent's SMTP password — the
    credential the settings name (its secret replaced), else a new one
    (`smtp-<agent key>`) — and point the settings at it, in one transaction. Needs the
    right to manage credentials; the secret is never stored anywhere else."""
    actor.require(Verb.MANAGE, agent.workspace)
    with transaction.atomic():
        current = agent_tool_settings_get(agent=agent).smtp_password
        if current is not None:
            credential_update(credential=current, actor=actor, secret=secret)
            return agent_tool_settings_get(agent=agent)
        credential = Credential.objects.filter(workspace=agent.workspace, key=smtp_credential_key(agent)).first()
        if credential is None:
            credential = credential_create(
                workspace=agent.workspace,
                key=smtp_credential_key(agent),
                name=f"SMTP password of {agent.key}",
                secret=secret,
                actor=actor,
            )
        else:
            credential_update(credential=credential, actor=actor, secret=secret)
        return agent_tool_settings_update(agent=agent, actor=actor, smtp_password=credential)


UNSET = object()


@sensitive_variables("smtp_password_secret")
def agent_tool_settings_change(
    *,
    agent: Agent,
    actor: Actor,
    smtp_password_credential: str | object | None = UNSET,
    smtp_password_secret: str | None = None,
    **fields: object,
) -> AgentToolSettings:
    """What a form or a PATCH changes at once, in one transaction: the plain fields, the
    SMTP password's credential named by key (None: none) or the password itself (to
    the vault, `agent_smtp_password_set`)."""
    if smtp_password_credential is not UNSET and smtp_password_secret is not None:
        raise ValidationError({"smtp_password": gettext("Give either the password or the credential's key, not both.")})
    if smtp_password_credential is not UNSET:
        fields["smtp_password"] = None
        if smtp_password_credential:
            fields["smtp_password"] = Credential.objects.filter(
                workspace=agent.workspace, key=smtp_password_credential
            ).first()
            if fields["smtp_password"] is None:
                raise ValidationError(
                    {"smtp_password_credential": f"No credential '{smtp_password_credential}' in this workspace."}
                )
    with transaction.atomic():
        row = agent_tool_settings_update(agent=agent, actor=actor, **fields)
        if smtp_password_secret is not None:
            row = agent_smtp_password_set(agent=agent, actor=actor, secret=smtp_password_secret)
    return row
