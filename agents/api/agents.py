"""`/v1/admin/agents`: the workspace's agents, their runtime policy, clones and test turns."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.base import (
    KEY_REGEX,
    MAX_TEXT,
    RUNTIME_POLICY_SCHEMA,
    ForceSerializer,
    KeyField,
    RuntimePolicyField,
    with_etag,
)
from agents.api.profile import (
    AgentSkillSerializer,
    ProfileSerializer,
    ProfileUpdateSerializer,
    SectionSerializer,
    profile_changes,
    profile_of,
)
from agents.api.turns import TurnSerializer
from agents.api.versions import (
    PROPOSAL_QUERY,
    PROPOSAL_RESPONSES,
    ProposalInSerializer,
    ProposalQuerySerializer,
    VersionSerializer,
    proposal_args,
    proposal_response,
)
from agents.models import Preset
from agents.runtime import agent_run_test
from agents.runtime.tools import REGISTRY
from agents.selectors import agent_get_by_key, agent_list, agent_version_get, workspace_rows
from agents.services import agent_change, agent_clone, agent_create, agent_delete, edits, prompt_version_propose
from aihummer.api import AdminViewSet, InputSerializer, if_match_version, outside_transaction
from aihummer.service_checks import require_live


class AgentSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    preset = serializers.CharField(source="preset.key", allow_null=True, default=None)
    is_active = serializers.BooleanField()
    is_builtin = serializers.BooleanField()
    live_version = serializers.IntegerField(
        source="live_number", allow_null=True, help_text="Null while version 1 waits for review."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AgentDetailSerializer(AgentSerializer):
    profile = serializers.SerializerMethodField()
    sections = serializers.SerializerMethodField()
    skills = serializers.SerializerMethodField()
    runtime_policy = serializers.SerializerMethodField()
    allowed_tool_names = serializers.SerializerMethodField()

    # What the live version tells the agent; while version 1 waits for review nothing
    # is live: profile and policy are null, the lists empty.
    @extend_schema_field(ProfileSerializer(allow_null=True))
    def get_profile(self, agent: object) -> dict | None:
        return profile_of(agent.live_snapshot) if agent.live_snapshot else None

    @extend_schema_field(SectionSerializer(many=True))
    def get_sections(self, agent: object) -> list[dict]:
        return agent.live_snapshot["sections"] if agent.live_snapshot else []

    @extend_schema_field(AgentSkillSerializer(many=True))
    def get_skills(self, agent: object) -> list[dict]:
        return agent.live_snapshot["skills"] if agent.live_snapshot else []

    @extend_schema_field({"type": "object", "additionalProperties": True, "nullable": True})
    def get_runtime_policy(self, agent: object) -> dict | None:
        return agent.live_snapshot["runtime_policy"] if agent.live_snapshot else None

    @extend_schema_field({"type": "array", "items": {"type": "string"}})
    def get_allowed_tool_names(self, agent: object) -> list[str]:
        return agent.live_snapshot["allowed_tool_names"] if agent.live_snapshot else []


class AgentCreateSerializer(InputSerializer):
    key = KeyField()
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    preset = KeyField(required=False, allow_null=True, default=None, help_text="Empty: the workspace's default.")
    profile = ProfileSerializer(required=False)
    sections = SectionSerializer(many=True, required=False)
    skills = AgentSkillSerializer(many=True, required=False)
    runtime_policy = RuntimePolicyField(required=False, help_text="Omitted or `{}`: the defaults.")
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


# What PATCH proposes rather than writes: parts of what the agent is told.
PROPOSED_FIELDS = ("runtime_policy", "allowed_tool_names", "preset")


class AgentUpdateSerializer(ProposalInSerializer):
    any_of_required = ("name", "description", "preset", "is_active", "runtime_policy", "allowed_tool_names")

    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, allow_blank=True)
    preset = KeyField(
        required=False,
        allow_null=True,
        help_text="Another preset (null: the workspace's default), proposed like the policy: which model answers "
        "is part of a version, a change in the power tier.",
    )
    is_active = serializers.BooleanField(required=False)
    runtime_policy = RuntimePolicyField(
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


class CloneSerializer(InputSerializer):
    key = KeyField()
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=MAX_TEXT, required=False, default="", allow_blank=True)
    version = serializers.IntegerField(
        min_value=1, max_value=10**9, required=False, help_text="The version to clone; default: live."
    )


class TestInSerializer(InputSerializer):
    message = serializers.CharField(max_length=MAX_TEXT)
    version = serializers.IntegerField(min_value=1, max_value=10**9, required=False, help_text="Default: live.")


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
        return with_etag(Response(AgentDetailSerializer(agent).data, status=code), agent)

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
            raise ValidationError({"preset": [f"Unknown preset '{key}'."]})
        return preset

    @extend_schema(responses=AgentDetailSerializer)
    def retrieve(self, request: Request, key: str) -> Response:
        """One agent with its live profile; `ETag` is its live version number."""
        return self._detail(self.get_agent(), reread=False)

    @extend_schema(request=AgentUpdateSerializer, responses={200: AgentUpdatedSerializer, 202: AgentUpdatedSerializer})
    def partial_update(self, request: Request, key: str) -> Response:
        """Name, description and enabled change at once (publish right);
        `runtime_policy`, `allowed_tool_names` and `preset` are proposed (202 while the
        proposal waits for review, with its `Location`)."""
        serializer = AgentUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        reason, mode = fields.pop("reason"), fields.pop("mode")
        changes = {key: fields.pop(key) for key in PROPOSED_FIELDS if key in fields}
        agent, version, _ = agent_change(
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
        response = with_etag(Response(data), agent)
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
        agent_delete(
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
            return with_etag(Response(ProfileSerializer(profile_of(require_live(agent).snapshot)).data), agent)
        serializer = ProfileUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        changes = profile_changes(serializer.validated_data)
        version = prompt_version_propose(
            agent=agent, actor=self.actor, changes=changes, **proposal_args(serializer, request)
        )
        return proposal_response(version)

    @extend_schema(methods=["GET"], responses=OpenApiTypes.OBJECT)
    @extend_schema(
        methods=["PUT"],
        request={"application/json": RUNTIME_POLICY_SCHEMA},
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
            return with_etag(Response(require_live(agent).snapshot["runtime_policy"]), agent)
        query = ProposalQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        policy = request.data  # parsed (and its text checked) before the policy is
        try:
            policy = RuntimePolicyField().run_validation(policy)
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({"runtime_policy": exc.detail}) from None
        edit = edits.runtime_policy_replace(policy=policy)
        version = prompt_version_propose(agent=agent, actor=self.actor, changes=edit, **proposal_args(query, request))
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
        version = require_live(agent) if number is None else agent_version_get(agent=agent, number=number)
        clone = agent_clone(
            version=version, actor=self.actor, key=data["key"], name=data["name"], description=data["description"]
        )
        response = self._detail(clone, status.HTTP_201_CREATED)
        response["Location"] = reverse("v1:agent-detail", args=[clone.key])
        return response

    @extend_schema(request=TestInSerializer, responses=TurnSerializer)
    @action(detail=True, methods=["post"])
    @outside_transaction
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
