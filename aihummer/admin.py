from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest
from django.utils import timezone

from aihummer.actors import Actor, Verb
from aihummer.admin_site import ServiceModelForm, WorkspaceScopedAdmin
from aihummer.exceptions import ApplicationError
from aihummer.models import ApiAuditEntry, ApiKey, Membership, OidcIdentity, User, Workspace
from aihummer.services import VALID_SCOPES, api_key_create, api_key_revoke


class OidcIdentityInline(admin.TabularInline):
    """Who the person is at the identity provider; written only by single sign-on."""

    model = OidcIdentity
    extra = 0
    fields = readonly_fields = ["issuer", "subject", "last_login_at", "created_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return False


@admin.register(User)
class AiHummerUserAdmin(UserAdmin):
    """People are managed by superusers; workspace admins add them by username."""

    inlines = [OidcIdentityInline]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return request.user.is_superuser

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return request.user.is_superuser


class MembershipForm(forms.ModelForm):
    # A username to type, not a list of every user: members of one workspace must not
    # be able to enumerate the people of the others.
    user = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True),
        to_field_name="username",
        widget=forms.TextInput,
        error_messages={"invalid_choice": "No active user has this username."},
    )

    class Meta:
        model = Membership
        fields = ["user", "role"]

    def clean_role(self) -> str:
        role = self.cleaned_data["role"]
        if self.instance.pk and self.instance.managed_by_sso and role != self.instance.role:
            raise forms.ValidationError(
                "This role comes from the person's groups at the identity provider; change the groups there."
            )
        return role


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    extra = 0
    readonly_fields = ["managed_by_sso"]

    def _may_manage(self, request: HttpRequest, obj: Workspace | None) -> bool:
        return obj is not None and Actor.for_request(request).can(Verb.MANAGE, obj)

    def has_view_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return obj is None or Actor.for_request(request).can(Verb.READ, obj)

    def has_add_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)


@admin.register(Workspace)
class WorkspaceAdmin(WorkspaceScopedAdmin):
    workspace_path = ""
    list_display = ["slug", "name", "every_change_needs_review", "member_count", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).annotate(member_count=models.Count("memberships"))

    @admin.display(description="members", ordering="member_count")
    def member_count(self, obj: Workspace) -> int:
        return obj.member_count

    def get_readonly_fields(self, request: HttpRequest, obj: Workspace | None = None) -> list[str]:
        return ["slug"] if obj else []

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return request.user.is_superuser


class ApiKeyCreateForm(ServiceModelForm):
    scopes = forms.MultipleChoiceField(choices=ApiKey.Scope.choices, widget=forms.CheckboxSelectMultiple)
    owner = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True),
        to_field_name="username",
        widget=forms.TextInput,
        required=False,
        help_text="Username of the person answerable for this key (optional).",
        error_messages={"invalid_choice": "No active user has this username."},
    )

    class Meta:
        model = ApiKey
        fields = ["workspace", "name", "owner", "scopes"]

    def clean_scopes(self) -> str:
        return ",".join(scope for scope in VALID_SCOPES if scope in self.cleaned_data["scopes"])

    def call_service(self) -> ApiKey:
        data = self.cleaned_data
        api_key, self.raw_key = api_key_create(
            workspace=data["workspace"], name=data["name"], scopes=data["scopes"], owner=data["owner"], actor=self.actor
        )
        return api_key


@admin.register(ApiKey)
class ApiKeyAdmin(WorkspaceScopedAdmin):
    list_display = ["name", "workspace", "owner", "scopes", "status", "last_used_at", "created_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "owner"]
    search_fields = ["name"]
    actions = ["revoke_keys"]
    readonly_fields = ["workspace", "name", "owner", "scopes", "status", "revoked_at", "last_used_at", "created_at"]

    @admin.display(description="status")
    def status(self, obj: ApiKey) -> str:
        return "revoked" if obj.is_revoked else "active"

    def get_form(self, request: HttpRequest, obj: ApiKey | None = None, **kwargs: object) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return self.readonly_fields if obj else ["workspace", "name", "owner", "scopes"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return self.readonly_fields if obj else []

    def has_change_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        # A key never changes after creation; it can only be revoked (an action).
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # revoked keys stay, so what they did remains attributable

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return self.allowed(request, Verb.MANAGE)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: ApiKeyCreateForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        messages.warning(request, f"Copy this key now; it will not be shown again: {form.raw_key}")

    @admin.action(description="Revoke selected API keys", permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        actor = self.actor(request)
        revoked = 0
        for api_key in queryset.select_related("workspace"):
            try:
                api_key_revoke(api_key=api_key, actor=actor)
                revoked += 1
            except (ApplicationError, PermissionDenied) as exc:
                messages.error(request, f"{api_key.name}: {exc}")
        if revoked:
            messages.success(request, f"Revoked {revoked} API key(s) at {timezone.now():%Y-%m-%d %H:%M} UTC.")


@admin.register(ApiAuditEntry)
class ApiAuditEntryAdmin(admin.ModelAdmin):
    """The REST API's writes, read-only: who, what, the outcome and the request id that
    ties an entry to the client's logs. Workspace admins see their workspaces' entries;
    entries refused before a workspace was known are a superuser's."""

    list_display = ["created_at", "method", "path", "status_code", "actor_source", "request_id", "workspace"]
    list_filter = ["method", "status_code"]
    search_fields = ["request_id", "path", "actor_source"]
    list_select_related = ["workspace", "person"]
    date_hierarchy = "created_at"

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        queryset = super().get_queryset(request)
        workspace_ids = Actor.for_request(request).workspace_ids(Verb.MANAGE)
        return queryset if workspace_ids is None else queryset.filter(workspace_id__in=workspace_ids)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: ApiAuditEntry | None = None) -> bool:
        actor = Actor.for_request(request)
        if obj is None:
            workspace_ids = actor.workspace_ids(Verb.MANAGE)
            return workspace_ids is None or bool(workspace_ids)
        if obj.workspace is None:
            return request.user.is_superuser
        return actor.can(Verb.MANAGE, obj.workspace)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ApiAuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ApiAuditEntry | None = None) -> bool:
        return False
