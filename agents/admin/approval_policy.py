"""The workspace's approval policy in the admin: one row per workspace, with history;
saving goes through `approval_policy_update` like the REST API."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.functional import lazy
from django.utils.translation import gettext

from agents.models import ApprovalPolicy, PromptVersion
from agents.services import approval_policy_update
from agents.services.approvals import POLICY_FIELDS
from aihummer.actors import Verb
from aihummer.admin_site import ServiceModelForm, WorkspaceScopedAdmin


class ApprovalPolicyForm(ServiceModelForm):
    class Meta:
        model = ApprovalPolicy
        fields = ["workspace", *POLICY_FIELDS]

    def call_service(self) -> ApprovalPolicy:
        data = self.cleaned_data
        workspace = self.instance.workspace if self.instance.pk else data["workspace"]
        return approval_policy_update(
            workspace=workspace, actor=self.actor, **{name: data[name] for name in POLICY_FIELDS}
        )


# A fieldset's heading, translated when the page is drawn (not at import).
tier_heading = lazy(lambda tier: gettext("%(tier)s tier") % {"tier": PromptVersion.Tier(tier).label.lower()}, str)


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(WorkspaceScopedAdmin):
    form = ApprovalPolicyForm
    add_verb = change_verb = delete_verb = Verb.MANAGE
    list_display = ["workspace", "wording_approvals", "identity_approvals", "power_approvals", "updated_at"]
    list_select_related = ["workspace"]
    fieldsets = [
        (None, {"fields": ["workspace"]}),
        *[
            (
                tier_heading(tier),
                {"fields": [f"{tier}_approvals", f"{tier}_consensus", f"{tier}_wait_minutes"]},
            )
            for tier in ApprovalPolicy.TIERS
        ],
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApprovalPolicy | None = None) -> list[str]:
        return ["workspace"] if obj else []
