"""The REST resources of agents: agents and their profile, sections, skills, policy and
versions; the approval queue; presets, the model catalog, shared skills, credentials,
turns and debug logs.

Serializers translate, services decide: every write is validate → service → serialize.
A change to what an agent is told answers 202 with the pending version (200 when it
was applied directly) and a `Location` to follow it.
"""

from __future__ import annotations

import math

from django.db.models import F, Q
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents import catalog
from agents.diff import ItemChanges, TextChange, snapshot_diff
from agents.models import AgentTurn, Credential, DebugLog, Preset, PromptVersion, Skill
from agents.runtime import agent_run_test
from agents.runtime.tools import REGISTRY
from agents.selectors import (
    agent_get_by_key,
    agent_list,
    agent_version_get,
    agent_versions,
    prompt_version_get,
    prompt_version_queue,
    workspace_row_get,
    workspace_rows,
)
from agents.services import (
    agent_clone,
    agent_create,
    credential_create,
    credential_delete,
    credential_update,
    edits,
    preset_activate,
    preset_create,
    preset_delete,
    preset_update,
    prompt_version_reject,
    prompt_version_reverts,
    prompt_version_withdraw,
    skill_create,
    skill_update,
)
from agents.snapshot import KEY_PATTERN
from aihummer.api import AdminViewSet, if_match_version
from aihummer.exceptions import NotFound

KEY_REGEX = "[a-z0-9_-]{1,50}"
NUMBER_REGEX = r"\d{1,9}"
ID_REGEX = r"\d{1,18}"
SOURCE_KINDS = ("admin", "api", "mcp", "agent", "cli")
MAX_TEXT = 20_000


# --- fields ---------------------------------------------------------------------------
class KeyField(serializers.RegexField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(KEY_PATTERN, max_length=50, **kwargs)


class FiniteFloatField(serializers.FloatField):
    def to_internal_value(self, data: object) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Give a finite number.")
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class JsonObjectField(serializers.JSONField):
    def to_internal_value(self, data: object) -> dict:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return data


def username(user: object) -> str | None:
    return user.get_username() if user is not None else None


# --- diffs, versions ------------------------------------------------------------------
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


class DiffStatsSerializer(serializers.Serializer):
    changes = serializers.IntegerField()
    added_chars = serializers.IntegerField()
    removed_chars = serializers.IntegerField()


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


class VersionDetailSerializer(VersionSerializer):
    live_version = serializers.IntegerField(source="agent.live_version.number")
    reverts = serializers.SerializerMethodField(help_text="Live versions that approving this one would undo.")
    snapshot = JsonObjectField()
    diff = serializers.SerializerMethodField(help_text="From the live version to this one.")

    @extend_schema_field({"type": "array", "items": {"type": "integer"}})
    def get_reverts(self, version: PromptVersion) -> list[int]:
        return [v.number for v in prompt_version_reverts(version)] if version.is_pending else []

    @extend_schema_field(DiffSerializer)
    def get_diff(self, version: PromptVersion) -> dict:
        return diff_as_json(version.agent.live_version.snapshot, version.snapshot)


class ProposalInSerializer(serializers.Serializer):
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


def _proposal_args(serializer: serializers.Serializer, request: Request) -> dict:
    return {
        "reason": serializer.validated_data.get("reason", ""),
        "mode": serializer.validated_data.get("mode", "pending"),
        "expected_live": if_match_version(request),
    }


# --- agents ---------------------------------------------------------------------------
class ProfileSerializer(serializers.Serializer):
    """The G3 identity fields and the first-run guidance."""

    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    role = serializers.CharField(max_length=500, required=False, allow_blank=True)
    persona = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)
    language = serializers.CharField(max_length=35, required=False, allow_blank=True)
    goals = serializers.ListField(child=serializers.CharField(max_length=500), max_length=20, required=False)
    system_prompt = serializers.CharField(
        max_length=MAX_TEXT,
        required=False,
        allow_null=True,
        trim_whitespace=False,
        help_text="A plain prompt replacing identity, sections and onboarding; null for none.",
    )
    onboarding = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)


def profile_of(snapshot: dict) -> dict:
    return {**snapshot["identity"], "system_prompt": snapshot["system_prompt"], "onboarding": snapshot["onboarding"]}


def profile_changes(profile: dict) -> dict:
    changes: dict = {}
    identity = {k: v for k, v in profile.items() if k in ("name", "role", "persona", "language", "goals")}
    if identity:
        changes["identity"] = identity
    for key in ("system_prompt", "onboarding"):
        if key in profile:
            changes[key] = profile[key]
    return changes


class SectionSerializer(serializers.Serializer):
    key = KeyField()
    title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    body = serializers.CharField(
        max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    enabled = serializers.BooleanField(required=False, default=True)
    position = serializers.IntegerField(read_only=True)


class AgentSkillSerializer(serializers.Serializer):
    key = KeyField()
    title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    body = serializers.CharField(
        max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    shared = serializers.BooleanField(read_only=True, help_text="Copied from a shared skill.")


class AgentSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    preset = serializers.CharField(source="preset.key", allow_null=True, default=None)
    is_active = serializers.BooleanField()
    is_builtin = serializers.BooleanField()
    live_version = serializers.IntegerField(source="live_version.number")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AgentDetailSerializer(AgentSerializer):
    profile = serializers.SerializerMethodField()
    sections = serializers.SerializerMethodField()
    skills = serializers.SerializerMethodField()
    runtime_policy = serializers.SerializerMethodField()
    allowed_tool_names = serializers.SerializerMethodField()

    @extend_schema_field(ProfileSerializer)
    def get_profile(self, agent: object) -> dict:
        return profile_of(agent.live_version.snapshot)

    @extend_schema_field(SectionSerializer(many=True))
    def get_sections(self, agent: object) -> list[dict]:
        return agent.live_version.snapshot["sections"]

    @extend_schema_field(AgentSkillSerializer(many=True))
    def get_skills(self, agent: object) -> list[dict]:
        return agent.live_version.snapshot["skills"]

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_runtime_policy(self, agent: object) -> dict:
        return agent.live_version.snapshot["runtime_policy"]

    @extend_schema_field({"type": "array", "items": {"type": "string"}})
    def get_allowed_tool_names(self, agent: object) -> list[str]:
        return agent.live_version.snapshot["allowed_tool_names"]


class AgentCreateSerializer(serializers.Serializer):
    key = KeyField()
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    preset = KeyField(required=False, allow_null=True, default=None, help_text="Empty: the workspace's default.")
    profile = ProfileSerializer(required=False)
    sections = SectionSerializer(many=True, required=False)
    skills = AgentSkillSerializer(many=True, required=False)
    runtime_policy = JsonObjectField(required=False, help_text="Omitted or `{}`: the defaults.")
    allowed_tool_names = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(REGISTRY)), max_length=64, required=False
    )

    def snapshot(self) -> dict:
        data = self.validated_data
        changes = profile_changes(data.get("profile", {}))
        identity = {"name": data["name"], **changes.pop("identity", {})}
        snapshot = {"identity": identity, **changes}
        snapshot["sections"] = [dict(s) for s in data.get("sections", [])]
        snapshot["skills"] = [{**s, "shared": False} for s in data.get("skills", [])]
        for key in ("runtime_policy", "allowed_tool_names"):
            if key in data:
                snapshot[key] = data[key]
        return snapshot


class AgentUpdateSerializer(ProposalInSerializer):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True)
    preset = KeyField(required=False, allow_null=True)
    is_active = serializers.BooleanField(required=False)
    runtime_policy = JsonObjectField(
        required=False,
        help_text="A whole new policy, proposed like any change to what the agent is told: `{}` resets to the "
        "defaults, omitted keeps the current one. `reason` and `mode` apply to it.",
    )
    allowed_tool_names = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(REGISTRY)),
        max_length=64,
        required=False,
        help_text="The tools it may call (empty: none), proposed like the policy.",
    )


class AgentUpdatedSerializer(AgentDetailSerializer):
    proposal = VersionSerializer(allow_null=True, help_text="The policy change, when one was sent.")


class ProfileUpdateSerializer(ProposalInSerializer, ProfileSerializer):
    pass


class CloneSerializer(serializers.Serializer):
    key = KeyField()
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    version = serializers.IntegerField(
        min_value=1, max_value=10**9, required=False, help_text="The version to clone; default: live."
    )


class TestInSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=MAX_TEXT)
    version = serializers.IntegerField(min_value=1, max_value=10**9, required=False, help_text="Default: live.")


class TurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField(source="agent_key")
    version = serializers.IntegerField(source="version_number", allow_null=True)
    status = serializers.ChoiceField(choices=AgentTurn.Status.choices)
    dry_run = serializers.BooleanField()
    actor_source = serializers.CharField()
    provider_name = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    answer = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    model_calls = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6)
    prefix_hash = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)
    debug_logs = serializers.SerializerMethodField()

    @extend_schema_field({"type": "array", "items": {"type": "integer"}})
    def get_debug_logs(self, turn: AgentTurn) -> list[int]:
        return [log.pk for log in turn.debug_logs.all()]


def _with_etag(response: Response, agent: object) -> Response:
    response["ETag"] = f'"{agent.live_version.number}"'
    return response


class ForceSerializer(serializers.Serializer):
    force = serializers.BooleanField(required=False, default=False)


class ProposalQuerySerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)
    mode = serializers.ChoiceField(choices=["pending", "live"], default="pending")


PROPOSAL_QUERY = [
    OpenApiParameter("reason", str, description="Why this change?"),
    OpenApiParameter("mode", str, enum=["pending", "live"], description="`live` applies at once (publish right)."),
]


class AgentViewSet(
    mixins.ListModelMixin,
    AdminViewSet,
):
    """`/v1/admin/agents`: the workspace's agents."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "name", "created_at", "updated_at")
    if_match_actions = frozenset({"partial_update", "destroy", "profile", "runtime_policy"})

    def get_queryset(self) -> object:
        # Only what a list row shows: the projection's JSON columns cost more to decode
        # than everything else together.
        return agent_list(actor=self.actor, workspace=self.workspace).only(
            *("key", "name", "description", "is_active", "is_builtin", "created_at", "updated_at", "workspace_id"),
            *("preset__key", "live_version__number"),
        )

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return AgentSerializer

    def get_agent(self) -> object:
        return agent_get_by_key(actor=self.actor, workspace=self.workspace, key=self.kwargs["key"])

    def _detail(self, agent: object, code: int = status.HTTP_200_OK, *, reread: bool = True) -> Response:
        if reread:  # after a write: the row as stored, with its live version
            agent = agent_get_by_key(actor=self.actor, workspace=self.workspace, key=agent.key)
        return _with_etag(Response(AgentDetailSerializer(agent).data, status=code), agent)

    @extend_schema(request=AgentCreateSerializer, responses={201: AgentDetailSerializer})
    def create(self, request: Request) -> Response:
        """Create an agent with version 1 live (publish right)."""
        serializer = AgentCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        agent = agent_create(
            workspace=self.workspace,
            actor=self.actor,
            key=data["key"],
            name=data["name"],
            description=data["description"],
            preset=self._preset(data["preset"]),
            snapshot=serializer.snapshot(),
        )
        response = self._detail(agent, status.HTTP_201_CREATED)
        response["Location"] = reverse("v1:agent-detail", args=[agent.key])
        return response

    def _preset(self, key: str | None) -> Preset | None:
        if key is None:
            return None
        preset = workspace_rows(Preset, actor=self.actor, workspace=self.workspace).filter(key=key).first()
        if preset is None:
            raise serializers.ValidationError({"preset": [f"Unknown preset '{key}'."]})
        return preset

    @extend_schema(responses=AgentDetailSerializer)
    def retrieve(self, request: Request, key: str) -> Response:
        """One agent with its live profile; `ETag` is its live version number."""
        return self._detail(self.get_agent(), reread=False)

    @extend_schema(request=AgentUpdateSerializer, responses={200: AgentUpdatedSerializer, 202: AgentUpdatedSerializer})
    def partial_update(self, request: Request, key: str) -> Response:
        """Name, description, preset and enabled change at once (publish right);
        `runtime_policy` and `allowed_tool_names` are proposed (202 while the proposal
        waits for review, with its `Location`)."""
        serializer = AgentUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        reason, mode = fields.pop("reason"), fields.pop("mode")
        changes = {key: fields.pop(key) for key in ("runtime_policy", "allowed_tool_names") if key in fields}
        if "preset" in fields:
            fields["preset"] = self._preset(fields["preset"])
        agent, version = edits.agent_change(
            agent=self.get_agent(),
            actor=self.actor,
            fields=fields,
            changes=changes,
            reason=reason,
            mode=mode,
            expected_live=if_match_version(request),
        )
        agent = agent_get_by_key(actor=self.actor, workspace=self.workspace, key=agent.key)
        data = {**AgentDetailSerializer(agent).data, "proposal": VersionSerializer(version).data if version else None}
        response = _with_etag(Response(data), agent)
        if version is not None:
            response["Location"] = reverse("v1:prompt-version-detail", args=[version.pk])
            response.status_code = status.HTTP_202_ACCEPTED if version.is_pending else status.HTTP_200_OK
        return response

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, description="Delete even when other agents depend on it.")],
        responses={204: None},
    )
    def destroy(self, request: Request, key: str) -> Response:
        """Delete an agent and its versions; refused for built-in agents, and when others
        depend on it unless `force=true`."""
        force = ForceSerializer(data=request.query_params)
        force.is_valid(raise_exception=True)
        edits.agent_delete_checked(
            agent=self.get_agent(),
            actor=self.actor,
            force=force.validated_data["force"],
            expected_live=if_match_version(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(methods=["GET"], responses=ProfileSerializer)
    @extend_schema(methods=["PATCH"], request=ProfileUpdateSerializer, responses=PROPOSAL_RESPONSES)
    @action(detail=True, methods=["get", "patch"])
    def profile(self, request: Request, key: str) -> Response:
        """The G3 profile: identity fields, system prompt override, onboarding. A PATCH
        proposes the fields it names (identity merges field by field)."""
        agent = self.get_agent()
        if request.method == "GET":
            return _with_etag(Response(ProfileSerializer(profile_of(agent.live_version.snapshot)).data), agent)
        serializer = ProfileUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = profile_changes(serializer.validated_data)
        if not changes:
            raise serializers.ValidationError({"non_field_errors": ["Name at least one profile field to change."]})
        version = edits.agent_snapshot_edit(
            agent=agent, actor=self.actor, edit=edits.changes_as_given(changes), **_proposal_args(serializer, request)
        )
        return proposal_response(version)

    @extend_schema(methods=["GET"], responses=OpenApiTypes.OBJECT)
    @extend_schema(
        methods=["PUT"],
        request={"application/json": {"type": "object", "additionalProperties": True}},
        parameters=PROPOSAL_QUERY,
        responses=PROPOSAL_RESPONSES,
    )
    @action(detail=True, methods=["get", "put"], url_path="runtime-policy")
    def runtime_policy(self, request: Request, key: str) -> Response:
        """The runtime policy, every default filled in. A PUT proposes the body as the
        whole new policy: `{}` resets to the defaults; unknown fields or values out of
        range are refused with their JSON path. `reason` and `mode` go in the query."""
        agent = self.get_agent()
        if request.method == "GET":
            return _with_etag(Response(agent.live_version.snapshot["runtime_policy"]), agent)
        query = ProposalQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if not isinstance(request.data, dict):
            raise serializers.ValidationError({"non_field_errors": ["The policy must be a JSON object."]})
        edit = edits.runtime_policy_replace(policy=request.data)
        version = edits.agent_snapshot_edit(agent=agent, actor=self.actor, edit=edit, **_proposal_args(query, request))
        return proposal_response(version)

    @extend_schema(request=CloneSerializer, responses={201: AgentDetailSerializer})
    @action(detail=True, methods=["post"])
    def clone(self, request: Request, key: str) -> Response:
        """A new agent from one of this agent's versions (live by default)."""
        agent = self.get_agent()
        serializer = CloneSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        number = data.get("version")
        version = agent.live_version if number is None else agent_version_get(agent=agent, number=number)
        clone = agent_clone(
            version=version, actor=self.actor, key=data["key"], name=data["name"], description=data["description"]
        )
        response = self._detail(clone, status.HTTP_201_CREATED)
        response["Location"] = reverse("v1:agent-detail", args=[clone.key])
        return response

    @extend_schema(request=TestInSerializer, responses=TurnSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, key: str) -> Response:
        """One turn without side effects (self-edits and delegation are recorded, not run)."""
        agent = self.get_agent()
        serializer = TestInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        number = serializer.validated_data.get("version")
        version = None if number is None else agent_version_get(agent=agent, number=number)
        turn = agent_run_test(
            agent=agent, message=serializer.validated_data["message"], actor=self.actor, version=version
        )
        return Response(TurnSerializer(turn).data)


class AgentChildViewSet(AdminViewSet):
    """Base of the resources under one agent: `/v1/admin/agents/{agent_key}/...`."""

    if_match_actions = frozenset({"create", "partial_update", "destroy", "reorder", "restore"})

    def get_agent(self) -> object:
        return agent_get_by_key(actor=self.actor, workspace=self.workspace, key=self.kwargs["agent_key"])


class AgentSectionViewSet(AgentChildViewSet):
    """`/v1/admin/agents/{agent_key}/sections`: named, ordered blocks of the prompt."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    pagination_class = None

    class CreateSerializer(ProposalInSerializer, SectionSerializer):
        class Meta:
            ref_name = "SectionCreate"

        position = serializers.IntegerField(
            min_value=0, max_value=10_000, required=False, help_text="Where to insert it; default: last."
        )

    class UpdateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "SectionUpdate"

        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        body = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)
        enabled = serializers.BooleanField(required=False)

    class ReorderSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "SectionReorder"

        keys = serializers.ListField(child=KeyField(), max_length=500, help_text="Every section key, in the new order.")

    @extend_schema(responses=SectionSerializer(many=True))
    def list(self, request: Request, agent_key: str) -> Response:
        """The live sections, in order."""
        agent = self.get_agent()
        return _with_etag(Response(agent.live_version.snapshot["sections"]), agent)

    @extend_schema(request=CreateSerializer, responses=PROPOSAL_RESPONSES)
    def create(self, request: Request, agent_key: str) -> Response:
        """Propose a new section (at `position`, or last)."""
        serializer = self.CreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        edit = edits.section_add(
            key=data["key"],
            title=data["title"],
            body=data["body"],
            enabled=data["enabled"],
            position=data.get("position"),
        )
        return self._propose(edit, serializer)

    @extend_schema(request=UpdateSerializer, responses=PROPOSAL_RESPONSES)
    def partial_update(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose a change to one section's title, body or enabled flag."""
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = {
            f: serializer.validated_data[f] for f in ("title", "body", "enabled") if f in serializer.validated_data
        }
        if not fields:
            raise serializers.ValidationError({"non_field_errors": ["Name at least one of title, body, enabled."]})
        return self._propose(edits.section_update(key=key, **fields), serializer)

    @extend_schema(parameters=PROPOSAL_QUERY, responses=PROPOSAL_RESPONSES)
    def destroy(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose the agent without this section."""
        serializer = ProposalQuerySerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.section_remove(key=key), serializer)

    @extend_schema(request=ReorderSerializer, responses=PROPOSAL_RESPONSES)
    @action(detail=False, methods=["post"])
    def reorder(self, request: Request, agent_key: str) -> Response:
        """Propose a new order: every section key, once."""
        serializer = self.ReorderSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.sections_reorder(keys=serializer.validated_data["keys"]), serializer)

    def _propose(self, edit: edits.Edit, serializer: serializers.Serializer) -> Response:
        version = edits.agent_snapshot_edit(
            agent=self.get_agent(), actor=self.actor, edit=edit, **_proposal_args(serializer, self.request)
        )
        return proposal_response(version)


class AgentSkillViewSet(AgentChildViewSet):
    """`/v1/admin/agents/{agent_key}/skills`: shared skills attached by value, and the
    agent's own."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    pagination_class = None

    class CreateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "AgentSkillCreate"

        shared_skill = KeyField(required=False, help_text="Attach this shared skill (copied by value).")
        key = KeyField(required=False, help_text="Or add an own skill with this key, title and body.")
        title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        body = serializers.CharField(
            max_length=MAX_TEXT, required=False, default="", allow_blank=True, trim_whitespace=False
        )

        def validate(self, data: dict) -> dict:
            if ("shared_skill" in data) == ("key" in data):
                raise serializers.ValidationError("Give either shared_skill (attach) or key (an own skill).")
            return data

    class UpdateSerializer(ProposalInSerializer):
        class Meta:
            ref_name = "AgentSkillUpdate"

        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        body = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True, trim_whitespace=False)

    @extend_schema(responses=AgentSkillSerializer(many=True))
    def list(self, request: Request, agent_key: str) -> Response:
        """The live skills, in order."""
        agent = self.get_agent()
        return _with_etag(Response(agent.live_version.snapshot["skills"]), agent)

    @extend_schema(request=CreateSerializer, responses=PROPOSAL_RESPONSES)
    def create(self, request: Request, agent_key: str) -> Response:
        """Propose attaching a shared skill, or adding an own skill."""
        serializer = self.CreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "shared_skill" in data:
            skill = workspace_rows(Skill, actor=self.actor, workspace=self.workspace).filter(key=data["shared_skill"])
            if not skill.exists():
                raise serializers.ValidationError({"shared_skill": [f"Unknown shared skill '{data['shared_skill']}'."]})
            edit = edits.skill_attach(skill=skill.get())
        else:
            edit = edits.own_skill_add(key=data["key"], title=data["title"], body=data["body"])
        return self._propose(edit, serializer)

    @extend_schema(request=UpdateSerializer, responses=PROPOSAL_RESPONSES)
    def partial_update(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose new text for one of the agent's own skills."""
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = {f: serializer.validated_data[f] for f in ("title", "body") if f in serializer.validated_data}
        if not fields:
            raise serializers.ValidationError({"non_field_errors": ["Name at least one of title, body."]})
        return self._propose(edits.own_skill_update(key=key, **fields), serializer)

    @extend_schema(parameters=PROPOSAL_QUERY, responses=PROPOSAL_RESPONSES)
    def destroy(self, request: Request, agent_key: str, key: str) -> Response:
        """Propose the agent without this skill (detach)."""
        serializer = ProposalQuerySerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        return self._propose(edits.skill_detach(key=key), serializer)

    def _propose(self, edit: edits.Edit, serializer: serializers.Serializer) -> Response:
        version = edits.agent_snapshot_edit(
            agent=self.get_agent(), actor=self.actor, edit=edit, **_proposal_args(serializer, self.request)
        )
        return proposal_response(version)


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
        restored = edits.prompt_version_restore_checked(
            version=version, actor=self.actor, **_proposal_args(serializer, request)
        )
        return proposal_response(restored)


# --- the approval queue ---------------------------------------------------------------
class QueueFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=PromptVersion.Status.choices, required=False)
    agent = KeyField(required=False)
    source_kind = serializers.ChoiceField(choices=SOURCE_KINDS, required=False)
    stale = serializers.BooleanField(required=False, allow_null=True, default=None)


class ApproveSerializer(serializers.Serializer):
    note = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    confirm_stale = serializers.IntegerField(
        min_value=1,
        max_value=10**9,
        required=False,
        allow_null=True,
        default=None,
        help_text="For a stale proposal: the live version number you saw, confirming that approving reverts the "
        "versions listed in `reverts`. Refused again if yet another version went live since.",
    )


class RejectSerializer(serializers.Serializer):
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

    @extend_schema(request=ApproveSerializer, responses=VersionSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve and put live (a person with the reviewer role, not the proposer)."""
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = edits.prompt_version_approve_seen(
            version=self.get_version(),
            actor=self.actor,
            note=serializer.validated_data["note"],
            live_version_seen=serializer.validated_data["confirm_stale"],
        )
        return Response(VersionSerializer(version).data)

    @extend_schema(request=RejectSerializer, responses=VersionSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        """Reject with a note; the proposal is never applied."""
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = prompt_version_reject(
            version=self.get_version(), actor=self.actor, note=serializer.validated_data["note"]
        )
        return Response(VersionSerializer(version).data)


# --- presets, the catalog -------------------------------------------------------------
class PresetSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    provider_name = serializers.CharField()
    base_url = serializers.CharField(allow_blank=True)
    model = serializers.CharField()
    temperature = serializers.FloatField()
    top_p = serializers.FloatField()
    max_output_tokens = serializers.IntegerField(allow_null=True)
    timeout_seconds = serializers.IntegerField()
    streaming_enabled = serializers.BooleanField()
    credential = serializers.CharField(source="credential.key", allow_null=True, default=None)
    is_active = serializers.BooleanField(help_text="The workspace's default preset.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PresetWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    provider_name = serializers.ChoiceField(choices=Preset.Provider.choices)
    base_url = serializers.URLField(max_length=200, required=False, allow_blank=True)
    model = serializers.CharField(max_length=100)
    temperature = FiniteFloatField(min_value=0.0, max_value=2.0, required=False)
    top_p = FiniteFloatField(min_value=0.0, max_value=1.0, required=False)
    max_output_tokens = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False, allow_null=True)
    timeout_seconds = serializers.IntegerField(min_value=1, max_value=600, required=False)
    streaming_enabled = serializers.BooleanField(required=False)
    credential = KeyField(required=False, allow_null=True)


class PresetCreateSerializer(PresetWriteSerializer):
    key = KeyField()
    is_active = serializers.BooleanField(required=False, default=False)


class PresetViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/presets`: model configurations; the active one is the default."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "name", "created_at")
    serializer_class = PresetSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Preset, actor=self.actor, workspace=self.workspace).select_related("credential")

    def get_preset(self) -> Preset:
        return workspace_row_get(
            Preset, actor=self.actor, workspace=self.workspace, noun="preset", key=self.kwargs["key"]
        )

    def _fields(self, data: dict) -> dict:
        fields = dict(data)
        if "credential" in fields and fields["credential"] is not None:
            credential = workspace_rows(Credential, actor=self.actor, workspace=self.workspace).filter(
                key=fields["credential"]
            )
            if not credential.exists():
                raise serializers.ValidationError({"credential": [f"Unknown credential '{fields['credential']}'."]})
            fields["credential"] = credential.get()
        return fields

    @extend_schema(request=PresetCreateSerializer, responses={201: PresetSerializer})
    def create(self, request: Request) -> Response:
        """A new preset (publish right); `is_active` also makes it the default."""
        serializer = PresetCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        preset = preset_create(workspace=self.workspace, actor=self.actor, **self._fields(serializer.validated_data))
        headers = {"Location": reverse("v1:preset-detail", args=[preset.key])}
        return Response(PresetSerializer(preset).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(PresetSerializer(self.get_preset()).data)

    @extend_schema(request=PresetWriteSerializer(partial=True), responses=PresetSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Change a preset's model settings (publish right)."""
        serializer = PresetWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        preset = preset_update(preset=self.get_preset(), actor=self.actor, **self._fields(serializer.validated_data))
        return Response(PresetSerializer(preset).data)

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, description="Delete even when agents use it.")],
        responses={204: None},
    )
    def destroy(self, request: Request, key: str) -> Response:
        """Delete a preset; refused while agents use it unless `force=true` (they then
        fall back to the default)."""
        force = ForceSerializer(data=request.query_params)
        force.is_valid(raise_exception=True)
        preset_delete(preset=self.get_preset(), actor=self.actor, force=force.validated_data["force"])
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=PresetSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, key: str) -> Response:
        """Make this preset the workspace's default."""
        return Response(PresetSerializer(preset_activate(preset=self.get_preset(), actor=self.actor)).data)


class ModelSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    context_window = serializers.IntegerField()
    max_output_tokens = serializers.IntegerField()
    streaming = serializers.BooleanField()
    tools = serializers.BooleanField()
    vision = serializers.BooleanField()
    input_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)
    output_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)
    cached_input_per_mtok = serializers.DecimalField(max_digits=12, decimal_places=6)


class ProviderSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    accepts_base_url = serializers.BooleanField()
    models = ModelSerializer(many=True)


class ModelCatalogViewSet(AdminViewSet):
    """`/v1/admin/models`: the model catalog, read-only."""

    pagination_class = None

    @extend_schema(responses=ProviderSerializer(many=True))
    def list(self, request: Request) -> Response:
        """Every provider and its models, with limits and list prices (USD per million tokens)."""
        self.workspace  # noqa: B018 -- a caller of no workspace is refused like anywhere else
        return Response(ProviderSerializer(catalog.providers(), many=True).data)


# --- shared skills, credentials -------------------------------------------------------
class SkillSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    body = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SkillCreateSerializer(serializers.Serializer):
    key = KeyField()
    title = serializers.CharField(max_length=200)
    body = serializers.CharField(max_length=MAX_TEXT, trim_whitespace=False)


class SkillUpdateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False)
    body = serializers.CharField(max_length=MAX_TEXT, required=False, trim_whitespace=False)
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class SkillUpdatedSerializer(serializers.Serializer):
    skill = SkillSerializer()
    proposals = VersionSerializer(many=True, help_text="One proposal per agent that carries the skill.")


class SkillViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/skills`: shared skills. Agents carry them by value: editing one
    proposes the new text to every agent that carries it."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "created_at")
    serializer_class = SkillSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Skill, actor=self.actor, workspace=self.workspace)

    def get_skill(self) -> Skill:
        return workspace_row_get(
            Skill, actor=self.actor, workspace=self.workspace, noun="skill", key=self.kwargs["key"]
        )

    @extend_schema(request=SkillCreateSerializer, responses={201: SkillSerializer})
    def create(self, request: Request) -> Response:
        serializer = SkillCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        skill = skill_create(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        headers = {"Location": reverse("v1:skill-detail", args=[skill.key])}
        return Response(SkillSerializer(skill).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(SkillSerializer(self.get_skill()).data)

    @extend_schema(request=SkillUpdateSerializer, responses=SkillUpdatedSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Edit the shared skill; each agent carrying it gets a proposal."""
        serializer = SkillUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        proposals = skill_update(skill=self.get_skill(), actor=self.actor, **serializer.validated_data)
        data = {
            "skill": SkillSerializer(self.get_skill()).data,
            "proposals": VersionSerializer(proposals, many=True).data,
        }
        return Response(data)


class CredentialSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    secret = serializers.SerializerMethodField(help_text='Always "set": secrets are write-only.')
    fingerprint = serializers.CharField(help_text="A short hash of the secret, to tell two apart.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field({"type": "string", "enum": ["set"]})
    def get_secret(self, credential: Credential) -> str:
        return "set"


class CredentialCreateSerializer(serializers.Serializer):
    key = KeyField()
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    secret = serializers.CharField(max_length=10_000, write_only=True, style={"input_type": "password"})


class CredentialUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    secret = serializers.CharField(max_length=10_000, required=False, write_only=True)


class CredentialViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/credentials`: the vault. Secrets go in and never come out (admins only)."""

    lookup_field = "key"
    lookup_value_regex = KEY_REGEX
    ordering = "key"
    ordering_fields = ("key", "created_at")
    serializer_class = CredentialSerializer

    def get_queryset(self) -> object:
        return workspace_rows(Credential, actor=self.actor, workspace=self.workspace)

    def get_credential(self) -> Credential:
        return workspace_row_get(
            Credential, actor=self.actor, workspace=self.workspace, noun="credential", key=self.kwargs["key"]
        )

    @extend_schema(request=CredentialCreateSerializer, responses={201: CredentialSerializer})
    def create(self, request: Request) -> Response:
        serializer = CredentialCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        credential = credential_create(workspace=self.workspace, actor=self.actor, **serializer.validated_data)
        headers = {"Location": reverse("v1:credential-detail", args=[credential.key])}
        return Response(CredentialSerializer(credential).data, status=status.HTTP_201_CREATED, headers=headers)

    def retrieve(self, request: Request, key: str) -> Response:
        return Response(CredentialSerializer(self.get_credential()).data)

    @extend_schema(request=CredentialUpdateSerializer, responses=CredentialSerializer)
    def partial_update(self, request: Request, key: str) -> Response:
        """Rename, or replace the secret (the old one is gone for good)."""
        serializer = CredentialUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        credential = credential_update(
            credential=self.get_credential(), actor=self.actor, name=data.get("name"), secret=data.get("secret", "")
        )
        return Response(CredentialSerializer(credential).data)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, key: str) -> Response:
        """Delete an unused credential (refused while presets use it)."""
        credential_delete(credential=self.get_credential(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- turns, debug logs ----------------------------------------------------------------
class DebugLogSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    turn = serializers.IntegerField(source="turn_id")
    agent = serializers.CharField(source="agent_key")
    sequence = serializers.IntegerField()
    provider_name = serializers.CharField()
    model = serializers.CharField()
    system_prompt = serializers.CharField(allow_blank=True)
    messages = serializers.ListField(child=JsonObjectField())
    tools_offered = serializers.ListField(child=serializers.JSONField())
    parameters = JsonObjectField()
    response = JsonObjectField()
    tool_calls = serializers.ListField(child=JsonObjectField())
    finish_reason = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6)
    latency_ms = serializers.IntegerField()
    prefix_hash = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class AgentTurnViewSet(mixins.ListModelMixin, AdminViewSet):
    """`/v1/admin/turns`: agent turns, newest first (redacted as stored)."""

    lookup_value_regex = ID_REGEX
    ordering = "-pk"
    serializer_class = TurnSerializer

    def get_queryset(self) -> object:
        return workspace_rows(AgentTurn, actor=self.actor, workspace=self.workspace).prefetch_related("debug_logs")

    def retrieve(self, request: Request, pk: str) -> Response:
        turn = workspace_row_get(AgentTurn, actor=self.actor, workspace=self.workspace, noun="turn", pk=pk)
        return Response(TurnSerializer(turn).data)


class DebugLogViewSet(AdminViewSet):
    """`/v1/admin/debug-logs/{id}`: one model call as sent and answered, secrets redacted."""

    lookup_value_regex = ID_REGEX
    serializer_class = DebugLogSerializer

    def retrieve(self, request: Request, pk: str) -> Response:
        log = workspace_row_get(DebugLog, actor=self.actor, workspace=self.workspace, noun="debug log", pk=pk)
        return Response(DebugLogSerializer(log).data)
