"""Tool settings (issue 30) over REST: `/v1/admin/tool-policy` (which tools wait for a
person in the workspace, private addresses, how long a request may wait) and
`/v1/admin/agents/{key}/tool-settings` (an agent's SMTP account and HTTP allow-list,
the tools it adds to the approvals, what a refusal does). Read by every member;
changed with the manage right (a person with the admin role). The SMTP password is
write-only: a vault credential named by key, or `smtp_password` (the secret) that goes
to the vault and is never shown again."""

from __future__ import annotations

from django.views.decorators.debug import sensitive_variables
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.api.base import KeyField
from agents.destinations import MAX_HOST_PATTERNS
from agents.models import AgentToolSettings, WorkspaceToolPolicy
from agents.selectors import agent_get_by_key
from agents.services.tool_settings import (
    agent_tool_settings_change,
    agent_tool_settings_get,
    workspace_tool_policy_get,
    workspace_tool_policy_update,
)
from aihummer.actors import Verb
from aihummer.api import ApiMixin, InputSerializer

TOOLS_HELP = 'Tool names, e.g. ["mail_send", "http_request"].'


def tool_names(**kwargs: object) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=50), max_length=50, help_text=TOOLS_HELP, **kwargs
    )


class ToolPolicySerializer(serializers.Serializer):
    approval_tools = serializers.ListField(child=serializers.CharField(), help_text="Tools whose every call waits.")
    allow_private_addresses = serializers.BooleanField()
    approval_expiry_hours = serializers.IntegerField()
    updated_at = serializers.DateTimeField(allow_null=True, help_text="null: the defaults, never changed.")


class ToolPolicyPatchSerializer(InputSerializer):
    approval_tools = tool_names(required=False)
    allow_private_addresses = serializers.BooleanField(required=False)
    approval_expiry_hours = serializers.IntegerField(min_value=1, max_value=24 * 30, required=False)


def _policy_json(policy: WorkspaceToolPolicy) -> dict:
    fields = ("approval_tools", "allow_private_addresses", "approval_expiry_hours")
    return {name: getattr(policy, name) for name in fields} | {"updated_at": policy.updated_at if policy.pk else None}


class ToolPolicyApi(ApiMixin, APIView):
    """The workspace's tool policy (the defaults until an admin changes it)."""

    @extend_schema(responses=ToolPolicySerializer)
    def get(self, request: Request) -> Response:
        self.actor.require(Verb.READ, self.workspace)
        return Response(ToolPolicySerializer(_policy_json(workspace_tool_policy_get(workspace=self.workspace))).data)

    @extend_schema(request=ToolPolicyPatchSerializer, responses=ToolPolicySerializer)
    def patch(self, request: Request) -> Response:
        serializer = ToolPolicyPatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = workspace_tool_policy_update(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        return Response(ToolPolicySerializer(_policy_json(policy)).data)


class AgentToolSettingsSerializer(serializers.Serializer):
    agent = serializers.CharField(source="agent.key")
    extra_approval_tools = serializers.ListField(child=serializers.CharField())
    on_reject = serializers.ChoiceField(choices=AgentToolSettings.OnReject.choices)
    smtp_host = serializers.CharField()
    smtp_port = serializers.IntegerField()
    smtp_security = serializers.ChoiceField(choices=AgentToolSettings.SmtpSecurity.choices)
    smtp_user = serializers.CharField()
    smtp_password_credential = serializers.CharField(
        source="smtp_password.key", allow_null=True, default=None, help_text="The vault credential (its key only)."
    )
    smtp_password = serializers.SerializerMethodField(help_text='"set" when a password is in the vault, else null.')
    mail_from = serializers.CharField()
    http_allowed_hosts = serializers.ListField(child=serializers.CharField())
    http_timeout_seconds = serializers.IntegerField()
    http_max_response_bytes = serializers.IntegerField()
    updated_at = serializers.DateTimeField(allow_null=True, help_text="null: the defaults, never changed.")

    @extend_schema_field({"type": "string", "enum": ["set"], "nullable": True})
    def get_smtp_password(self, row: AgentToolSettings) -> str | None:
        return "set" if row.smtp_password_id else None


class AgentToolSettingsPatchSerializer(InputSerializer):
    extra_approval_tools = tool_names(required=False)
    on_reject = serializers.ChoiceField(choices=AgentToolSettings.OnReject.choices, required=False)
    smtp_host = serializers.CharField(max_length=255, required=False, allow_blank=True)
    smtp_port = serializers.IntegerField(min_value=1, max_value=65535, required=False)
    smtp_security = serializers.ChoiceField(choices=AgentToolSettings.SmtpSecurity.choices, required=False)
    smtp_user = serializers.CharField(max_length=255, required=False, allow_blank=True)
    smtp_password_credential = KeyField(
        required=False, allow_null=True, help_text="A vault credential's key (null: none)."
    )
    smtp_password = serializers.CharField(
        max_length=10_000,
        required=False,
        write_only=True,
        style={"input_type": "password"},
        help_text="The SMTP password itself: goes to the vault (the credential named, or a new "
        "`smtp-<agent>`), never shown again.",
    )
    mail_from = serializers.EmailField(required=False, allow_blank=True)
    http_allowed_hosts = serializers.ListField(
        child=serializers.CharField(max_length=253), max_length=MAX_HOST_PATTERNS, required=False
    )
    http_timeout_seconds = serializers.IntegerField(min_value=1, max_value=60, required=False)
    http_max_response_bytes = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False)

    def validate(self, data: dict) -> dict:
        if "smtp_password" in data and "smtp_password_credential" in data:
            raise serializers.ValidationError(
                {"smtp_password": "Give either the password or the credential's key, not both."}
            )
        return data


class AgentToolSettingsApi(ApiMixin, APIView):
    """`/v1/admin/agents/{key}/tool-settings`: the agent's side-effect tools."""

    def get_agent(self) -> object:
        return agent_get_by_key(actor=self.actor, workspace=self.workspace, key=self.kwargs["agent_key"])

    @extend_schema(responses=AgentToolSettingsSerializer)
    def get(self, request: Request, agent_key: str) -> Response:
        row = agent_tool_settings_get(agent=self.get_agent())
        return Response(AgentToolSettingsSerializer(_settings_json(row)).data)

    @extend_schema(request=AgentToolSettingsPatchSerializer, responses=AgentToolSettingsSerializer)
    @sensitive_variables("fields")
    def patch(self, request: Request, agent_key: str) -> Response:
        agent = self.get_agent()
        serializer = AgentToolSettingsPatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        if "smtp_password" in fields:
            fields["smtp_password_secret"] = fields.pop("smtp_password")
        row = agent_tool_settings_change(agent=agent, actor=self.actor, **fields)
        return Response(AgentToolSettingsSerializer(_settings_json(row)).data)


def _settings_json(row: AgentToolSettings) -> AgentToolSettings:
    row.updated_at = row.updated_at if row.pk else None
    return row
