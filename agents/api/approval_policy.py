"""`/v1/admin/approval-policy`: the workspace's approval policy, per risk tier (how many
distinct people approve, whether one rejection ends it, the least wait). Read by every
member; changed by admins (the manage right), with history like every config row."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import ApprovalPolicy
from agents.models.approval_policy import MAX_APPROVALS, MAX_WAIT_MINUTES
from agents.selectors import approval_policy_history
from agents.services import approval_policy_get, approval_policy_update
from aihummer.actors import Verb
from aihummer.api import ApiCursorPagination, ApiMixin, InputSerializer


class TierSerializer(InputSerializer):
    approvals = serializers.IntegerField(
        min_value=1, max_value=MAX_APPROVALS, help_text="Distinct people who must approve."
    )
    consensus = serializers.BooleanField(help_text="One rejection rejects the proposal.")
    wait_minutes = serializers.IntegerField(
        min_value=0, max_value=MAX_WAIT_MINUTES, help_text="Least minutes between the proposal and its going live."
    )


class TierPatchSerializer(TierSerializer):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class PolicyTiersSerializer(serializers.Serializer):
    wording = TierSerializer(help_text="Section, onboarding and skill text; tools removed; limits lowered.")
    identity = TierSerializer(help_text="Identity fields and the system prompt override.")
    power = TierSerializer(help_text="Tools added, limits raised, children or interaction rights widened.")


class ApprovalPolicySerializer(PolicyTiersSerializer):
    updated_at = serializers.DateTimeField(allow_null=True)


class ApprovalPolicyPatchSerializer(InputSerializer):
    wording = TierPatchSerializer(required=False)
    identity = TierPatchSerializer(required=False)
    power = TierPatchSerializer(required=False)
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


def _rule_json(rule: object) -> dict:
    return {name: value for name, value in rule._asdict().items() if name != "tier"}


def policy_as_json(policy: ApprovalPolicy) -> dict:
    tiers = {tier: _rule_json(policy.rule(tier)) for tier in ApprovalPolicy.TIERS}
    return {**tiers, "updated_at": policy.updated_at if policy.pk else None}


class ApprovalPolicyApi(ApiMixin, APIView):
    """The workspace's approval policy (the default until an admin changes it)."""

    @extend_schema(responses=ApprovalPolicySerializer)
    def get(self, request: Request) -> Response:
        self.actor.require(Verb.READ, self.workspace)
        return Response(ApprovalPolicySerializer(policy_as_json(approval_policy_get(workspace=self.workspace))).data)

    @extend_schema(request=ApprovalPolicyPatchSerializer, responses=ApprovalPolicySerializer)
    def patch(self, request: Request) -> Response:
        serializer = ApprovalPolicyPatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        reason = data.pop("reason")
        fields = {f"{tier}_{name}": value for tier, values in data.items() for name, value in values.items()}
        policy = approval_policy_update(workspace=self.workspace, actor=self.actor, reason=reason, **fields)
        return Response(ApprovalPolicySerializer(policy_as_json(policy)).data)


class ApprovalPolicyChangeSerializer(serializers.Serializer):
    """One change of the policy: who, when, why, and the whole policy it left."""

    id = serializers.IntegerField(source="history_id")
    changed_at = serializers.DateTimeField(source="history_date")
    change = serializers.SerializerMethodField(help_text="`created`, `changed` or `deleted`.")
    changed_by = serializers.CharField(source="history_user.username", allow_null=True, default=None)
    reason = serializers.CharField(source="history_change_reason", allow_null=True)
    policy = serializers.SerializerMethodField(help_text="The policy as this change left it.")

    CHANGES = {"+": "created", "~": "changed", "-": "deleted"}

    @extend_schema_field(serializers.ChoiceField(choices=["created", "changed", "deleted"]))
    def get_change(self, row: object) -> str:
        return self.CHANGES[row.history_type]

    @extend_schema_field(PolicyTiersSerializer)
    def get_policy(self, row: object) -> dict:
        return {tier: _rule_json(ApprovalPolicy.rule(row, tier)) for tier in ApprovalPolicy.TIERS}


class ApprovalPolicyHistoryApi(ApiMixin, GenericAPIView):
    """`/v1/admin/approval-policy/history`: every change of the policy, newest first."""

    pagination_class = ApiCursorPagination
    ordering = "-history_id"
    serializer_class = ApprovalPolicyChangeSerializer

    def get_queryset(self) -> object:
        return approval_policy_history(actor=self.actor, workspace=self.workspace)

    @extend_schema(responses=ApprovalPolicyChangeSerializer(many=True))
    def get(self, request: Request) -> Response:
        """The policy's changes, newest first (empty while it is the default)."""
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
