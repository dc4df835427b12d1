"""Tool settings in the admin (issue 30): each workspace's tool policy and each agent's
side-effect tools, written through `agents.services.tool_settings` (the manage right).
The SMTP password's credential picker offers the agent's workspace's credentials only
(the add page: those of the workspaces the person manages, checked against the agent's
on save); the password itself is write-only."""

from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_post_parameters

from agents.admin.forms import AgentToolSettingsForm, WorkspaceToolPolicyForm
from agents.models import AgentToolSettings, Credential, WorkspaceToolPolicy
from aihummer.admin_site import WorkspaceScopedAdmin


@admin.register(WorkspaceToolPolicy)
class WorkspaceToolPolicyAdmin(WorkspaceScopedAdmin):
    form = WorkspaceToolPolicyForm
    list_display = ["workspace", "approval_tools", "allow_private_addresses", "approval_expiry_hours", "updated_at"]
    list_select_related = ["workspace"]

    def get_readonly_fields(self, request: HttpRequest, obj: WorkspaceToolPolicy | None = None) -> list[str]:
        return ["workspace"] if obj else []


@admin.register(AgentToolSettings)
class AgentToolSettingsAdmin(WorkspaceScopedAdmin):
    form = AgentToolSettingsForm
    workspace_path = "agent__workspace"
    list_display = ["agent", "smtp_host", "mail_from", "password_status", "on_reject", "updated_at"]
    list_select_related = ["agent__workspace", "smtp_password"]
    search_fields = ["agent__key", "smtp_host", "mail_from"]
    fieldsets = [
        (None, {"fields": ["agent", "extra_approval_tools", "on_reject"]}),
        (
            _("Mail (mail_send)"),
            {
                "fields": [
                    "smtp_host",
                    "smtp_port",
                    "smtp_security",
                    "smtp_user",
                    "smtp_password",
                    "smtp_password_secret",
                    "mail_from",
                ]
            },
        ),
        (
            _("HTTP (http_request)"),
            {"fields": ["http_allowed_hosts", "http_timeout_seconds", "http_max_response_bytes"]},
        ),
    ]

    @method_decorator(sensitive_post_parameters("smtp_password_secret"))
    def changeform_view(self, *args: object, **kwargs: object) -> HttpResponse:
        return super().changeform_view(*args, **kwargs)

    @admin.display(description=_("SMTP password"))
    def password_status(self, obj: AgentToolSettings) -> str:
        return gettext("set · %(key)s") % {"key": obj.smtp_password.key} if obj.smtp_password_id else "-"

    def get_readonly_fields(self, request: HttpRequest, obj: AgentToolSettings | None = None) -> list[str]:
        return ["agent"] if obj else []

    def get_form(self, request: HttpRequest, obj: AgentToolSettings | None = None, **kwargs: object) -> type:
        request.tool_settings_agent = obj.agent if obj else None  # for the credential picker below
        return super().get_form(request, obj, **kwargs)

    def formfield_for_foreignkey(self, db_field: models.Field, request: HttpRequest, **kwargs: object) -> object:
        if db_field.name == "smtp_password":
            queryset = Credential.objects.defer("ciphertext")  # never load a ciphertext to draw a picker
            agent = getattr(request, "tool_settings_agent", None)
            if agent is not None:
                kwargs["queryset"] = queryset.filter(workspace_id=agent.workspace_id)
            else:
                workspace_ids = self.actor(request).workspace_ids(self.add_verb)
                kwargs["queryset"] = (
                    queryset if workspace_ids is None else queryset.filter(workspace_id__in=workspace_ids)
                )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
