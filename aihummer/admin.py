from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from aihummer.actors import Actor, Verb
from aihummer.admin_site import SERVICE_ERRORS, ServiceModelForm, WorkspaceScopedAdmin, service_error_message
from aihummer.history import stamp
from aihummer.models import ApiAuditEntry, ApiKey, Invitation, Membership, OidcIdentity, User, Workspace
from aihummer.services import (
    VALID_SCOPES,
    api_key_create,
    api_key_revoke,
    invitation_create,
    membership_remove,
    membership_set,
)


class OidcIdentityInline(admin.TabularInline):
    """Who the person is at the identity provider; written only by single sign-on."""

    model = OidcIdentity
    extra = 0
    fields = readonly_fields = ["issuer", "subject", "last_login_at", "created_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return False


# Roles come from workspace memberships; Django's groups grant nothing here.
admin.site.unregister(Group)


@admin.register(User)
class AiHummerUserAdmin(UserAdmin):
    """People are managed by superusers; workspace admins add them by username."""

    inlines = [OidcIdentityInline]
    fieldsets = [*UserAdmin.fieldsets, (_("Desk"), {"fields": ["language"]})]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return Actor.for_request(request).is_site_admin

    def has_view_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return Actor.for_request(request).is_site_admin

    def has_add_permission(self, request: HttpRequest) -> bool:
        return Actor.for_request(request).is_site_admin

    def has_change_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return Actor.for_request(request).is_site_admin

    def has_delete_permission(self, request: HttpRequest, obj: User | None = None) -> bool:
        return Actor.for_request(request).is_site_admin


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ["role"]

    def clean_role(self) -> str:
        role = self.cleaned_data["role"]
        if self.instance.pk and self.instance.managed_by_sso and role != self.instance.role:
            raise forms.ValidationError(
                _("This role comes from the person's groups at the identity provider; change the groups there.")
            )
        return role


class MembershipInline(admin.TabularInline):
    """Current members and their roles. People join through invitations, never by
    being picked from the accounts of other workspaces."""

    model = Membership
    form = MembershipForm
    fields = ["user", "role", "managed_by_sso"]
    readonly_fields = ["user", "managed_by_sso"]
    extra = 0

    def _may_manage(self, request: HttpRequest, obj: Workspace | None) -> bool:
        return obj is not None and Actor.for_request(request).can(Verb.MANAGE, obj)

    def has_view_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return obj is None or Actor.for_request(request).can(Verb.READ, obj)

    def has_add_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)


class InvitationInline(MembershipInline):
    model = Invitation
    form = forms.ModelForm
    fields = ["identifier", "role", "invited_by", "accepted_at"]
    readonly_fields = ["invited_by", "accepted_at"]
    verbose_name_plural = _("invitations (the person joins when they next sign in)")

    def has_add_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)

    def has_view_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return self._may_manage(request, obj)


@admin.register(Workspace)
class WorkspaceAdmin(WorkspaceScopedAdmin):
    workspace_path = ""
    list_display = ["slug", "name", "every_change_needs_review", "member_count", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline, InvitationInline]

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: forms.BaseModelFormSet, change: bool):
        """Invitations and role changes go through their services (rights, history);
        the answer is the same whether or not the invited account exists."""
        if formset.model not in (Invitation, Membership):
            return super().save_formset(request, form, formset, change)
        actor = self.actor(request)
        # What the admin's change message reads, as formset.save() would have set it.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for row in formset.forms:
            if row in formset.deleted_forms or not row.has_changed() or not row.cleaned_data:
                continue
            data = row.cleaned_data
            if formset.model is Invitation:
                invitation_create(
                    workspace=form.instance, identifier=data["identifier"], role=data["role"], actor=actor
                )
                messages.info(
                    request,
                    gettext(
                        "Invitation for “%(identifier)s” saved: they join as %(role)s when they next sign in "
                        "with that username or e-mail."
                    )
                    % {"identifier": data["identifier"], "role": str(Membership.Role(data["role"]).label).lower()},
                )
            else:
                membership_set(workspace=form.instance, user=row.instance.user, role=data["role"], actor=actor)
            formset.changed_objects.append((row.instance, row.changed_data))
        for row in formset.deleted_forms:
            if not row.instance.pk:
                continue
            if formset.model is Membership:
                membership_remove(membership=row.instance, actor=actor)
            else:
                actor.require(Verb.MANAGE, form.instance)
                stamp(row.instance, actor=actor, reason="withdrawn")
                row.instance.delete()
            formset.deleted_objects.append(row.instance)
        return None

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return super().get_queryset(request).annotate(member_count=models.Count("memberships"))

    @admin.display(description=_("members"), ordering="member_count")
    def member_count(self, obj: Workspace) -> int:
        return obj.member_count

    def get_readonly_fields(self, request: HttpRequest, obj: Workspace | None = None) -> list[str]:
        return ["slug"] if obj else []

    def has_add_permission(self, request: HttpRequest) -> bool:
        return Actor.for_request(request).is_site_admin

    def has_delete_permission(self, request: HttpRequest, obj: Workspace | None = None) -> bool:
        return Actor.for_request(request).is_site_admin


class ApiKeyCreateForm(ServiceModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiKey.Scope.choices, widget=forms.CheckboxSelectMultiple, label=_("scopes")
    )
    owner = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True),
        to_field_name="username",
        widget=forms.TextInput,
        required=False,
        label=_("owner"),
        help_text=_("Username of the person answerable for this key (optional)."),
        error_messages={"invalid_choice": _("No active user has this username.")},
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
    list_display = ["name", "workspace", "owner", "created_by", "scopes", "status", "last_used_at", "created_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace", "owner", "created_by"]
    search_fields = ["name"]
    actions = ["revoke_keys"]
    readonly_fields = [
        "workspace",
        "name",
        "owner",
        "created_by",
        "scopes",
        "status",
        "revoked_at",
        "last_used_at",
        "created_at",
    ]

    @admin.display(description=_("status"))
    def status(self, obj: ApiKey) -> str:
        return gettext("revoked") if obj.is_revoked else gettext("active")

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
        request._aihummer_raw_key = form.raw_key

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        # The full key is rendered in this response only: a flash message would carry
        # it in the messages cookie, which is signed, not encrypted.
        response = TemplateResponse(
            request,
            "admin/aihummer/apikey/created.html",
            {**self.admin_site.each_context(request), "api_key": obj, "raw_key": request._aihummer_raw_key},
        )
        add_never_cache_headers(response)
        return response

    @admin.action(description=_("Revoke selected API keys"), permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: models.QuerySet) -> None:
        actor = self.actor(request)
        revoked = 0
        for api_key in queryset.select_related("workspace"):
            try:
                api_key_revoke(api_key=api_key, actor=actor)
                revoked += 1
            except SERVICE_ERRORS as exc:
                messages.error(request, f"{api_key.name}: {service_error_message(exc)}")
        if revoked:
            message = ngettext(
                "Revoked %(count)d API key at %(time)s UTC.", "Revoked %(count)d API keys at %(time)s UTC.", revoked
            )
            messages.success(request, message % {"count": revoked, "time": f"{timezone.now():%Y-%m-%d %H:%M}"})


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
