"""Versions and the approval queue: an agent's history, the queue of proposals with their
diffs, and what every proposal answers (202 with the pending version, 200 once live,
with a `Location` to follow it).
"""

from __future__ import annotations

from django.db.models import F, Q
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import ID_REGEX, MAX_TEXT, NUMBER_REGEX, AgentChildViewSet, KeyField, username
from agents.diff import ItemChanges, TextChange, snapshot_diff
from agents.models import PromptVersion
from agents.selectors import agent_version_get, agent_versions, prompt_version_get, prompt_version_queue
from agents.services import (
    approval_state,
    prompt_version_approve,
    prompt_version_rebase,
    prompt_version_rebase_plan,
    prompt_version_reject,
    prompt_version_restore,
    prompt_version_reverts,
    prompt_version_withdraw,
)
from agents.snapshot import empty_snapshot
from aihummer.api import AdminViewSet, InputSerializer, JsonObjectField, if_match_version
from aihummer.exceptions import NotFound

SOURCE_KINDS = ("admin", "api", "mcp", "agent", "cli")


def _text_change(change: TextChange) -> dict:
    return {"field": change.label, "before": change.before, "after": change.after}


def _items(changes: ItemChanges) -> dict:
    return {
        "added": changes.added,
        "removed": changes.removed,
        "edited": [{"key": item["key"], "changes": [_text_change(c) for c in edits]} for item, edits in changes.edited],
        "reordered": {"before": changes.reordered[0], "after": changes.reordered[1]} if changes.reordered else None,
    }


def diff_as_json(before: dict, after: dict) -> dict:
    """The structured diff of two snapshots, as the review page shows it."""
    diff = snapshot_diff(before, after)
    return {
        "change_count": diff.change_count,
        "identity": [_text_change(c) for c in diff.identity],
        "system_prompt": _text_change(diff.system_prompt) if diff.system_prompt else None,
        "onboarding": _text_change(diff.onboarding) if diff.onboarding else None,
        "sections": _items(diff.sections),
        "skills": _items(diff.skills),
        "tools_added": diff.tools_added,
        "tools_removed": diff.tools_removed,
        "runtime_policy": [{"path": path, "before": old, "after": new} for path, old, new in diff.policy],
        "preset": {"before": diff.preset[0], "after": diff.preset[1]} if diff.preset else None,
    }


class TextChangeSerializer(serializers.Serializer):
    field = serializers.CharField()
    before = serializers.CharField(allow_blank=True)
    after = serializers.CharField(allow_blank=True)


class ItemEditSerializer(serializers.Serializer):
    key = serializers.CharField()
    changes = TextChangeSerializer(many=True)


class ReorderSerializer(serializers.Serializer):
    before = serializers.ListField(child=serializers.CharField())
    after = serializers.ListField(child=serializers.CharField())


class ItemChangesSerializer(serializers.Serializer):
    added = serializers.ListField(child=JsonObjectField())
    removed = serializers.ListField(child=JsonObjectField())
    edited = ItemEditSerializer(many=True)
    reordered = ReorderSerializer(allow_null=True)


class PolicyChangeSerializer(serializers.Serializer):
    path = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class PresetChangeSerializer(serializers.Serializer):
    before = serializers.CharField(allow_null=True, help_text="The preset's key; null: the workspace's default.")
    after = serializers.CharField(allow_null=True, help_text="The preset's key; null: the workspace's default.")


class DiffSerializer(serializers.Serializer):
    change_count = serializers.IntegerField()
    identity = TextChangeSerializer(many=True)
    system_prompt = TextChangeSerializer(allow_null=True)
    onboarding = TextChangeSerializer(allow_null=True)
    sections = ItemChangesSerializer()
    skills = ItemChangesSerializer()
    tools_added = serializers.ListField(child=serializers.CharField())
    tools_removed = serializers.ListField(child=serializers.CharField())
    runtime_policy = PolicyChangeSerializer(many=True)
    preset = PresetChangeSerializer(allow_null=True, help_text="Null: the same preset.")


class DiffStatsSerializer(serializers.Serializer):
    changes = serializers.IntegerField()
    added_chars = serializers.IntegerField()
    removed_chars = serializers.IntegerField()


class TierReasonSerializer(serializers.Serializer):
    tier = serializers.ChoiceField(choices=PromptVersion.Tier.choices)
    line = serializers.CharField()


class DecisionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["approve", "reject"])
    reviewer = serializers.CharField()
    at = serializers.DateTimeField()
    seen_live_number = serializers.IntegerField(allow_null=True)
    live_at = serializers.DateTimeField(allow_null=True)


class ApprovalsSerializer(serializers.Serializer):
    tier = serializers.ChoiceField(choices=PromptVersion.Tier.choices)
    given = serializers.IntegerField()
    needed = serializers.IntegerField(help_text="Distinct approvals the tier needs (the workspace's approval policy).")
    consensus = serializers.BooleanField(help_text="One rejection rejects it.")
    wait_minutes = serializers.IntegerField(help_text="Least minutes between the proposal and its going live.")
    summary = serializers.CharField(help_text='"1 of 2 approvals".')
    decisions = DecisionSerializer(many=True)


class VersionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField(source="agent.key")
    number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=PromptVersion.Status.choices)
    source = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    proposed_by = serializers.SerializerMethodField()
    base_version = serializers.IntegerField(source="base_version.number", allow_null=True, default=None)
    reviewed_by = serializers.SerializerMethodField()
    reviewed_at = serializers.DateTimeField(allow_null=True)
    review_note = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    is_stale = serializers.BooleanField()
    diff_stats = DiffStatsSerializer()
    tier = serializers.ChoiceField(
        choices=PromptVersion.Tier.choices, help_text="The risk tier, computed from the diff against base_version."
    )
    tier_reasons = TierReasonSerializer(many=True, help_text="The diff lines that put it in its tier, strictest first.")
    go_live_at = serializers.DateTimeField(
        allow_null=True, help_text="Every approval is in: beat puts it live at this time."
    )
    go_live_problem = serializers.CharField(allow_blank=True, help_text="Why beat left it pending at its time.")

    @extend_schema_field({"type": "string", "nullable": True})
    def get_proposed_by(self, version: PromptVersion) -> str | None:
        return username(version.proposed_by)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_reviewed_by(self, version: PromptVersion) -> str | None:
        return username(version.reviewed_by)

    def to_representation(self, version: PromptVersion) -> dict:
        data = super().to_representation(version)
        data["diff_stats"] = {"changes": 0, "added_chars": 0, "removed_chars": 0, **(version.diff_stats or {})}
        return data


class ConflictSerializer(serializers.Serializer):
    part = serializers.CharField()
    base = serializers.CharField()
    live = serializers.CharField()
    proposal = serializers.CharField()


class RebasePlanSerializer(serializers.Serializer):
    possible = serializers.BooleanField()
    conflicts = ConflictSerializer(many=True)


class DecidedSerializer(VersionSerializer):
    approvals = serializers.SerializerMethodField(help_text="Where its quorum stands.")

    @extend_schema_field(ApprovalsSerializer)
    def get_approvals(self, version: PromptVersion) -> dict:
        return approval_state(version).as_json()


class VersionDetailSerializer(DecidedSerializer):
    live_version = serializers.IntegerField(
        source="agent.live_number", allow_null=True, help_text="Null while the agent's version 1 waits for review."
    )
    reverts = serializers.SerializerMethodField(help_text="Live versions that approving this one would undo.")
    rebase = serializers.SerializerMethodField(
        help_text="For a stale proposal: whether it rebases onto live (POST .../rebase), or the parts both changed, "
        "three ways. Null otherwise."
    )
    snapshot = JsonObjectField()
    diff = serializers.SerializerMethodField(help_text="From the live version to this one.")

    @extend_schema_field(RebasePlanSerializer(allow_null=True))
    def get_rebase(self, version: PromptVersion) -> dict | None:
        plan = prompt_version_rebase_plan(version)
        if plan is None:
            return None
        return {"possible": plan.clean, "conflicts": [vars(conflict) for conflict in plan.conflicts]}

    @extend_schema_field({"type": "array", "items": {"type": "integer"}})
    def get_reverts(self, version: PromptVersion) -> list[int]:
        return [v.number for v in prompt_version_reverts(version)] if version.is_pending else []

    @extend_schema_field(DiffSerializer)
    def get_diff(self, version: PromptVersion) -> dict:
        return diff_as_json(version.agent.live_snapshot or empty_snapshot(), version.snapshot)


class ProposalInSerializer(InputSerializer):
    """What every change to what an agent is told may carry."""

    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    mode = serializers.ChoiceField(
        choices=["pending", "live"],
        default="pending",
        help_text="`live` applies at once (publish right, and the workspace allows it); `pending` waits for review.",
    )


PROPOSAL_RESPONSES = {
    200: VersionSerializer,
    202: VersionSerializer,
}


def proposal_response(version: PromptVersion) -> Response:
    """202 while it waits for review, 200 once live; `Location` follows it either way."""
    code = status.HTTP_202_ACCEPTED if version.is_pending else status.HTTP_200_OK
    location = reverse("v1:prompt-version-detail", args=[version.pk])
    return Response(VersionSerializer(version).data, status=code, headers={"Location": location})


def proposal_args(serializer: serializers.Serializer, request: Request) -> dict:
    return {
        "reason": serializer.validated_data.get("reason", ""),
        "mode": serializer.validated_data.get("mode", "pending"),
        "expected_live": if_match_version(request),
    }


class ProposalQuerySerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    mode = serializers.ChoiceField(choices=["pending", "live"], default="pending")


PROPOSAL_QUERY = [
    OpenApiParameter("reason", str, description="Why this change?"),
    OpenApiParameter("mode", str, enum=["pending", "live"], description="`live` applies at once (publish right)."),
]


class AgentVersionViewSet(AgentChildViewSet):
    """`/v1/admin/agents/{agent_key}/versions`: the agent's history, newest first."""

    lookup_field = "number"
    lookup_value_regex = NUMBER_REGEX
    ordering = "-number"

    def get_queryset(self) -> object:
        return agent_versions(agent=self.get_agent()).select_related("agent")

    @extend_schema(responses=VersionSerializer(many=True))
    def list(self, request: Request, agent_key: str) -> Response:
        """Every version of the agent, newest first."""
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(VersionSerializer(page, many=True).data)

    @extend_schema(responses=VersionDetailSerializer)
    def retrieve(self, request: Request, agent_key: str, number: str) -> Response:
        """One version with its snapshot and its structured diff against live."""
        version = agent_version_get(agent=self.get_agent(), number=number)
        return Response(VersionDetailSerializer(version).data)

    @extend_schema(request=ProposalInSerializer, responses=PROPOSAL_RESPONSES)
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, agent_key: str, number: str) -> Response:
        """Propose (or, `mode: live` with the publish right, apply) this old snapshot as
        a new version; history is never rewritten."""
        serializer = ProposalInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = agent_version_get(agent=self.get_agent(), number=number)
        restored = prompt_version_restore(version=version, actor=self.actor, **proposal_args(serializer, request))
        return proposal_response(restored)


class QueueFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=PromptVersion.Status.choices, required=False)
    agent = KeyField(required=False)
    source_kind = serializers.ChoiceField(choices=SOURCE_KINDS, required=False)
    stale = serializers.BooleanField(required=False, allow_null=True, default=None)


class ApproveSerializer(InputSerializer):
    note = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    confirm_stale = serializers.IntegerField(
        min_value=1,
        max_value=10**9,
        required=False,
        allow_null=True,
        default=None,
        help_text="For a stale proposal: the live version number you saw, confirming that approving reverts the "
        "versions listed in `reverts`. Refused again if yet another version went live since. Without it, "
        "`If-Match` may carry the live version you saw.",
    )
    confirm_regressions = serializers.ListField(
        child=serializers.CharField(max_length=200),
        max_length=1000,
        required=False,
        default=list,
        help_text="Where the workspace blocks approval on regressions: the names of the test cases the proposal "
        "fails and live passes, confirming you approve it anyway (the 409 lists them in `regressions`).",
    )
    live_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Go live at this time (at most 90 days ahead) once every approval is in; the latest any approver "
        "asked wins, and the tier's wait time is a minimum. Empty: at once.",
    )


class RejectSerializer(InputSerializer):
    note = serializers.CharField(max_length=MAX_TEXT, help_text="Why: the proposer reads it.")


class PromptVersionViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/prompt-versions`: the approval queue. Approve and reject are people's
    decisions (a session with the reviewer role), never an API key's."""

    lookup_value_regex = ID_REGEX
    ordering = "-pk"
    ordering_fields = ("created_at",)
    serializer_class = VersionSerializer

    @extend_schema(parameters=[QueueFilterSerializer])
    def list(self, request: Request) -> Response:
        """Versions of the workspace's agents, newest first; filter by status, agent,
        source kind (admin, api, mcp, agent, cli) and staleness."""
        return super().list(request)

    def get_queryset(self) -> object:
        filters = QueueFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        queryset = prompt_version_queue(actor=self.actor).filter(workspace=self.workspace)
        if "status" in data:
            queryset = queryset.filter(status=data["status"])
        if "agent" in data:
            queryset = queryset.filter(agent__key=data["agent"])
        if "source_kind" in data:
            queryset = queryset.filter(source__startswith=f"{data['source_kind']}:")
        if data.get("stale") is not None:
            stale = Q(status=PromptVersion.Status.PENDING) & ~Q(base_version_id=F("agent__live_version_id"))
            queryset = queryset.filter(stale) if data["stale"] else queryset.exclude(stale)
        return queryset

    def get_version(self) -> PromptVersion:
        version = prompt_version_get(actor=self.actor, pk=self.kwargs["pk"])
        if version.workspace_id != self.workspace.pk:
            raise NotFound("Unknown version.")
        return version

    @extend_schema(responses=VersionDetailSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        """One version with its snapshot, its diff against live, and what approving
        would revert when it is stale."""
        return Response(VersionDetailSerializer(self.get_version()).data)

    @extend_schema(request=None, responses=VersionSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        """The proposer takes back a pending proposal."""
        version = prompt_version_withdraw(version=self.get_version(), actor=self.actor)
        return Response(VersionSerializer(version).data)

    @extend_schema(request=ApproveSerializer, responses=DecidedSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve and put live (a person with the reviewer role, not the proposer)."""
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        seen = data["confirm_stale"]
        version = prompt_version_approve(
            version=self.get_version(),
            actor=self.actor,
            note=data["note"],
            expected_live=seen if seen is not None else if_match_version(request),
            confirm_stale=seen is not None,
            confirm_regressions=data["confirm_regressions"],
            live_at=data["live_at"],
        )
        return Response(DecidedSerializer(version).data)

    @extend_schema(request=None, responses={202: VersionSerializer})
    @action(detail=True, methods=["post"])
    def rebase(self, request: Request, pk: str) -> Response:
        """Carry a stale proposal's change onto the live version (`If-Match`: the live
        version you saw): a new pending version; this one is withdrawn. 409 with
        `conflicts` when both changed the same part."""
        version = prompt_version_rebase(
            version=self.get_version(), actor=self.actor, expected_live=if_match_version(request)
        )
        return proposal_response(version)

    @extend_schema(request=RejectSerializer, responses=DecidedSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        """Reject with a note; the proposal is never applied."""
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = prompt_version_reject(
            version=self.get_version(), actor=self.actor, note=serializer.validated_data["note"]
        )
        return Response(DecidedSerializer(version).data)
